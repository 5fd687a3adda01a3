// forja::bench::train (forja/bench.h): LoRA training throughput at a real model shape without its weights.
#include <torch/cuda.h>

#include <algorithm>
#include <chrono>
#include <random>

#include "causal_lm.h"
#include "env/torch_facts.h"
#include "forja/bench.h"
#include "lora_linear.h"
#include "trainer.h"
#include "weights.h"

namespace forja::bench {
namespace {

Batch random_batch(int64_t rows, int64_t seq, int64_t vocab, std::mt19937_64& rng) {
  Batch b;
  b.rows = rows;
  b.seq_len = seq;
  b.input_ids.resize(static_cast<size_t>(rows * seq));
  for (auto& id : b.input_ids) id = static_cast<TokenId>(rng() % static_cast<uint64_t>(vocab));
  // labels = input_ids, as the baseline passes them; shifted here as Batch wants them.
  b.labels.assign(b.input_ids.size(), kIgnoreIndex);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t t = 0; t + 1 < seq; ++t) b.labels[r * seq + t] = b.input_ids[r * seq + t + 1];
  b.loss_tokens = rows * (seq - 1);
  return b;
}

}  // namespace

TrainResult train(const TrainOptions& o) {
  const at::Device device = parse_device(o.device);
  const at::ScalarType dtype = device.is_cuda() ? at::kBFloat16 : at::kFloat;
  const ModelConfig config = shape_config(o.shape);
  RandomWeights weights(0, dtype, device);
  if (o.nf4_base) {
    quant::Nf4Options nf4;
    nf4.double_quant = true;
    weights.set_nf4(nf4);
  }
  auto model = make_causal_lm(config, weights);
  LoraOptions lo;  // r16 alpha32 on q/k/v/o/gate/up/down: the defaults
  auto adapters = LoraAdapters::attach(*model, lo);
  OptimizerSettings opt;
  opt.learning_rate = 2e-4;
  opt.weight_decay = 0.01;  // torch.optim.AdamW's default, which the baseline keeps
  opt.max_grad_norm = 0;    // the baseline does not clip (the norm is still measured)
  opt.schedule = LrSchedule::Constant;
  train::Trainer trainer(*model, *adapters, opt, o.warmup + o.steps, o.recompute);
  trainer.set_selective_checkpointing(o.selective_checkpointing);

  std::mt19937_64 rng(0);
  const Batch b = random_batch(o.batch, o.seq, config.vocab_size, rng);
  auto sync = [&] {
    if (device.is_cuda()) torch::cuda::synchronize();
  };
  TrainResult r;
  for (int64_t i = 0; i < o.warmup; ++i) r.loss_first = trainer.step({b}).loss;
  sync();
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < o.steps; ++i) r.loss_last = trainer.step({b}).loss;
  sync();
  r.step_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() /
             static_cast<double>(std::max<int64_t>(1, o.steps));
  for (const auto& s : env::torch_allocator_samples()) r.peak_gib += double(s.peak_allocated) / (1 << 30);
  r.tokens_per_s = double(o.batch * o.seq) / r.step_s;
  r.lora_params = adapters->parameter_count();
  return r;
}

}  // namespace forja::bench
