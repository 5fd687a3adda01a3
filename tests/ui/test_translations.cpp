// The window's translations: lupdate, run here on the sources, finds no string the .ts files lack (nor do
// they keep one the code no longer has); every Brazilian Portuguese string is finished, with the placeholders
// of its English source and both plural forms; the English file gives the plural forms of every %n string;
// and the translators compiled into the window speak them, in a real window.
#include <QDir>
#include <QFile>
#include <QListWidget>
#include <QMap>
#include <QProcess>
#include <QRegularExpression>
#include <QSet>
#include <QTemporaryDir>
#include <QTest>
#include <QTranslator>
#include <QXmlStreamReader>

#include "main_window.h"
#include "ui_init.h"
#include "ui_test_support.h"

namespace {

struct Message {
  QString context, source, comment;
  bool numerus = false;
  bool unfinished = false;
  QStringList translations;  // one, or the plural forms
  QString key() const { return context + QLatin1Char('\x1f') + source + QLatin1Char('\x1f') + comment; }
};

QList<Message> read_ts(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) qFatal("cannot read %s", qPrintable(path));
  QXmlStreamReader xml(&f);
  QList<Message> out;
  QString context;
  Message m;
  while (!xml.atEnd()) {
    xml.readNext();
    if (!xml.isStartElement()) continue;
    const auto name = xml.name();
    if (name == QLatin1String("name")) {
      context = xml.readElementText();
    } else if (name == QLatin1String("message")) {
      m = Message{};
      m.context = context;
      m.numerus = xml.attributes().value(QLatin1String("numerus")) == QLatin1String("yes");
    } else if (name == QLatin1String("source")) {
      m.source = xml.readElementText();
    } else if (name == QLatin1String("comment")) {
      m.comment = xml.readElementText();
    } else if (name == QLatin1String("translation")) {
      const auto type = xml.attributes().value(QLatin1String("type"));
      m.unfinished = type == QLatin1String("unfinished") || type == QLatin1String("vanished") ||
                     type == QLatin1String("obsolete");
      if (!m.numerus)
        m.translations << xml.readElementText();
      else {
        while (xml.readNextStartElement()) m.translations << xml.readElementText();
      }
      out << m;
    }
  }
  if (xml.hasError()) qFatal("%s: %s", qPrintable(path), qPrintable(xml.errorString()));
  return out;
}

// The placeholders a string uses (%1 .. %99, %n), as a sorted list.
QStringList placeholders(const QString& s) {
  static const QRegularExpression re(QStringLiteral("%(\\d{1,2}|n)"));
  QStringList out;
  for (auto it = re.globalMatch(s); it.hasNext();) out << it.next().captured(0);
  out.sort();
  out.removeDuplicates();
  return out;
}

QString ts_path(const char* lang) {
  return QStringLiteral(FORJA_SOURCE_DIR "/resources/translations/forja_%1.ts").arg(QLatin1String(lang));
}

}  // namespace

