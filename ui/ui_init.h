// forja::ui::initialize(): what the window needs before the first widget exists — the compiled-in icons and
// translations, and the application's identity (used by QSettings and the XDG paths).
#pragma once

class QApplication;

namespace forja::ui {

// Registers resources, sets organization/application names (unless already set, as tests do) and installs the
// translator matching the system locale when one is compiled in.
void initialize(QApplication& app);

}  // namespace forja::ui
