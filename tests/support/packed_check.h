// Packed padding-free training against the same examples trained one by one: the per-example losses, the
// step's loss and the LoRA gradients, shared by the CPU suite (fp32, the dense segment mask) and the GPU
// suite (bf16, variable-length flash attention). Needs LibTorch and the data area, not Qt.
#pragma once

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/grad_mode.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "causal_lm.h"
#include "forja/architecture.h"
#include "forja/dataset.h"
#include "lora_linear.h"
#include "reference.h"
#include "trainer.h"

namespace forja_test {

// Examples of the given lengths with random ids in [3, vocab) and a prompt of 1..3 tokens without loss.
inline std::vector<forja::Example> random_examples(const std::vector<int>& lengths, int64_t vocab,
                                                   uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<forja::Example> out;
  for (int len : lengths) {
    forja::Example e;
    const int prompt = 1 + static_cast<int>(rng() % 3);
    for (int t = 0; t < len; ++t) {
      e.ids.push_back(3 + static_cast<forja::TokenId>(rng() % static_cast<uint64_t>(vocab - 3)));
      e.train_mask.push_back(t >= prompt ? 1 : 0);
    }
    e.source = "example " + std::to_string(out.size());
    e.original_length = len;
    out.push_back(std::move(e));
  }
  return out;
}

// LoRA on every projection of the family, with B drawn at random so that every A gets a gradient too.
inline std::shared_ptr<forja::LoraAdapters> random_lora(forja::CausalLM& model, uint64_t seed) {
  forja::LoraOptions o;
  o.rank = 4;
  o.alpha = 8;
  o.seed = seed;
  o.target_modules = forja::architecture(model.config().family).projections;
  auto adapters = forja::LoraAdapters::attach(model, o);
  at::NoGradGuard no_grad;
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  for (const auto& e : adapters->entries())
    e.adapter->lora_B.copy_(at::randn(e.adapter->lora_B.sizes(), gen, at::kFloat) * 0.05);
  return adapters;
}

// Per-example mean cross-entropy of a batch: for each (row, segment) in order, the mean over its loss
// positions. Rows without segment ids count as one example each.
inline std::vector<double> per_example_losses(forja::CausalLM& model, const forja::Batch& batch,
                                              const forja::train::BatchTensors& t) {
  at::NoGradGuard no_grad;
  forja::ForwardOptions fo;
  fo.position_ids = t.position_ids;
  fo.segment_ids = t.segment_ids;
  at::Tensor logits = model.logits(model.hidden_states(t.input_ids, fo)).to(at::kCPU, at::kFloat);
  at::Tensor ce =
      at::cross_entropy_loss(logits.reshape({-1, logits.size(-1)}), t.labels.reshape({-1}).to(at::kCPU), {},
                             at::Reduction::None, forja::kIgnoreIndex)
          .to(at::kDouble);
  const double* c = ce.data_ptr<double>();
  std::vector<double> out;
  for (int64_t r = 0; r < batch.rows; ++r) {
    int32_t segment = -1;
    double sum = 0;
    int64_t n = 0;
    auto flush = [&] {
      if (n > 0) out.push_back(sum / static_cast<double>(n));
      sum = 0, n = 0;
    };
    for (int64_t i = 0; i < batch.seq_len; ++i) {
      const size_t k = static_cast<size_t>(r * batch.seq_len + i);
      const int32_t s = batch.segment_ids.empty() ? 1 : batch.segment_ids[k];
      if (s != segment) flush(), segment = s;
      if (s != 0 && batch.labels[k] != forja::kIgnoreIndex) sum += c[k], ++n;
    }
    flush();
  }
  return out;
}

struct PackedComparison {
  double worst_loss = 0;       // max over examples of |packed − alone| / alone
  double step_loss_error = 0;  // the step's mean loss, relative
  double worst_grad = 0;       // max over adapter tensors of ‖packed − alone‖ / ‖alone‖
  double leak_loss = 0;        // worst_loss when the packed row is run as one plain causal sequence
  int64_t examples = 0;
  double grad_norm = 0;  // of the one-by-one gradient, to show it is not zero
};

// Packs `examples` into `rows` rows of `seq_len` (in order, greedily, as BatchStream does) and compares.
inline PackedComparison compare_packed(forja::CausalLM& model, forja::LoraAdapters& adapters,
                                       const std::vector<forja::Example>& examples, int64_t rows,
                                       int64_t seq_len) {
  std::vector<std::vector<const forja::Example*>> packed_rows(1);
  int64_t fill = 0;
  for (const auto& e : examples) {
    const int64_t len = static_cast<int64_t>(e.ids.size());
    if (fill + len > seq_len) packed_rows.emplace_back(), fill = 0;
    packed_rows.back().push_back(&e);
    fill += len;
  }
  packed_rows.resize(static_cast<size_t>(std::max<int64_t>(rows, static_cast<int64_t>(packed_rows.size()))));
  const forja::Batch packed = forja::build_batch(packed_rows, seq_len, 0);
  std::vector<forja::Batch> alone;
  for (const auto& e : examples)
    alone.push_back(forja::build_batch({{&e}}, static_cast<int64_t>(e.ids.size()), 0));

  PackedComparison out;
  const auto packed_t = forja::train::to_tensors(packed, model.device());
  const std::vector<double> got = per_example_losses(model, packed, packed_t);
  std::vector<double> want;
  for (const auto& b : alone) {
    const auto w = per_example_losses(model, b, forja::train::to_tensors(b, model.device()));
    want.insert(want.end(), w.begin(), w.end());
  }
  out.examples = static_cast<int64_t>(want.size());
  if (got.size() != want.size()) {
    out.worst_loss = INFINITY;
    return out;
  }
  for (size_t i = 0; i < got.size(); ++i)
    out.worst_loss = std::max(out.worst_loss, std::abs(got[i] - want[i]) / want[i]);
  // The same row with nothing keeping its examples apart: what a leak would look like.
  forja::train::BatchTensors leaky = packed_t;
  leaky.position_ids = at::Tensor();
  leaky.segment_ids = at::Tensor();
  const std::vector<double> leaked = per_example_losses(model, packed, leaky);
  for (size_t i = 0; i < leaked.size() && i < want.size(); ++i)
    out.leak_loss = std::max(out.leak_loss, std::abs(leaked[i] - want[i]) / want[i]);

  forja::train::Trainer trainer(model, adapters, forja::OptimizerSettings{}, 1, false);
  auto grads = [&](const std::vector<forja::Batch>& micro, double& loss) {
    trainer.optimizer().zero_grad();
    loss = trainer.backward(micro).loss;
    std::vector<at::Tensor> g;
    for (const auto& p : adapters.parameters()) g.push_back(p.grad().detach().clone());
    trainer.optimizer().zero_grad();
    return g;
  };
  double packed_loss = 0, alone_loss = 0;
  const auto g_packed = grads({packed}, packed_loss);
  const auto g_alone = grads(alone, alone_loss);
  out.step_loss_error = std::abs(packed_loss - alone_loss) / alone_loss;
  double sq = 0;
  for (size_t i = 0; i < g_alone.size(); ++i) {
    out.worst_grad = std::max(out.worst_grad, relative_error(g_packed[i], g_alone[i]));
    sq += g_alone[i].to(at::kDouble).pow(2).sum().item<double>();
  }
  out.grad_norm = std::sqrt(sq);
  return out;
}

}  // namespace forja_test
