// The key/value cache of one conversation: per layer one preallocated [2, kv_heads, capacity, head_dim]
// tensor (K then V) in the model's dtype on the model's device. It stores the KV heads only (GQA: a
// Mistral-7B layer keeps 8 heads, not the 32 its queries use), and never grows or moves, so that a captured
// CUDA graph may write into it in place. Which positions hold valid entries is the generator's business (it
// knows which tokens were fed).
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

namespace forja::infer {

class KvCache {
 public:
  KvCache(int64_t layers, int64_t kv_heads, int64_t head_dim, int64_t capacity,
          const at::TensorOptions& options);

  // [2, kv_heads, capacity, head_dim]: index 0 holds K, index 1 holds V.
  at::Tensor& layer(int64_t i) { return layers_[static_cast<size_t>(i)]; }
  int64_t capacity() const { return capacity_; }
  int64_t bytes() const;

 private:
  std::vector<at::Tensor> layers_;
  int64_t capacity_ = 0;
};

}  // namespace forja::infer
