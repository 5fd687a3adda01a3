// Application-wide setup of the window.
#include "ui_init.h"

#include <QApplication>
#include <QIcon>
#include <QLibraryInfo>
#include <QPointer>
#include <QSettings>
#include <QTranslator>

#include "settings.h"

#include <memory>

namespace forja::resources {
void init();
}

namespace forja::ui {

namespace {
constexpr auto kLanguageKey = "ui/language";

// The translators installed now, replaced as a whole when the language changes.
QList<QPointer<QTranslator>>& installed() {
  static QList<QPointer<QTranslator>> list;
  return list;
}
}  // namespace

QList<Language> available_languages() {
  return {{QStringLiteral("en"), QStringLiteral("English")},
          {QStringLiteral("pt_BR"), QStringLiteral("Português (Brasil)")}};
}

QString language_setting() {
  return QSettings().value(QLatin1String(kLanguageKey)).toString();
}

void set_language_setting(const QString& code) {
  QSettings settings;
  if (code.isEmpty())
    settings.remove(QLatin1String(kLanguageKey));
  else
    settings.setValue(QLatin1String(kLanguageKey), code);
}

QLocale ui_locale() {
  const QString code = language_setting();
  return code.isEmpty() ? QLocale::system() : QLocale(code);
}

bool install_translations(const QLocale& locale) {
  for (const QPointer<QTranslator>& t : installed()) {
    if (!t) continue;
    QCoreApplication::removeTranslator(t);
    delete t.data();
  }
  installed().clear();
  QLocale::setDefault(locale);
  auto add = [](std::unique_ptr<QTranslator> t) {
    QCoreApplication::installTranslator(t.get());
    installed().append(t.release());
  };
  // English has a file too: it holds only the plural forms ("1 run", "2 runs") of the %n strings.
  auto own = std::make_unique<QTranslator>();
  const bool found =
      own->load(locale, QStringLiteral("forja"), QStringLiteral("_"), QStringLiteral(":/i18n"));
  if (found) add(std::move(own));
  // Qt's own words in standard dialogs and buttons (Cancel, Yes, No), where Qt's translations are installed.
  auto qt = std::make_unique<QTranslator>();
  if (locale.language() != QLocale::English && qt->load(locale, QStringLiteral("qtbase"), QStringLiteral("_"),
                                                        QLibraryInfo::path(QLibraryInfo::TranslationsPath)))
    add(std::move(qt));
  return found;
}

void initialize(QApplication& app) {
  forja::resources::init();
  if (QCoreApplication::organizationName().isEmpty())
    QCoreApplication::setOrganizationName(QStringLiteral("forja"));
  if (QCoreApplication::applicationName().isEmpty() ||
      QCoreApplication::applicationName() ==
          QCoreApplication::applicationFilePath().section(QLatin1Char('/'), -1))
    QCoreApplication::setApplicationName(QStringLiteral("forja"));
  QCoreApplication::setApplicationVersion(QStringLiteral(FORJA_VERSION));
  QGuiApplication::setDesktopFileName(QStringLiteral("io.github.forja.Forja"));
  QApplication::setWindowIcon(QIcon(QStringLiteral(":/icons/forja.svg")));
  Q_UNUSED(app);
  install_translations(ui_locale());
  apply_environment_settings();
  if (const Theme theme = theme_setting(); theme != Theme::System) apply_theme(theme);
}

}  // namespace forja::ui
