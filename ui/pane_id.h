// PaneId: the main window's panes, in their sidebar order (the View menu's Ctrl+1 is the first). Code names a
// pane by its id; only the sidebar, the menu and the saved current pane use its position, through pane_index
// and pane_at.
#pragma once

#include <array>
#include <optional>

namespace forja::ui {

enum class PaneId { Model, Data, Train, Runs, Chat, Gpu, Doctor };

inline constexpr std::array kAllPanes = {PaneId::Model, PaneId::Data, PaneId::Train, PaneId::Runs,
                                         PaneId::Chat,  PaneId::Gpu,  PaneId::Doctor};

constexpr int pane_index(PaneId id) {
  return static_cast<int>(id);
}

// The pane at a sidebar position; nullopt for one out of range (a saved setting from another version).
constexpr std::optional<PaneId> pane_at(int index) {
  if (index < 0 || index >= static_cast<int>(kAllPanes.size())) return std::nullopt;
  return kAllPanes[static_cast<size_t>(index)];
}

}  // namespace forja::ui
