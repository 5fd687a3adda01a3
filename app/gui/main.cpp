// forja: the desktop window. `forja [model-dir]` opens the window with the model folder, or with the built-in
// toy demo model when none is given; `forja --demo` also fine-tunes the demo model on the CPU and opens the
// chat.
#include <QApplication>
#include <QCommandLineParser>
#include <QDir>

#include "app_paths.h"
#include "jobs/job.h"
#include "main_window.h"
#include "ui_init.h"

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
  parser.process(app);

  forja::ui::MainWindow window;
  window.show();
  if (parser.isSet(demo))
    window.start_demo();
  else if (!parser.positionalArguments().isEmpty())
    window.open_model(QDir(parser.positionalArguments().first()).absolutePath());
  else if (!forja::ui::demo_dir().isEmpty())
    window.open_model(forja::ui::demo_dir() + QStringLiteral("/model"));
  const int rc = app.exec();
  // A job still reading from disk holds no user data; give it a moment, then leave anyway.
  forja::ui::Job::cancel_all_and_wait(2000);
  return rc;
}
