// XDG paths of the window's files.
#include "app_paths.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QStandardPaths>
#include <QStringList>

#include "settings.h"

namespace forja::ui {

namespace {
// GenericDataLocation + "forja", not AppDataLocation (which adds the organization too): the same folder that
// forja::default_journal_path() computes for the CLI from $XDG_DATA_HOME.
QDir data_dir() {
  return QDir(QStandardPaths::writableLocation(QStandardPaths::GenericDataLocation) +
              QStringLiteral("/forja"));
}
}  // namespace

QString default_journal_path() {
  return data_dir().filePath(QStringLiteral("journal.db"));
}

QString default_adapters_dir() {
  return data_dir().filePath(QStringLiteral("adapters"));
}

QString xdg_runs_dir() {
  return data_dir().filePath(QStringLiteral("runs"));
}

QString default_runs_dir() {
  if (const QString chosen = runs_dir_setting(); !chosen.isEmpty()) return chosen;
  return xdg_runs_dir();
}

QString demo_dir() {
  QStringList candidates;
  if (qEnvironmentVariableIsSet("FORJA_DEMO_DIR")) candidates << qEnvironmentVariable("FORJA_DEMO_DIR");
  candidates << QCoreApplication::applicationDirPath() + QStringLiteral("/../share/forja/demo");
#ifdef FORJA_SOURCE_DEMO_DIR
  candidates << QStringLiteral(FORJA_SOURCE_DEMO_DIR);
#endif
  for (const QString& c : candidates)
    if (QFileInfo::exists(c + QStringLiteral("/model/config.json")) &&
        QFileInfo::exists(c + QStringLiteral("/dataset.jsonl")))
      return QDir(c).absolutePath();
  return {};
}

}  // namespace forja::ui
