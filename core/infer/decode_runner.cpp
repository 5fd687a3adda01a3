#include "decode_runner.h"

#include <ATen/core/grad_mode.h>

#include <algorithm>
#include <map>

#include "forja/error.h"
#include "infer_compat.h"

#if FORJA_INFER_CUDA_GRAPHS
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace forja::infer {

// The smallest graph bucket: below it the masked slots cost less than capturing more graphs would.
constexpr int64_t kMinBucket = 256;

struct DecodeRunner::Graphs {
#if FORJA_INFER_CUDA_GRAPHS
  std::map<std::pair<int64_t, bool>, std::unique_ptr<at::cuda::CUDAGraph>> captured;
  std::optional<c10::cuda::CUDAStream>
      side;  // capture stream: cuBLAS needs warm-up and capture on the same one
  decltype(at::cuda::graph_pool_handle()) pool{};
#endif
};

DecodeRunner::DecodeRunner(Decoder& decoder, bool use_cuda_graphs)
    : decoder_(decoder),
      use_graphs_(use_cuda_graphs && compat::kHasCudaGraphs && decoder.device().is_cuda()),
      graph_state_(std::make_unique<Graphs>()) {
  auto dev = at::TensorOptions().device(decoder.device());
  inputs_ = at::zeros({2}, dev.dtype(at::kLong));
  host_inputs_ =
      at::zeros({2}, at::TensorOptions().dtype(at::kLong).pinned_memory(decoder.device().is_cuda()));
  logits_ = at::zeros({decoder.vocab_size()}, dev.dtype(at::kFloat));
  best_ = at::zeros({2}, dev.dtype(at::kFloat));
#if FORJA_INFER_CUDA_GRAPHS
  if (use_graphs_) graph_state_->pool = at::cuda::graph_pool_handle();
#endif
}

DecodeRunner::~DecodeRunner() = default;

int64_t DecodeRunner::graph_count() const {
#if FORJA_INFER_CUDA_GRAPHS
  return static_cast<int64_t>(graph_state_->captured.size());
#else
  return 0;
#endif
}

void DecodeRunner::invalidate() {
#if FORJA_INFER_CUDA_GRAPHS
  if (!graph_state_->captured.empty()) c10::cuda::device_synchronize();
  graph_state_->captured.clear();
#endif
}

int64_t DecodeRunner::bucket_for(int64_t position) const {
  int64_t bucket = kMinBucket;
  while (bucket < position + 1) bucket *= 2;
  return std::min(bucket, decoder_.capacity());
}

void DecodeRunner::run_step(int64_t keys) {
  at::Tensor logits = decoder_.decode(inputs_.narrow(0, 0, 1), inputs_.narrow(0, 1, 1), keys).view({-1});
  logits_.copy_(logits);
  auto [top, index] = logits_.max(0);
  best_.copy_(at::stack({top - at::logsumexp(logits_, {0}), index.to(at::kFloat)}));
}

std::pair<int32_t, double> DecodeRunner::best_of(const at::Tensor& logits) {
  auto [top, index] = logits.max(0);
  at::Tensor pair =
      at::stack({top - at::logsumexp(logits, {0}), index.to(at::kFloat)}).to(at::kCPU, at::kDouble);
  return {static_cast<int32_t>(pair[1].item<double>()), pair[0].item<double>()};
}

StepOutput DecodeRunner::step(int32_t token, int64_t position) {
  if (position < 0 || position >= decoder_.capacity())
    throw Error("decode position " + std::to_string(position) + " is outside the KV cache (" +
                std::to_string(decoder_.capacity()) + " slots)");
  at::NoGradGuard no_grad;
  auto* host = host_inputs_.data_ptr<int64_t>();
  host[0] = token;
  host[1] = position;
  inputs_.copy_(host_inputs_, /*non_blocking=*/true);

  if (!use_graphs_) {
    run_step(position + 1);
  } else {
#if FORJA_INFER_CUDA_GRAPHS
    const int64_t keys = bucket_for(position);
    auto& graph = graph_state_->captured[{keys, decoder_.adapter_enabled()}];
    if (!graph) {
      // Capture is rare (once per bucket): full device syncs keep the stream ordering obvious.
      if (!graph_state_->side) graph_state_->side = c10::cuda::getStreamFromPool();
      c10::cuda::device_synchronize();
      graph = std::make_unique<at::cuda::CUDAGraph>();
      {
        c10::cuda::CUDAStreamGuard on_side(*graph_state_->side);
        run_step(keys);  // warm-up (lazy cuBLAS state); it is also this step's real computation
        graph->capture_begin(graph_state_->pool);
        run_step(keys);
        graph->capture_end();
      }
      c10::cuda::device_synchronize();
    }
    graph->replay();  // idempotent after the warm-up: writes the same cache slot with the same values
#endif
  }
  at::Tensor best = best_.to(at::kCPU);
  StepOutput out;
  out.logits = logits_;
  out.best_logprob = best[0].item<float>();
  out.best = static_cast<int32_t>(best[1].item<float>());
  return out;
}

}  // namespace forja::infer
