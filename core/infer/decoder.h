// Forja's own forward pass for generation, built over a loaded CausalLM's parameters (looked up by their
// Hugging Face names), as llama.cpp builds its own graph: prefill of many tokens in one pass, and the
// single-token decode step that a CUDA graph captures. It writes K/V into a preallocated KvCache and applies
// LoRA adapters on top of the unchanged base weights. One subclass per family: decoder_llama.cpp (Llama,
// Mistral, Qwen2, TinyLlama, SmolLM) and decoder_gpt2.cpp.
//
// Batch 1 throughout (a chat); activations are [T, hidden]. The q/k/v (and gate/up) weights are fused into
// one matrix per layer so that a decode step reads them in one GEMV; the model's own parameters are
// re-pointed at views of the fused buffer (same values, no second copy), so the CausalLM keeps working
// unchanged.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "forja/model_config.h"
#include "kv_cache.h"
#include "nf4_weight.h"
#include "peft_adapter.h"

namespace forja {
class CausalLM;
}

namespace forja::infer {

// y = x·Wᵀ + b (+ residual), plus scale·(x·Aᵀ)·Bᵀ when the adapter is on. Conv1D weights are [in, out].
struct Projection {
  at::Tensor weight;
  at::Tensor bias;
  bool in_out = false;  // GPT-2's Conv1D layout
  // A 4-bit base (QLoRA) instead of `weight`: one NF4 weight [out, in] with plain fp32 absmax, or the parts
  // of a fused projection whose rows are not whole blocks, stacked along the output in order.
  std::vector<Nf4Weight> nf4;
  at::Tensor lora_a;  // [r_total, in] in the model's dtype; undefined without an adapter
  at::Tensor lora_b;  // [out, r_total], PEFT's scale folded in; block-diagonal for fused projections
  int64_t in_features() const;
  int64_t out_features() const;
  at::Tensor apply(const at::Tensor& x, bool lora_on, const at::Tensor& residual = {}) const;
};

// How the new tokens see the cache.
struct Attend {
  at::Tensor positions;   // [T] int64 on the device: where the new tokens go
  int64_t start = 0;      // host copy of positions[0] (prefill only)
  int64_t keys = 0;       // cache slots attended: start + T in prefill; a fixed length in decode
  at::Tensor mask;        // decode: [keys] additive mask in the model's dtype
  at::Tensor local_mask;  // decode: the same within the sliding window, where only some layers have one
  bool decode = false;    // T == 1: matmul attention over `keys` slots with `mask`
};

class Decoder {
 public:
  // `capacity`: the KV cache length (context window of a conversation). Throws forja::Error for a family or a
  // parameter layout it does not know.
  static std::unique_ptr<Decoder> create(CausalLM& model, int64_t capacity);
  virtual ~Decoder() = default;

  // Feeds ids [T] at positions start .. start+T-1 (writing their K/V) and returns the logits of the last
  // token [1, vocab], or of every token [T, vocab] with all_logits, in the model's dtype.
  at::Tensor prefill(const at::Tensor& ids, int64_t start, bool all_logits = false);
  // One token: ids [1] and positions [1] are device tensors (a graph's static buffers), `keys` a fixed number
  // of cache slots (>= position + 1) of which the ones after the position are masked. Returns logits [1,
  // vocab].
  at::Tensor decode(const at::Tensor& ids, const at::Tensor& positions, int64_t keys);

  // The adapter's A/B onto this model's projections (fused where the base is). Throws forja::Error naming the
  // module for one this model does not have or a shape that does not fit. clear_adapter() removes it.
  void set_adapter(const PeftAdapter& adapter);
  void clear_adapter();
  bool has_adapter() const { return has_adapter_; }
  void set_adapter_enabled(bool on) { adapter_on_ = on && has_adapter_; }
  bool adapter_enabled() const { return adapter_on_; }

  // Whether the single-token step runs kernels/decode (rather than the stock LibTorch step) right now.
  bool decode_kernels_on() const { return !decode_uses_mask(); }

  KvCache& cache() { return cache_; }
  int64_t capacity() const { return cache_.capacity(); }
  const ModelConfig& config() const { return config_; }
  at::Device device() const { return device_; }
  at::ScalarType dtype() const { return dtype_; }
  int64_t vocab_size() const { return head_.size(0); }
  int64_t weight_bytes() const { return weight_bytes_; }

 protected:
  Decoder(const CausalLM& model, int64_t capacity, int64_t kv_heads, int64_t head_dim);

  // The final-norm hidden states [T, hidden] of the new tokens.
  virtual at::Tensor hidden(const at::Tensor& ids, const Attend& a) = 0;
  // Whether hidden() reads Attend::mask in decode (the decode kernels read the position instead, so the
  // mask's launches are skipped).
  virtual bool decode_uses_mask() const { return true; }
  // Every projection by the module name(s) PEFT would use for it; fused projections list their parts in
  // order.
  struct NamedProjection {
    Projection* projection;
    std::vector<std::string> parts;  // module names; one for a plain projection
    std::vector<int64_t> rows;       // output rows of each part, in order
  };
  virtual std::vector<NamedProjection> projections() = 0;

  // Attention of the new tokens over the cache, shared by the families. qkv: [T, (heads + 2 kv_heads) *
  // head_dim] with q and k already rotated; writes K/V into `layer_cache` and returns [T, heads * head_dim].
  // The scores' scale and soft-cap come from the config (1/sqrt(head_dim), none, unless it sets them).
  at::Tensor attention(const at::Tensor& qkv, at::Tensor& layer_cache, int64_t heads, int64_t sliding_window,
                       const Attend& a) const;
  // The head on final-norm hidden states, soft-capped where the config says so.
  at::Tensor head_logits(const at::Tensor& h) const;

  ModelConfig config_;
  at::Device device_;
  at::ScalarType dtype_;
  KvCache cache_;
  int64_t kv_heads_, head_dim_;
  at::Tensor head_;        // [vocab, hidden] (the embedding when tied)
  at::Tensor slot_index_;  // [capacity] int64 0..capacity-1, for decode masks
  int64_t weight_bytes_ = 0;
  bool has_adapter_ = false, adapter_on_ = false;
};

// Helpers for the family files.
namespace detail {
// The named parameter, or forja::Error naming the model folder and the parameter.
at::Tensor param(const CausalLM& model, const std::string& name);
bool has_param(const CausalLM& model, const std::string& name);
// Concatenates the rows of `parts` into one new tensor and re-points each part at its slice of it (values
// unchanged), so a fused projection costs no extra memory.
at::Tensor fuse_rows(const std::vector<at::Tensor>& parts);
// `w` with its absmax as plain fp32 (decoded when double-quantized), which the decode step reads without a
// host round trip (a CUDA graph cannot have one).
Nf4Weight plain_absmax(const Nf4Weight& w);
// The 4-bit weights of a fused projection: one weight when every row is whole blocks (in-features a multiple
// of the block size, so the parts' codes and absmax simply concatenate, re-pointing the model's buffers as
// fuse_rows does), else the parts as they are.
std::vector<Nf4Weight> fuse_nf4_rows(const std::vector<Nf4Weight>& parts);
}  // namespace detail

}  // namespace forja::infer
