#include "trainer.h"

#include <cmath>

#include <ATen/core/grad_mode.h>
#include <c10/util/Exception.h>

#include <torch/csrc/autograd/autograd.h>
#include <cstdlib>

#include "forja/error.h"
#include "loss.h"

namespace forja::train {

BatchTensors to_tensors(const Batch& b, at::Device device) {
  const size_t n = static_cast<size_t>(b.rows * b.seq_len);
  if (b.rows <= 0 || b.seq_len <= 0 || b.input_ids.size() != n || b.labels.size() != n)
    throw Error("a batch of " + std::to_string(b.rows) + " x " + std::to_string(b.seq_len) + " has " +
                    std::to_string(b.input_ids.size()) + " input ids and " + std::to_string(b.labels.size()) +
                    " labels",
                "The data pipeline must fill rows * seq_len ids and labels.");
  auto to_long = [&](const auto& v) {
    using T = typename std::decay_t<decltype(v)>::value_type;
    static_assert(sizeof(T) == 4);
    return at::from_blob(const_cast<T*>(v.data()), {b.rows, b.seq_len}, at::TensorOptions().dtype(at::kInt))
        .to(device, at::kLong);
  };
  BatchTensors t;
  t.input_ids = to_long(b.input_ids);
  t.labels = to_long(b.labels);
  if (b.packed) {
    if (b.position_ids.size() != n || b.segment_ids.size() != n)
      throw Error("a packed batch needs position_ids and segment_ids for every token");
    t.position_ids = to_long(b.position_ids);
    t.segment_ids = to_long(b.segment_ids);
  }
  return t;
}

Trainer::Trainer(CausalLM& model, LoraAdapters& adapters, const OptimizerSettings& optimizer,
                 int64_t total_steps, bool activation_checkpointing)
    : model_(model),
      adapters_(adapters),
      settings_(optimizer),
      optimizer_(adapters.parameters(), optimizer),
      total_steps_(total_steps),
      recompute_(activation_checkpointing),
      chunk_rows_(loss_chunk_rows(model.config().vocab_size)) {}

double Trainer::learning_rate_at(int64_t step) const {
  return settings_.learning_rate *
         lr_multiplier(settings_.schedule, step, settings_.warmup_steps, total_steps_);
}

at::Tensor Trainer::loss_sum(const BatchTensors& t, bool recompute) {
  ForwardOptions fo;
  fo.position_ids = t.position_ids;
  fo.segment_ids = t.segment_ids;
  fo.recompute_blocks = recompute;
  fo.selective_checkpointing = selective_;
  at::Tensor h = model_.hidden_states(t.input_ids, fo);
  return linear_cross_entropy_sum(h.reshape({-1, h.size(-1)}), model_.head_weight(), t.labels.reshape({-1}),
                                  chunk_rows_, model_.config().final_softcap);
}

StepStats Trainer::step(const std::vector<Batch>& micro_batches) {
  StepStats s = backward(micro_batches);
  update(s);
  return s;
}

namespace {

// Fault injection for the out-of-memory path's tests on machines without a GPU: with
// FORJA_TEST_OOM_ABOVE_TOKENS=N a micro-batch of more than N tokens (4N with activation checkpointing) fails
// as CUDA's allocator would.
void maybe_inject_out_of_memory(const Batch& b, bool recompute) {
  const char* limit_text = std::getenv("FORJA_TEST_OOM_ABOVE_TOKENS");
  if (!limit_text) return;
  const int64_t limit = std::atoll(limit_text) * (recompute ? 4 : 1);
  TORCH_CHECK_WITH(OutOfMemoryError, b.rows * b.seq_len <= limit,
                   "CUDA out of memory (injected by FORJA_TEST_OOM_ABOVE_TOKENS: ", b.rows * b.seq_len,
                   " tokens in a micro-batch)");
}

}  // namespace

StepStats Trainer::backward(const std::vector<Batch>& micro_batches, int64_t step_loss_tokens) {
  if (micro_batches.empty()) throw Error("an optimizer step needs at least one micro-batch");
  StepStats s;
  for (const auto& b : micro_batches) {
    s.positions += b.rows * b.seq_len;
    s.tokens += real_token_count(b);
    for (int32_t l : b.labels) s.loss_tokens += l != kIgnoreIndex;
  }
  const double denom =
      static_cast<double>(step_loss_tokens > 0 ? step_loss_tokens : std::max<int64_t>(1, s.loss_tokens));
  adapters_.set_training(true);
  // Summed on the device: one synchronisation per step, not per micro-batch.
  at::Tensor total = at::zeros({}, at::TensorOptions().dtype(at::kDouble).device(model_.device()));
  for (const auto& b : micro_batches) {
    maybe_inject_out_of_memory(b, recompute_);
    BatchTensors t = to_tensors(b, model_.device());
    at::Tensor loss = loss_sum(t, recompute_) / denom;
    torch::autograd::backward({loss});
    total.add_(loss.detach().to(at::kDouble));
  }
  s.loss = total.item<double>();
  return s;
}

bool Trainer::update(StepStats& s) {
  s.grad_norm = clip_grad_norm(optimizer_.params(), settings_.max_grad_norm);
  if (!std::isfinite(s.grad_norm)) {
    optimizer_.zero_grad();
    return false;
  }
  s.learning_rate = learning_rate_at(optimizer_.steps());
  optimizer_.step(s.learning_rate);
  optimizer_.zero_grad();
  return true;
}

double Trainer::evaluate(const std::vector<Batch>& batches) {
  at::NoGradGuard no_grad;
  adapters_.set_training(false);
  double sum = 0;
  int64_t tokens = 0;
  for (const auto& b : batches) {
    for (int32_t l : b.labels) tokens += l != kIgnoreIndex;
    sum += loss_sum(to_tensors(b, model_.device()), false).item<double>();
  }
  adapters_.set_training(true);
  return tokens ? sum / static_cast<double>(tokens) : 0.0;
}

}  // namespace forja::train
