// Every pane fits: the window at 1280 × 720 and 1920 × 1080 (logical pixels; CTest runs this suite again with
// QT_SCALE_FACTOR=2, where they are 2560 × 1440 and 3840 × 2160 device pixels), in English and in Brazilian
// Portuguese, with the demo model open. Walking each pane's widget tree, it fails when a visible widget is
// cut by its parent, when a label, button, check box or combo box is narrower than its text needs (elided),
// or when a scroll area scrolls sideways. Scrolling down is allowed; lists and text views scroll by nature.
#include <QAbstractButton>
#include <QAbstractItemView>
#include <QAbstractScrollArea>
#include <QComboBox>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPlainTextEdit>
#include <QScrollArea>
#include <QScrollBar>
#include <QSplitter>
#include <QStackedWidget>
#include <QTabBar>
#include <QTest>
#include <QTextEdit>

#include "app_paths.h"
#include "main_window.h"
#include "panes/data_pane.h"
#include "panes/model_pane.h"
#include "ui_init.h"
#include "ui_test_support.h"

using forja::ui::MainWindow;
using forja::ui::PaneId;

namespace {

QString path_of(const QWidget* w, const QWidget* root) {
  QStringList parts;
  for (const QWidget* p = w; p && p != root; p = p->parentWidget()) {
    QString part = QString::fromLatin1(p->metaObject()->className());
    if (!p->objectName().isEmpty()) part += u'#' + p->objectName();
    if (const auto* l = qobject_cast<const QLabel*>(p); l && !l->text().isEmpty())
      part += QStringLiteral(" \"%1\"").arg(l->text().left(40));
    if (const auto* b = qobject_cast<const QAbstractButton*>(p); b && !b->text().isEmpty())
      part += QStringLiteral(" \"%1\"").arg(b->text().left(40));
    parts.prepend(part);
  }
  return parts.join(QLatin1String(" > "));
}

// Inside an item view or a text view, content scrolls by design; their own children are not walked.
bool scrolls_by_nature(const QWidget* w) {
  return qobject_cast<const QAbstractItemView*>(w) || qobject_cast<const QPlainTextEdit*>(w) ||
         qobject_cast<const QTextEdit*>(w);
}

// The widget's text needs more width than it has.
bool text_cut(const QWidget* w) {
  if (const auto* l = qobject_cast<const QLabel*>(w)) {
    if (l->wordWrap() || l->text().isEmpty() || l->pixmap().isNull() == false) return false;
    return l->sizeHint().width() > l->width() + 1;
  }
  if (const auto* b = qobject_cast<const QAbstractButton*>(w)) {
    if (b->text().isEmpty()) return false;
    return b->sizeHint().width() > b->width() + 1;
  }
  if (const auto* c = qobject_cast<const QComboBox*>(w)) return c->minimumSizeHint().width() > c->width() + 1;
  return false;
}

void walk(const QWidget* w, const QWidget* root, QStringList& problems) {
  for (QObject* o : w->children()) {
    auto* child = qobject_cast<QWidget*>(o);
    if (!child || !child->isVisibleTo(root) || child->isWindow()) continue;
    // Cut by the parent: the child's rectangle reaches outside the parent's; a scroll area's content only
    // sideways (it may scroll down).
    const bool in_scroll_viewport =
        w->parentWidget() && qobject_cast<const QAbstractScrollArea*>(w->parentWidget()) &&
        static_cast<const QAbstractScrollArea*>(w->parentWidget())->viewport() == w;
    const QRect inside = child->geometry();
    const bool cut = in_scroll_viewport ? inside.left() < 0 || inside.right() > w->rect().right()
                                        : !w->rect().contains(inside);
    if (cut && child->width() > 0 && child->height() > 0)
      problems << QStringLiteral("cut by its parent (%1×%2 at %3,%4 in %5×%6): %7")
                      .arg(child->width())
                      .arg(child->height())
                      .arg(child->x())
                      .arg(child->y())
                      .arg(w->width())
                      .arg(w->height())
                      .arg(path_of(child, root));
    if (text_cut(child)) problems << QStringLiteral("text cut: %1").arg(path_of(child, root));
    if (const auto* area = qobject_cast<const QScrollArea*>(child);
        area && area->horizontalScrollBar()->isVisible())
      problems << QStringLiteral("scrolls sideways: %1").arg(path_of(child, root));
    if (!scrolls_by_nature(child)) walk(child, root, problems);
  }
}

}  // namespace

