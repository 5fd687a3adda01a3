// Where the window keeps its files: XDG locations through QStandardPaths (tests switch them to temporary
// folders with QStandardPaths::setTestModeEnabled).
#pragma once

#include <QString>

namespace forja::ui {

// $XDG_DATA_HOME/forja/journal.db: the run journal shared with the training worker.
QString default_journal_path();
// $XDG_DATA_HOME/forja/adapters: where new runs put their adapters.
QString default_adapters_dir();
// The Settings dialog's runs folder, else $XDG_DATA_HOME/forja/runs: where new runs get their output folders
// (forja::new_run_dir names them), the folder forja::default_runs_root() gives `forja-cli train` for a config
// without output_dir.
QString default_runs_dir();
// $XDG_DATA_HOME/forja/runs, whatever the Settings dialog chose.
QString xdg_runs_dir();
// The built-in demo (a toy model folder "model" and "dataset.jsonl"): $FORJA_DEMO_DIR, else share/forja/demo
// beside the installed program, else resources/demo of the source tree this was built from. Empty when none
// is there.
QString demo_dir();

}  // namespace forja::ui
