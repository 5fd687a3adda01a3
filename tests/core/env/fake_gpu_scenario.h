// Shared by the fake NVML and fake CUDA driver libraries that the env tests build: they read the scenario
// JSON named by FORJA_FAKE_GPU_SCENARIO each time the library is initialised, so one build serves every
// scenario.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

namespace fake_gpu {

inline nlohmann::json& scenario() {
  static nlohmann::json s;
  return s;
}

// Returns false when no scenario is named or it does not parse (the fake then reports "driver not loaded").
inline bool load_scenario() {
  const char* path = std::getenv("FORJA_FAKE_GPU_SCENARIO");
  if (!path) return false;
  std::ifstream in(path);
  if (!in) return false;
  scenario() = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  return !scenario().is_discarded();
}

inline const nlohmann::json& gpus() {
  static const nlohmann::json empty = nlohmann::json::array();
  const auto it = scenario().find("gpus");
  return it == scenario().end() ? empty : *it;
}

// "pid": "self" stands for the process that loaded the fake.
inline unsigned pid_of(const nlohmann::json& p) {
  return p.at("pid").is_string() ? static_cast<unsigned>(::getpid()) : p.at("pid").get<unsigned>();
}

}  // namespace fake_gpu
