// What every fuzz target shares: a scratch folder per process for the parsers that take a path, and the rule
// that a forja::Error is a clean refusal (anything else escaping, a crash or a sanitizer report is a finding).
#pragma once

#include <stdlib.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <system_error>

#include "forja/error.h"

namespace forja::fuzz {

// Created on first use and removed at exit; the same files are rewritten for every input.
inline const std::filesystem::path& scratch_dir() {
  static const std::filesystem::path dir = [] {
    std::string tmpl = (std::filesystem::temp_directory_path() / "forja-fuzz-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) std::abort();
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(scratch_dir(), ec);
    });
    return std::filesystem::path(tmpl);
  }();
  return dir;
}

inline std::filesystem::path write_scratch(const std::string& name, const uint8_t* data, size_t size) {
  const std::filesystem::path p = scratch_dir() / name;
  std::filesystem::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  out.close();
  if (!out) std::abort();
  return p;
}

inline std::string as_string(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// Runs one parse; a forja::Error is the parser saying no, which is fine.
template <class F>
void guarded(F&& f) {
  try {
    f();
  } catch (const forja::Error&) {
  }
}

}  // namespace forja::fuzz