class TestTranslations : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() {
    forja::test::init_ui_test_environment("test_translations");
    // What lupdate finds in the sources today, in a file of the test's own.
    QVERIFY(tmp_.isValid());
    const QString fresh = tmp_.filePath(QStringLiteral("fresh.ts"));
    QProcess lupdate;
    lupdate.setWorkingDirectory(QStringLiteral(FORJA_SOURCE_DIR));
    lupdate.start(QStringLiteral(FORJA_LUPDATE),
                  {QStringLiteral("-no-obsolete"), QStringLiteral("-locations"), QStringLiteral("none"),
                   QStringLiteral("ui"), QStringLiteral("app/gui/main.cpp"),
                   QStringLiteral("core/env/advice.cpp"), QStringLiteral("-ts"), fresh});
    QVERIFY2(lupdate.waitForFinished(120000), "lupdate did not finish");
    QVERIFY2(lupdate.exitCode() == 0, lupdate.readAllStandardError().constData());
    fresh_ = read_ts(fresh);
    QVERIFY2(fresh_.size() > 300, "lupdate found too few strings: is it reading the sources?");
  }

  // A tr() string the .ts file lacks would show in English in a Portuguese window; one the code no longer has
  // is dead weight a translator would still work on. CONTRIBUTING.md has the lupdate commands that refresh
  // the files.
  void tsFilesHoldExactlyTheStringsOfTheCode() {
    QSet<QString> code;
    QSet<QString> plural_code;
    for (const Message& m : fresh_) {
      code << m.key();
      if (m.numerus) plural_code << m.key();
    }
    for (const auto& [lang, wanted] : {std::pair{"pt_BR", code}, std::pair{"en", plural_code}}) {
      QSet<QString> file;
      for (const Message& m : read_ts(ts_path(lang))) file << m.key();
      QStringList missing, stale;
      for (const QString& k : wanted)
        if (!file.contains(k)) missing << QString(k).replace(QLatin1Char('\x1f'), QLatin1String(" | "));
      for (const QString& k : file)
        if (!wanted.contains(k)) stale << QString(k).replace(QLatin1Char('\x1f'), QLatin1String(" | "));
      missing.sort();
      stale.sort();
      QVERIFY2(missing.isEmpty(),
               qPrintable(QStringLiteral("forja_%1.ts lacks:\n  ").arg(QLatin1String(lang)) +
                          missing.join(QLatin1String("\n  "))));
      QVERIFY2(
          stale.isEmpty(),
          qPrintable(
              QStringLiteral("forja_%1.ts has strings the code no longer has:\n  ").arg(QLatin1String(lang)) +
              stale.join(QLatin1String("\n  "))));
    }
  }

  void everyStringIsFinishedWithItsPlaceholders() {
    for (const char* lang : {"pt_BR", "en"}) {
      QStringList bad;
      for (const Message& m : read_ts(ts_path(lang))) {
        const QString where = m.context + QLatin1String(": ") + m.source;
        if (m.unfinished) bad << where + QLatin1String(" (unfinished)");
        if (m.translations.size() != (m.numerus ? 2 : 1))
          bad << where + QStringLiteral(" (%1 forms)").arg(m.translations.size());
        for (const QString& t : m.translations) {
          if (t.trimmed().isEmpty())
            bad << where + QLatin1String(" (empty)");
          else if (placeholders(t) != placeholders(m.source))
            bad << where + QLatin1String(" (placeholders: ") + placeholders(t).join(QLatin1Char(' ')) + u')';
        }
      }
      QVERIFY2(bad.isEmpty(),
               qPrintable(QLatin1String(lang) + QLatin1String(":\n  ") + bad.join(QLatin1String("\n  "))));
    }
  }

  // The .qm files compiled into the window give what the .ts files say, plurals included.
  void compiledTranslatorsSpeak() {
    QTranslator pt;
    QVERIFY(pt.load(QStringLiteral(":/i18n/forja_pt_BR.qm")));
    const char* ctx = "forja::ui::RunsPane";
    const char* runs = "%n run(s) in the history";
    QString one, many;
    for (const Message& m : read_ts(ts_path("pt_BR")))
      if (m.context == QLatin1String(ctx) && m.source == QLatin1String(runs)) {
        one = m.translations.value(0);
        many = m.translations.value(1);
      }
    QVERIFY(!one.isEmpty() && one != many);
    QCOMPARE(pt.translate(ctx, runs, nullptr, 1), one);
    QCOMPARE(pt.translate(ctx, runs, nullptr, 5), many);

    QTranslator en;
    QVERIFY(en.load(QStringLiteral(":/i18n/forja_en.qm")));
    QCOMPARE(en.translate(ctx, runs, nullptr, 1), QStringLiteral("%n run in the history"));
    QCOMPARE(en.translate(ctx, runs, nullptr, 3), QStringLiteral("%n runs in the history"));
  }

  // A window built after the language is set speaks it: the sidebar names the panes in Portuguese, and
  // numbers take the Brazilian decimal comma.
  void windowInBrazilianPortuguese() {
    QVERIFY(forja::ui::install_translations(QLocale(QStringLiteral("pt_BR"))));
    QMap<QString, QString> titles;
    for (const Message& m : read_ts(ts_path("pt_BR")))
      if (m.context.endsWith(QLatin1String("Pane")) && !m.numerus)
        titles[m.context + u'|' + m.source] = m.translations[0];
    {
      forja::ui::MainWindow window;
      auto* sidebar = window.findChild<QListWidget*>();
      QVERIFY(sidebar);
      QCOMPARE(sidebar->item(0)->text(), titles.value(QStringLiteral("forja::ui::ModelPane|Model")));
      QStringList shown;
      for (int i = 0; i < sidebar->count(); ++i) shown << sidebar->item(i)->text();
      QVERIFY2(shown.contains(titles.value(QStringLiteral("forja::ui::TrainPane|Train"))),
               qPrintable(shown.join(u',')));
      QVERIFY(!shown.contains(QStringLiteral("Train")));
      QCOMPARE(QLocale().toString(1.5, 'f', 1), QStringLiteral("1,5"));
      forja::test::settle_journal(&window);
    }
    forja::ui::install_translations(QLocale(QLocale::English, QLocale::UnitedStates));
    QCOMPARE(QCoreApplication::translate("forja::ui::RunsPane", "%n run(s) in the history", nullptr, 1),
             QStringLiteral("1 run in the history"));
  }

  // The Settings choice wins over the system's language, and clearing it goes back to the system's.
  void settingChoosesTheLanguage() {
    forja::ui::set_language_setting(QStringLiteral("pt_BR"));
    QCOMPARE(forja::ui::ui_locale().name(), QStringLiteral("pt_BR"));
    forja::ui::set_language_setting(QString());
    QCOMPARE(forja::ui::ui_locale(), QLocale::system());
    QStringList codes;
    for (const auto& l : forja::ui::available_languages()) codes << l.code;
    QCOMPARE(codes, (QStringList{QStringLiteral("en"), QStringLiteral("pt_BR")}));
  }

 private:
  QTemporaryDir tmp_;
  QList<Message> fresh_;
};

QTEST_MAIN(TestTranslations)
#include "test_translations.moc"
