// forja: the desktop window. `forja [model-dir]` opens the window with the model folder, or with the built-in
// toy demo model when none is given; `forja --demo` also fine-tunes the demo model on the CPU and opens the
// chat.
#include <QApplication>
#include <QCommandLineParser>
#include <QDir>
#include <QJsonObject>
#include <QPlainTextEdit>
#include <QTimer>

#include <cstdio>
#include <memory>

#include "app_paths.h"
#include "jobs/job.h"
#include "main_window.h"
#include "panes/chat_pane.h"
#include "panes/train_pane.h"
#include "single_instance.h"
#include "ui_init.h"

namespace {

// --exit-after-demo: the demo without a person, for checking an installation. Once the run has finished and
// the chat holds the model with the new adapter, one question is asked; the answer is printed and the window
// leaves. Any step that fails, or all of it taking more than ten minutes, ends it with status 1 and a reason.
void watch_demo(forja::ui::MainWindow& window) {
  auto fail = [](const QString& why) {
    std::fprintf(stderr, "error: %s\n", qPrintable(why));
    QCoreApplication::exit(1);
  };
  QTimer::singleShot(10 * 60 * 1000, qApp,
                     [fail] { fail(QStringLiteral("the demo did not finish within 10 minutes")); });
  auto* train = window.train_pane();
  auto* chat = window.chat_pane();
  QObject::connect(train, &forja::ui::TrainPane::run_failed, qApp, [fail](const QString& message) {
    fail(QStringLiteral("the demo run failed: ") + message);
  });
  // Asked once, after this run has finished: an adapter the chat held before is not the demo's.
  auto trained = std::make_shared<bool>(false);
  auto asked = std::make_shared<bool>(false);
  auto ask_when_ready = [chat, trained, asked] {
    if (!*trained || *asked || !chat->model_ready() || !chat->has_adapter()) return;
    *asked = true;
    std::printf("demo: trained; asking the chat\n");
    chat->findChild<QPlainTextEdit*>(QStringLiteral("chatInput"))
        ->setPlainText(QStringLiteral("What is CUDA?"));
    chat->send();
  };
  QObject::connect(train, &forja::ui::TrainPane::run_finished, qApp,
                   [fail, trained, ask_when_ready](const QJsonObject& r) {
                     const QString outcome = r.value(QStringLiteral("outcome")).toString();
                     if (outcome != QLatin1String("finished"))
                       return fail(QStringLiteral("the demo run ended as ") + outcome);
                     *trained = true;
                     ask_when_ready();
                   });
  QObject::connect(chat, &forja::ui::ChatPane::model_ready_changed, qApp, ask_when_ready);
  QObject::connect(chat, &forja::ui::ChatPane::adapter_ready, qApp, ask_when_ready);
  QObject::connect(chat, &forja::ui::ChatPane::answer_finished, qApp, [chat, fail] {
    const QString answer = chat->last_answer().trimmed();
    if (answer.isEmpty()) return fail(QStringLiteral("the chat gave an empty answer"));
    std::printf("demo: answer: %s\n", qPrintable(answer));
    QCoreApplication::exit(0);
  });
}

}  // namespace

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  forja::ui::initialize(app);

  QCommandLineParser parser;
  parser.setApplicationDescription(
      QCoreApplication::translate("main", "Fine-tune and chat with open language models on your own GPU."));
  parser.addHelpOption();
  parser.addVersionOption();
  parser.addPositionalArgument(QStringLiteral("model-dir"),
                               QCoreApplication::translate("main", "A Hugging Face model folder to open."),
                               QStringLiteral("[model-dir]"));
  QCommandLineOption demo(
      QStringLiteral("demo"),
      QCoreApplication::translate("main", "Fine-tune the built-in toy model, then chat with it."));
  parser.addOption(demo);
  QCommandLineOption exit_after_demo(
      QStringLiteral("exit-after-demo"),
      QCoreApplication::translate(
          "main",
          "Run the demo unattended: fine-tune, ask one question, print the answer and exit "
          "(status 1 when a step fails)."));
  parser.addOption(exit_after_demo);
  parser.process(app);

  // One window per user: a second `forja [model-dir]` hands the folder to the first and leaves. The demo runs
  // are sessions of their own.
  forja::ui::SingleInstance instance;
  const QString model_arg = parser.positionalArguments().isEmpty()
                                ? QString()
                                : QDir(parser.positionalArguments().first()).absolutePath();
  if (!parser.isSet(demo) && !parser.isSet(exit_after_demo) && instance.hand_over_or_listen(model_arg))
    return 0;

  forja::ui::MainWindow window;
  window.show();
  QObject::connect(&instance, &forja::ui::SingleInstance::activated, &window, [&window](const QString& dir) {
    window.setWindowState((window.windowState() & ~Qt::WindowMinimized) | Qt::WindowActive);
    window.raise();
    window.activateWindow();
    if (!dir.isEmpty()) window.open_model(dir);
  });
  if (parser.isSet(exit_after_demo)) {
    if (forja::ui::demo_dir().isEmpty()) {  // before start_demo, whose message box would wait for a click
      std::fprintf(stderr, "error: the demo files (share/forja/demo) are not installed with this forja\n");
      return 1;
    }
    watch_demo(window);
    if (!window.start_demo()) return 1;
  } else if (parser.isSet(demo))
    window.start_demo();
  else if (!model_arg.isEmpty())
    window.open_model(model_arg);
  else if (!forja::ui::demo_dir().isEmpty())
    window.open_model(forja::ui::demo_dir() + QStringLiteral("/model"));
  const int rc = app.exec();
  // A job still reading from disk holds no user data; give it a moment, then leave anyway.
  forja::ui::Job::cancel_all_and_wait(2000);
  return rc;
}
