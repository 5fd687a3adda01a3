#include "kv_cache.h"

namespace forja::infer {

KvCache::KvCache(int64_t layers, int64_t kv_heads, int64_t head_dim, int64_t capacity,
                 const at::TensorOptions& options)
    : capacity_(capacity) {
  layers_.reserve(static_cast<size_t>(layers));
  // Zeros, not empty: slots beyond the current length are read (then masked) by the fixed-length graph
  // attention, and uninitialised memory may hold NaNs, which a -inf mask does not cancel (0 * NaN).
  for (int64_t i = 0; i < layers; ++i)
    layers_.push_back(at::zeros({2, kv_heads, capacity, head_dim}, options));
}

int64_t KvCache::bytes() const {
  int64_t total = 0;
  for (const auto& t : layers_) total += t.numel() * static_cast<int64_t>(t.element_size());
  return total;
}

}  // namespace forja::infer
