// Training inputs the engine's test suites share: a pre-tokenized dataset file and a Batch from tensors.
// Needs LibTorch and nlohmann-json, not Qt.
#pragma once

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>

#include "forja/batch.h"

namespace forja_test {

// `count` pre-tokenized examples of 6..19 tokens, the first 1..4 of them a prompt without loss; ids in 3..319
// (the llama fixture's vocabulary is 320). The same seed writes the same file.
inline void write_dataset(const std::filesystem::path& path, uint64_t seed, int count) {
  std::mt19937_64 rng(seed);
  std::ofstream out(path);
  for (int i = 0; i < count; ++i) {
    const int len = 6 + static_cast<int>(rng() % 14);
    const int prompt = 1 + static_cast<int>(rng() % 4);
    nlohmann::json ids = nlohmann::json::array(), labels = nlohmann::json::array();
    for (int t = 0; t < len; ++t) {
      const int id = 3 + static_cast<int>(rng() % 317);
      ids.push_back(id);
      labels.push_back(t < prompt ? forja::kIgnoreIndex : id);
    }
    out << nlohmann::json({{"input_ids", ids}, {"labels", labels}}).dump() << "\n";
  }
}

// A Batch of ids and labels [rows, seq_len] (any integer dtype).
inline forja::Batch make_batch(const at::Tensor& ids, const at::Tensor& labels) {
  forja::Batch b;
  b.rows = ids.size(0);
  b.seq_len = ids.size(1);
  at::Tensor i32 = ids.to(at::kInt).contiguous(), l32 = labels.to(at::kInt).contiguous();
  b.input_ids.assign(i32.data_ptr<int32_t>(), i32.data_ptr<int32_t>() + i32.numel());
  b.labels.assign(l32.data_ptr<int32_t>(), l32.data_ptr<int32_t>() + l32.numel());
  for (int32_t l : b.labels) b.loss_tokens += l != forja::kIgnoreIndex;
  return b;
}

}  // namespace forja_test
