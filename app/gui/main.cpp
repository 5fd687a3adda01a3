// forja: the desktop window. `forja [model-dir]` opens the window, and the model folder when one is given.
#include <QApplication>
#include <QCommandLineParser>
#include <QDir>

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
  parser.process(app);

  forja::ui::MainWindow window;
  window.show();
  if (!parser.positionalArguments().isEmpty())
    window.open_model(QDir(parser.positionalArguments().first()).absolutePath());
  const int rc = app.exec();
  // A job still reading from disk holds no user data; give it a moment, then leave anyway.
  forja::ui::Job::cancel_all_and_wait(2000);
  return rc;
}
