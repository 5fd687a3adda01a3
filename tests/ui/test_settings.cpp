// The Settings dialog's choices reaching what they govern (the theme of every widget and plot, the folder of
// new runs, the Hugging Face cache the engine reads, the language of the next start), the menu that opens it,
// and the single-instance handover a second `forja` makes.
#include <QAction>
#include <QApplication>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QDir>
#include <QFile>
#include <QLineEdit>
#include <QLocalServer>
#include <QPushButton>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <thread>
#include <utility>

#include "app_paths.h"
#include "main_window.h"
#include "plot.h"
#include "settings.h"
#include "settings_dialog.h"
#include "single_instance.h"
#include "theme.h"
#include "ui_init.h"
#include "ui_test_support.h"

using forja::ui::MainWindow;

namespace {
// A later instance's handshake with `first`, run on a thread of its own (as another process would) while the
// test's event loop lets the first answer: whether the later one was told to leave, and what the first heard.
std::pair<bool, QString> hand_over_to(forja::ui::SingleInstance& first, const QString& dir) {
  QSignalSpy activated(&first, &forja::ui::SingleInstance::activated);
  bool leaves = false;
  std::thread later([&] {
    forja::ui::SingleInstance s(first.name());
    leaves = s.hand_over_or_listen(dir);
  });
  const bool heard = QTest::qWaitFor([&] { return activated.count() == 1; }, 15000);
  later.join();
  return {leaves && heard, heard ? activated.at(0).at(0).toString() : QString()};
}
}  // namespace

