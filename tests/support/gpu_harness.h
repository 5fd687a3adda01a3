// A minimal harness for the GPU suites, which must build where Qt is absent (the GPU machine).
// Each suite is a main() that calls forja_test::require_cuda() first: with no CUDA device it prints why and
// exits 77, which CTest reports as skipped. CHECK failures are counted and make the program exit 1.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

namespace forja_test {

inline int& failures() {
  static int n = 0;
  return n;
}

inline void skip(const std::string& why) {
  std::printf("SKIP: %s\n", why.c_str());
  std::fflush(stdout);
  std::exit(77);
}

inline int finish(const char* suite) {
  if (failures() == 0) {
    std::printf("PASS: %s\n", suite);
    return 0;
  }
  std::printf("FAIL: %s (%d failed checks)\n", suite, failures());
  return 1;
}

}  // namespace forja_test

#define FORJA_CHECK(cond, ...)                                   \
  do {                                                           \
    if (!(cond)) {                                               \
      std::printf("  FAILED %s:%d: %s — ", __FILE__, __LINE__, #cond); \
      std::printf(__VA_ARGS__);                                  \
      std::printf("\n");                                         \
      ++forja_test::failures();                                  \
    }                                                            \
  } while (0)
