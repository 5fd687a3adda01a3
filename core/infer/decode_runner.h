// Runs the single-token decode step: eagerly, or on CUDA (LibTorch 2.x) as a replayed CUDA graph. Batch-1
// decode issues hundreds of small kernels per token; launched one by one from the host they cost more than
// the weights take to stream, inside a graph about a tenth of that (docs/GPU_MACHINE.md: ~6.4 µs vs ~0.92 µs
// per op).
//
// A graph has fixed shapes, so the attention covers a fixed number of cache slots (a power-of-two bucket >=
// 256, capped at the capacity) with the slots after the position masked; one graph is captured per (bucket,
// adapter on) the first time it is needed. Its static inputs are the token id and the position; the KV cache
// is written in place.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <memory>
#include <utility>

#include "decoder.h"

namespace forja::infer {

struct StepOutput {
  at::Tensor logits;  // [vocab] fp32, valid until the next step
  int32_t best = 0;   // argmax of the logits
  double best_logprob = 0;
};

class DecodeRunner {
 public:
  DecodeRunner(Decoder& decoder, bool use_cuda_graphs);
  ~DecodeRunner();
  DecodeRunner(const DecodeRunner&) = delete;
  DecodeRunner& operator=(const DecodeRunner&) = delete;

  // Feeds `token` at `position` and returns the next-token distribution. `want_logits` false: only the argmax
  // and its log-prob are copied to the host (the greedy path); the logits tensor is still filled on the
  // device.
  StepOutput step(int32_t token, int64_t position);
  // The argmax and its log-prob of fp32 logits [vocab] (one device-to-host copy).
  static std::pair<int32_t, double> best_of(const at::Tensor& logits);

  // Drops captured graphs (they hold the adapter tensors they were captured with).
  void invalidate();
  bool uses_cuda_graphs() const { return use_graphs_; }
  int64_t graph_count() const;
  // The bucket a graph for this position would attend over.
  int64_t bucket_for(int64_t position) const;

 private:
  void run_step(int64_t keys);  // the captured body: inputs_ -> logits_, best_
  Decoder& decoder_;
  bool use_graphs_;
  at::Tensor inputs_;       // [2] int64 on the device: token, position (the graph's static inputs)
  at::Tensor host_inputs_;  // [2] int64, pinned on CUDA
  at::Tensor logits_;       // [vocab] fp32
  at::Tensor best_;         // [2] fp32: log-prob of the argmax, argmax
  struct Graphs;
  std::unique_ptr<Graphs> graph_state_;
};

}  // namespace forja::infer
