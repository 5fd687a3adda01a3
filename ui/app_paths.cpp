// XDG paths of the window's files.
#include "app_paths.h"

#include <QDir>
#include <QStandardPaths>

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

}  // namespace forja::ui