class TestSettings : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() {
    forja::test::init_ui_test_environment("test_settings");
    QVERIFY(tmp_.isValid());
  }

  void init() {
    window_ = new MainWindow({tmp_.filePath(QStringLiteral("journal.db"))});
    window_->show();
  }

  void cleanup() {
    forja::test::settle_journal(window_);
    delete window_;
    window_ = nullptr;
  }

  // The menu entry opens the dialog; its OK saves.
  void menuOpensTheDialog() {
    auto* action = window_->findChild<QAction*>(QStringLiteral("actionSettings"));
    QVERIFY(action);
    QVERIFY(!action->shortcut().isEmpty());
    action->trigger();
    QDialog* dialog = nullptr;
    QTRY_VERIFY((dialog = window_->findChild<QDialog*>(QStringLiteral("settingsDialog"))) &&
                dialog->isVisible());
    auto* language = dialog->findChild<QComboBox*>(QStringLiteral("language"));
    language->setCurrentIndex(language->findData(QStringLiteral("pt_BR")));
    QMetaObject::invokeMethod(
        dialog, [dialog] { dialog->findChild<QDialogButtonBox*>()->button(QDialogButtonBox::Ok)->click(); });
    QTRY_VERIFY(!dialog->isVisible());
    QCOMPARE(forja::ui::language_setting(), QStringLiteral("pt_BR"));
    QCOMPARE(forja::ui::ui_locale().name(), QStringLiteral("pt_BR"));
    forja::ui::set_language_setting(QString());
  }

  // Dark reaches every widget through the palette and the plots through their restyling; System gives back
  // the desktop's own look.
  void darkThemeReachesWidgetsAndPlots() {
    const QPalette before = QApplication::palette();
    QVERIFY(!forja::ui::is_dark(before));
    forja::ui::SettingsDialog dialog(window_->context(), window_);
    auto* theme = dialog.findChild<QComboBox*>(QStringLiteral("theme"));
    theme->setCurrentIndex(theme->findData(static_cast<int>(forja::ui::Theme::Dark)));
    dialog.save();
    QCOMPARE(forja::ui::theme_setting(), forja::ui::Theme::Dark);
    QCoreApplication::processEvents();
    QVERIFY(forja::ui::is_dark(window_->palette()));
    const auto plots = window_->findChildren<QCustomPlot*>();
    QVERIFY(!plots.isEmpty());
    for (QCustomPlot* plot : plots)
      QTRY_VERIFY2(plot->xAxis->tickLabelColor().lightness() > 128, qPrintable(plot->objectName()));
    theme->setCurrentIndex(theme->findData(static_cast<int>(forja::ui::Theme::System)));
    dialog.save();
    QCoreApplication::processEvents();
    QCOMPARE(QApplication::palette().color(QPalette::Window), before.color(QPalette::Window));
    for (QCustomPlot* plot : plots) QVERIFY(plot->xAxis->tickLabelColor().lightness() < 128);
  }

  // A chosen runs folder is where the next run goes; clearing it gives the default back.
  void runsFolderIsWhereNewRunsGo() {
    const QString xdg = forja::ui::xdg_runs_dir();
    QCOMPARE(forja::ui::default_runs_dir(), xdg);
    forja::ui::SettingsDialog dialog(window_->context(), window_);
    auto* runs = dialog.findChild<QLineEdit*>(QStringLiteral("runsDir"));
    QCOMPARE(runs->placeholderText(), xdg);
    runs->setText(tmp_.filePath(QStringLiteral("my-runs")));
    dialog.save();
    QCOMPARE(forja::ui::default_runs_dir(), tmp_.filePath(QStringLiteral("my-runs")));
    runs->clear();
    dialog.save();
    QCOMPARE(forja::ui::default_runs_dir(), xdg);
  }

  // The models folder becomes HF_HUB_CACHE for the engine and the workers at once; cleared, the variable is
  // what it was when the process started.
  void modelsFolderIsTheHubCache() {
    const QByteArray started = qgetenv("HF_HUB_CACHE");
    forja::ui::SettingsDialog dialog(window_->context(), window_);
    auto* cache = dialog.findChild<QLineEdit*>(QStringLiteral("hubCache"));
    cache->setText(tmp_.filePath(QStringLiteral("hub")));
    dialog.save();
    QCOMPARE(qgetenv("HF_HUB_CACHE"), tmp_.filePath(QStringLiteral("hub")).toUtf8());
    QCOMPARE(forja::ui::hub_cache_setting(), tmp_.filePath(QStringLiteral("hub")));
    cache->clear();
    dialog.save();
    QCOMPARE(qgetenv("HF_HUB_CACHE"), started);
  }

  // A second instance hands its folder to the first and is told to leave; with no first one, it listens.
  void secondInstanceHandsOver() {
    const QString name = QStringLiteral("forja-test-%1").arg(QCoreApplication::applicationPid());
    forja::ui::SingleInstance first(name);
    QVERIFY(!first.hand_over_or_listen(QString()));
    const auto [leaves, dir] = hand_over_to(first, QStringLiteral("/models/qwen"));
    QVERIFY(leaves);
    QCOMPARE(dir, QStringLiteral("/models/qwen"));
  }

  // A socket left behind by a crashed instance does not stop the next one from starting.
  void staleSocketIsReplaced() {
    const QString name = QStringLiteral("forja-test-stale-%1").arg(QCoreApplication::applicationPid());
    // A socket file nobody listens on, as a killed process leaves it (QLocalServer keeps its sockets in the
    // temporary folder).
    const QByteArray path = QFile::encodeName(QDir::tempPath() + u'/' + name);
    QFile::remove(QString::fromLocal8Bit(path));
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    QVERIFY(fd >= 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, path.constData(), std::min<size_t>(path.size(), sizeof(addr.sun_path) - 1));
    QVERIFY(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
    ::close(fd);
    QVERIFY(QFile::exists(QString::fromLocal8Bit(path)));
    forja::ui::SingleInstance next(name);
    QVERIFY(!next.hand_over_or_listen(QString()));
    QVERIFY(hand_over_to(next, QString()).first);
  }

 private:
  QTemporaryDir tmp_;
  MainWindow* window_ = nullptr;
};

QTEST_MAIN(TestSettings)
#include "test_settings.moc"
