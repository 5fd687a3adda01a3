// Deterministic fault points for crash tests: FORJA_FAULT=<point>[@n] makes the process SIGKILL itself the
// n-th time (the first when @n is left out) it reaches the named point. Release builds honour it too, so the
// tests kill the very binary users run. CONTRIBUTING.md lists the points.
#pragma once

#include <string_view>

namespace forja {

// True when FORJA_FAULT names any point; lets callers skip building point names on the hot path.
bool fault_points_armed();

// Counts a pass through `point`; true when this pass is the one FORJA_FAULT asks to die at (the caller may
// then do part of its work, e.g. write half a file, before calling fault_kill()).
bool fault_hit(std::string_view point);

// SIGKILL this process now: no destructor, atexit handler or stdio flush runs, as with a real crash.
[[noreturn]] void fault_kill();

// fault_hit + fault_kill.
inline void fault_point(std::string_view point) {
  if (fault_points_armed() && fault_hit(point)) fault_kill();
}

}  // namespace forja
