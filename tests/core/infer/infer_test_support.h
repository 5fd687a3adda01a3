// Shared by the inference suites: a fixture model wrapped in a Generator (fp32 on the CPU, eager decode) and
// conversions between fixture tensors and id vectors.
#pragma once

#include <ATen/ATen.h>

#include <memory>
#include <string>
#include <vector>

#include "causal_lm.h"
#include "engine.h"
#include "forja/generate.h"
#include "reference.h"

namespace forja_test {

inline forja::Generator fixture_generator(const std::string& model, int64_t max_context = 0) {
  auto lm = forja::load_causal_lm(fixture_dir(model), {at::kFloat, at::kCPU});
  forja::EngineOptions options;
  options.max_context = max_context;
  return forja::Generator(std::make_unique<forja::Generator::Impl>(lm, options, fixture_dir(model).string()));
}

inline std::vector<int32_t> ids_of(const at::Tensor& t) {
  at::Tensor flat = t.reshape({-1}).to(at::kLong).contiguous();
  return std::vector<int32_t>(flat.data_ptr<int64_t>(), flat.data_ptr<int64_t>() + flat.numel());
}

// The fixture's greedy continuation: gen_output without the gen_prompt it starts with.
inline std::vector<int32_t> expected_continuation(const std::string& model) {
  auto all = ids_of(expected(model, "gen_output"));
  const size_t prompt = static_cast<size_t>(expected(model, "gen_prompt").numel());
  return std::vector<int32_t>(all.begin() + static_cast<std::ptrdiff_t>(prompt), all.end());
}

inline std::string train_adapter_dir(const std::string& model) {
  return (std::filesystem::path(FORJA_FIXTURES_DIR) / "train" / model / "final").string();
}

}  // namespace forja_test
