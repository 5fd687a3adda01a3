// Reads the reference outputs that tests/fixtures/make_fixtures.py recorded with transformers, and compares.
// Shared by the CPU (Qt Test) and GPU (plain harness) parity suites; needs LibTorch, not Qt.
#pragma once

#include <ATen/ATen.h>

#include <filesystem>
#include <string>
#include <vector>

#include "forja/safetensors.h"
#include "weights.h"

namespace forja_test {

inline const std::vector<std::string>& fixture_models() {
  static const std::vector<std::string> names = {"llama",  "llama3", "mistral", "qwen2",  "qwen3",
                                                 "gemma2", "gemma3", "phi3",    "smollm", "gpt2"};
  return names;
}

inline std::filesystem::path fixture_dir(const std::string& model) {
  return std::filesystem::path(FORJA_FIXTURES_DIR) / "models" / model;
}

// A tensor from <model>/expected.safetensors (input_ids, logits, gen_prompt, gen_output), copied to the CPU.
inline at::Tensor expected(const std::string& model, const std::string& name) {
  auto f = forja::io::SafetensorsFile::open(fixture_dir(model) / "expected.safetensors");
  return forja::tensor_from_checkpoint(f, f.at(name)).clone();
}

inline double max_abs_error(const at::Tensor& a, const at::Tensor& b) {
  return (a.to(at::kCPU, at::kDouble) - b.to(at::kCPU, at::kDouble)).abs().max().item<double>();
}

// ‖a − b‖ / ‖b‖ over all elements.
inline double relative_error(const at::Tensor& a, const at::Tensor& ref) {
  auto x = a.to(at::kCPU, at::kDouble), r = ref.to(at::kCPU, at::kDouble);
  return (x - r).norm().item<double>() / r.norm().item<double>();
}

}  // namespace forja_test
