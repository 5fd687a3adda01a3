// Where the window keeps its files: XDG locations through QStandardPaths (tests switch them to temporary
// folders with QStandardPaths::setTestModeEnabled).
#pragma once

#include <QString>

namespace forja::ui {

// $XDG_DATA_HOME/forja/journal.db: the run journal shared with the training worker.
QString default_journal_path();
// $XDG_DATA_HOME/forja/adapters: where new runs put their adapters.
QString default_adapters_dir();

}  // namespace forja::ui
