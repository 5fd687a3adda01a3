// forja-screenshots: renders the README's screenshots from the real widgets, offscreen. Each pane is shown in
// the main window, driven into a state a user would see (a model open, the doctor's report ready, ...), and
// the whole window is grabbed to <out-dir>/<pane>.png. Run by `scripts/setup screenshots`
// (QT_QPA_PLATFORM=offscreen).
#include <QApplication>
#include <QCommandLineParser>
#include <QDeadlineTimer>
#include <QDir>
#include <QDoubleSpinBox>
#include <QElapsedTimer>
#include <QPixmap>
#include <QPlainTextEdit>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QThread>
#include <QTreeWidget>

#include <cstdio>
#include <functional>

#include "jobs/job.h"
#include "jobs/job_monitor.h"
#include "main_window.h"
#include "pane.h"
#include "panes/chat_pane.h"
#include "panes/data_pane.h"
#include "panes/doctor_pane.h"
#include "panes/model_pane.h"
#include "panes/runs_pane.h"
#include "panes/train_pane.h"
#include "ui_init.h"

namespace {

// Processes events until `done` holds or the timeout passes; false on timeout.
bool wait_until(const std::function<bool()>& done, int timeout_ms) {
  QDeadlineTimer deadline(timeout_ms);
  while (!done()) {
    if (deadline.hasExpired()) return false;
    QCoreApplication::processEvents(QEventLoop::AllEvents, 50);
    QThread::msleep(10);
  }
  return true;
}

void settle(int ms) {
  QElapsedTimer t;
  t.start();
  while (t.elapsed() < ms) QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
}

}  // namespace

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QCoreApplication::setApplicationName(QStringLiteral("forja-screenshots"));
  // Runs, adapters and settings go to the test locations (~/.qttest), never into the user's own Forja data.
  QStandardPaths::setTestModeEnabled(true);
  forja::ui::initialize(app);

  QCommandLineParser parser;
  parser.setApplicationDescription(QStringLiteral("Renders Forja's screenshots from the real widgets."));
  parser.addHelpOption();
  parser.addPositionalArgument(QStringLiteral("out-dir"), QStringLiteral("Where the PNG files go."));
  QCommandLineOption model_opt(QStringLiteral("model"), QStringLiteral("Model folder to open."),
                               QStringLiteral("dir"));
  QCommandLineOption journal_opt(QStringLiteral("journal"),
                                 QStringLiteral("Run journal to show (default: a new, empty one)."),
                                 QStringLiteral("path"));
  QCommandLineOption dataset_opt(QStringLiteral("dataset"), QStringLiteral("Dataset file for the Data pane."),
                                 QStringLiteral("file"));
  QCommandLineOption tokenizer_opt(
      QStringLiteral("tokenizer"),
      QStringLiteral("Folder whose tokenizer renders the dataset (default: the model)."),
      QStringLiteral("dir"));
  QCommandLineOption demo_opt(
      QStringLiteral("demo"),
      QStringLiteral(
          "Run \"Try the Demo\" first (the toy model fine-tuned on the CPU), then ask the chat a question, "
          "so that the Train, Runs and Chat panes show a real run."));
  parser.addOption(demo_opt);
  parser.addOption(dataset_opt);
  parser.addOption(tokenizer_opt);
  parser.addOption(model_opt);
  parser.addOption(journal_opt);
  QCommandLineOption lang_opt(QStringLiteral("lang"),
                              QStringLiteral("The window's language (en, pt_BR); other than English, the "
                                             "screenshots go to <out-dir>/<lang>."),
                              QStringLiteral("code"), QStringLiteral("en"));
  parser.addOption(lang_opt);
  parser.process(app);
  if (parser.positionalArguments().size() != 1) parser.showHelp(2);
  const QString lang = parser.value(lang_opt);
  if (!forja::ui::install_translations(QLocale(lang))) {
    std::fprintf(stderr, "error: Forja has no translation for '%s'\n", qPrintable(lang));
    return 2;
  }
  QString out_path = parser.positionalArguments().first();
  if (!lang.startsWith(QLatin1String("en"))) out_path += u'/' + lang;
  const QDir out(out_path);
  if (!QDir().mkpath(out.absolutePath())) {
    std::fprintf(stderr, "error: cannot create %s\n", qPrintable(out.absolutePath()));
    return 1;
  }

  QTemporaryDir tmp;
  forja::ui::MainWindow::Options options;
  options.journal_path =
      parser.isSet(journal_opt) ? parser.value(journal_opt) : tmp.filePath(QStringLiteral("journal.db"));
  forja::ui::MainWindow window(options);
  window.resize(1280, 720);  // the smaller of the sizes test_layouts checks every pane at
  window.show();

  if (parser.isSet(demo_opt)) {
    bool finished = false;
    QObject::connect(window.train_pane(), &forja::ui::TrainPane::run_finished, [&] { finished = true; });
    QObject::connect(window.train_pane(), &forja::ui::TrainPane::run_failed, [&] { finished = true; });
    if (!window.start_demo() || !wait_until([&] { return finished; }, 300000)) {
      std::fprintf(stderr, "error: the demo run did not finish within 5 minutes\n");
      return 1;
    }
    auto* chat = window.chat_pane();
    window.show_pane(forja::ui::PaneId::Chat);
    if (!wait_until([&] { return chat->model_ready() && chat->has_adapter(); }, 60000))
      std::fprintf(stderr, "warning: the chat did not load the demo model and adapter within 60 s\n");
    chat->findChild<QDoubleSpinBox*>(QStringLiteral("temperature"))->setValue(0);
    bool answered = false;
    QObject::connect(chat, &forja::ui::ChatPane::answer_finished, [&] { answered = true; });
    const bool portuguese = lang.startsWith(QLatin1String("pt"));
    const QStringList questions =
        portuguese ? QStringList{QStringLiteral("O que é CUDA?"), QStringLiteral("O que é LoRA?")}
                   : QStringList{QStringLiteral("What is CUDA?"), QStringLiteral("O que é CUDA?")};
    for (const QString& question : questions) {
      answered = false;
      chat->findChild<QPlainTextEdit*>(QStringLiteral("chatInput"))->setPlainText(question);
      chat->send();
      if (!wait_until([&] { return answered; }, 60000))
        std::fprintf(stderr, "warning: no answer within 60 s\n");
    }
  }

  int failures = 0;
  auto shoot = [&](forja::ui::PaneId id, const QString& name) {
    window.show_pane(id);
    settle(300);
    const QString file = out.filePath(name + QStringLiteral(".png"));
    if (!window.grab().save(file)) {
      std::fprintf(stderr, "error: could not write %s\n", qPrintable(file));
      ++failures;
      return;
    }
    std::printf("wrote %s\n", qPrintable(file));
  };

  for (const forja::ui::PaneId id : forja::ui::kAllPanes) {
    forja::ui::Pane* pane = window.pane(id);
    const QString name = pane->objectName().remove(QStringLiteral("Pane")).toLower();
    if (pane == window.model_pane() && parser.isSet(model_opt) && !parser.isSet(demo_opt)) {
      window.open_model(QDir(parser.value(model_opt)).absolutePath());
      if (!wait_until([&] { return !window.model_pane()->loading(); }, 30000))
        std::fprintf(stderr, "warning: the model did not open within 30 s\n");
    }
    if (pane == window.data_pane() && parser.isSet(dataset_opt) && !parser.isSet(demo_opt)) {
      if (parser.isSet(tokenizer_opt))
        window.data_pane()->set_model_dir(QDir(parser.value(tokenizer_opt)).absolutePath());
      window.data_pane()->open(QDir(parser.value(dataset_opt)).absolutePath());
      settle(200);
      if (!wait_until([&] { return !window.data_pane()->loading(); }, 60000))
        std::fprintf(stderr, "warning: the dataset was not read within 60 s\n");
    }
    if (pane == window.doctor_pane()) {
      window.show_pane(id);  // the first show starts the probe
      if (!wait_until([&] { return window.doctor_pane()->report() != nullptr; }, 60000))
        std::fprintf(stderr, "warning: the doctor's probe did not finish within 60 s\n");
    }
    if (pane == window.runs_pane()) {
      window.show_pane(id);
      settle(300);
      // The newest run selected: its loss curve and config show, as after a click.
      if (auto* list = pane->findChild<QTreeWidget*>(QStringLiteral("runList"));
          list && list->topLevelItemCount())
        list->setCurrentItem(list->topLevelItem(0));
    }
    shoot(id, name);
  }
  // A pane that needs more than the size asked for widens the window (every page of the sidebar's stack
  // counts): name the widgets that ask for the most, so that the screenshots never hide a layout that does
  // not fit.
  if (window.width() > 1280 || window.height() > 720) {
    std::fprintf(stderr, "warning: the window grew to %dx%d; the widest widgets:\n", window.width(),
                 window.height());
    for (QWidget* w : window.findChildren<QWidget*>(QString(), Qt::FindDirectChildrenOnly))
      std::fprintf(stderr, "  window part %s#%s needs %d\n", w->metaObject()->className(),
                   qPrintable(w->objectName()), w->minimumSizeHint().width());
    for (const forja::ui::PaneId id : forja::ui::kAllPanes) {
      forja::ui::Pane* pane = window.pane(id);
      std::fprintf(stderr, "  %s needs %d:", qPrintable(pane->title()), pane->minimumSizeHint().width());
      for (QWidget* w : pane->findChildren<QWidget*>())
        if (w->minimumSizeHint().width() > 300)
          std::fprintf(stderr, " %s#%s=%d", w->metaObject()->className(), qPrintable(w->objectName()),
                       w->minimumSizeHint().width());
      std::fprintf(stderr, "\n");
    }
  }
  forja::ui::Job::cancel_all_and_wait(5000);
  return failures == 0 ? 0 : 1;
}
