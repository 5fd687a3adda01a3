// Application-wide setup of the window.
#include "ui_init.h"

#include <QApplication>
#include <QIcon>
#include <QLocale>
#include <QTranslator>

namespace forja::resources {
void init();
}

namespace forja::ui {

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

  auto* translator = new QTranslator(&app);
  if (translator->load(QLocale(), QStringLiteral("forja"), QStringLiteral("_"), QStringLiteral(":/i18n")))
    QCoreApplication::installTranslator(translator);
  else
    delete translator;
}

}  // namespace forja::ui
