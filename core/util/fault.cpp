#include "forja/fault.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace forja {
namespace {

std::atomic<long long> g_hits{0};

// FORJA_FAULT is read on every call, not cached: a test may set it in a forked child. The cost is a getenv
// per write or step, nothing next to either.
const char* fault_spec() {
  const char* v = std::getenv("FORJA_FAULT");
  return v && *v ? v : nullptr;
}

}  // namespace

bool fault_points_armed() {
  return fault_spec() != nullptr;
}

bool fault_hit(std::string_view point) {
  const char* spec = fault_spec();
  if (!spec) return false;
  std::string_view name = spec;
  long long nth = 1;
  if (const auto at = name.rfind('@'); at != std::string_view::npos) {
    char* end = nullptr;
    const long long n = std::strtoll(spec + at + 1, &end, 10);
    if (end && *end == '\0' && n >= 1) {
      nth = n;
      name = name.substr(0, at);
    }
  }
  if (point != name) return false;
  return g_hits.fetch_add(1) + 1 == nth;
}

void fault_kill() {
  ::kill(::getpid(), SIGKILL);
  ::_exit(137);  // not reached: SIGKILL cannot be caught
}

}  // namespace forja
