// One LoRA optimizer step over a list of micro-batches, and evaluation. The loss of a step is the mean
// cross-entropy over all loss tokens of its micro-batches (each micro-batch contributes its token sum divided
// by the step's token count, as transformers' Trainer does with num_items_in_batch), so gradient accumulation
// gives the same update as one large batch.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

#include "causal_lm.h"
#include "forja/batch.h"
#include "forja/train.h"
#include "lora_linear.h"
#include "optimizer.h"

namespace forja::train {

struct StepStats {
  double loss = 0;
  double grad_norm = 0;
  double learning_rate = 0;
  int64_t positions = 0;    // rows x seq_len summed over the micro-batches, padding included
  int64_t tokens = 0;       // real input tokens (padding excluded)
  int64_t loss_tokens = 0;  // labels != -100
};

struct BatchTensors {
  at::Tensor input_ids, labels;          // [B, T] int64
  at::Tensor position_ids, segment_ids;  // [B, T] int64, only for packed batches
};

// Checks a Batch's sizes and moves it to `device`; throws forja::Error naming what is inconsistent.
BatchTensors to_tensors(const Batch& batch, at::Device device);

class Trainer {
 public:
  Trainer(CausalLM& model, LoraAdapters& adapters, const OptimizerSettings& optimizer, int64_t total_steps,
          bool activation_checkpointing);

  // backward() then update().
  StepStats step(const std::vector<Batch>& micro_batches);
  // Forward and backward over all micro-batches: the adapters' .grad() hold the step's gradient (tests
  // compare it with PEFT's before update() clips it). `step_loss_tokens` > 0 normalises by that count instead
  // of these micro-batches' own: a data-parallel rank forwards part of a step whose loss tokens it passes.
  StepStats backward(const std::vector<Batch>& micro_batches, int64_t step_loss_tokens = 0);
  // Clip, AdamW update at this step's learning rate, zero the gradients; fills grad_norm and learning_rate.
  // A gradient norm that is not finite updates nothing and returns false.
  bool update(StepStats& stats);
  // Mean cross-entropy over all loss tokens of `batches`, without gradients or dropout.
  double evaluate(const std::vector<Batch>& batches);
  // Activation checkpointing on or off from the next step (the out-of-memory probe tries both).
  void set_recompute(bool on) { recompute_ = on; }
  bool recompute() const { return recompute_; }
  // Selective activation checkpointing (ForwardOptions::selective_checkpointing): cheap ops recomputed, GEMMs
  // not.
  void set_selective_checkpointing(bool on) { selective_ = on; }
  bool selective_checkpointing() const { return selective_; }

  int64_t steps_done() const { return optimizer_.steps(); }
  AdamW& optimizer() { return optimizer_; }
  double learning_rate_at(int64_t step) const;

 private:
  at::Tensor loss_sum(const BatchTensors& t, bool recompute);
  CausalLM& model_;
  LoraAdapters& adapters_;
  OptimizerSettings settings_;
  AdamW optimizer_;
  int64_t total_steps_;
  bool recompute_;
  bool selective_ = false;
  int64_t chunk_rows_;
};

}  // namespace forja::train