class TestLayouts : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() {
    forja::test::init_ui_test_environment("test_layouts");
    QVERIFY(tmp_.isValid());
    QVERIFY2(!forja::ui::demo_dir().isEmpty(), "the demo model is needed to fill the panes");
  }

  void everyPaneFits_data() {
    QTest::addColumn<QString>("lang");
    QTest::addColumn<QSize>("size");
    for (const char* lang : {"en", "pt_BR"})
      for (const QSize size : {QSize(1280, 720), QSize(1920, 1080)})
        QTest::addRow("%s %dx%d", lang, size.width(), size.height()) << QString::fromLatin1(lang) << size;
  }

  void everyPaneFits() {
    QFETCH(QString, lang);
    QFETCH(QSize, size);
    QVERIFY(forja::ui::install_translations(QLocale(lang)));
    QStringList problems;
    {
      MainWindow window({tmp_.filePath(QStringLiteral("journal.db"))});
      window.resize(size);
      window.show();
      QVERIFY(QTest::qWaitForWindowExposed(&window));
      window.open_model(forja::ui::demo_dir() + QStringLiteral("/model"));
      QTRY_VERIFY_WITH_TIMEOUT(window.model_pane()->model().has_value(), 30000);
      window.data_pane()->open(forja::ui::demo_dir() + QStringLiteral("/dataset.jsonl"));
      QTRY_VERIFY_WITH_TIMEOUT(!window.data_pane()->loading(), 60000);
      forja::test::settle_journal(&window);  // the Runs and Chat panes show what the journal holds
      QCoreApplication::processEvents();
      // No pane forces the window larger, also once it shows what it loads when first shown; if one does, say
      // which and what its parts ask for.
      auto check_size = [&] {
        if (window.size() == size) return true;
        QStringList wide;
        for (const PaneId id : forja::ui::kAllPanes) {
          forja::ui::Pane* pane = window.pane(id);
          QString parts;
          for (QWidget* c : pane->findChildren<QWidget*>())
            if (c->isVisibleTo(pane) && c->minimumSizeHint().width() > size.width() / 3)
              parts += QStringLiteral(" %1#%2:%3")
                           .arg(QString::fromLatin1(c->metaObject()->className()), c->objectName())
                           .arg(c->minimumSizeHint().width());
          wide << QStringLiteral("%1 needs %2 (%3)")
                      .arg(pane->title())
                      .arg(pane->minimumSizeHint().width())
                      .arg(parts);
        }
        problems
            << QStringLiteral("the window grew to %1×%2:\n    ").arg(window.width()).arg(window.height()) +
                   wide.join(QLatin1String("\n    "));
        return false;
      };
      QVERIFY2(check_size(), qPrintable(problems.join(u'\n')));
      for (const PaneId id : forja::ui::kAllPanes) {
        window.show_pane(id);
        QTest::qWait(50);
        forja::test::settle_journal(&window);
        QCoreApplication::processEvents();
        if (!check_size()) break;
        QStringList found;
        walk(window.pane(id), &window, found);
        for (const QString& p : found) problems << window.pane(id)->title() + QLatin1String(": ") + p;
      }
      forja::test::settle_journal(&window);
    }
    forja::ui::install_translations(QLocale(QLocale::English, QLocale::UnitedStates));
    QVERIFY2(problems.isEmpty(), qPrintable(QStringLiteral("%1 layout problem(s):\n  ").arg(problems.size()) +
                                            problems.join(QLatin1String("\n  "))));
  }

 private:
  QTemporaryDir tmp_;
};

QTEST_MAIN(TestLayouts)
#include "test_layouts.moc"
