// AdamW, learning-rate schedules and gradient clipping with exactly PyTorch's / transformers' arithmetic, so
// that a Forja run and a transformers + PEFT run from the same state take the same steps.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "forja/train.h"

namespace forja::train {

// torch.optim.AdamW (decoupled weight decay; amsgrad off). On CUDA with LibTorch 2.x one fused kernel updates
// all parameters; elsewhere the per-tensor sequence of torch's _single_tensor_adamw, operation for operation.
class AdamW {
 public:
  AdamW(std::vector<at::Tensor> params, const OptimizerSettings& settings);
  // One update with learning rate `lr`; parameters without a gradient are skipped (as torch does).
  void step(double lr);
  void zero_grad();

  int64_t steps() const { return step_; }
  // exp_avg and exp_avg_sq per parameter (created at the first step; empty before it).
  const std::vector<at::Tensor>& exp_avg() const { return exp_avg_; }
  const std::vector<at::Tensor>& exp_avg_sq() const { return exp_avg_sq_; }
  // For resuming: the step count and moments exactly as saved.
  void restore(int64_t steps, std::vector<at::Tensor> exp_avg, std::vector<at::Tensor> exp_avg_sq);
  const std::vector<at::Tensor>& params() const { return params_; }

 private:
  void ensure_state();
  std::vector<at::Tensor> params_;
  OptimizerSettings s_;
  int64_t step_ = 0;
  std::vector<at::Tensor> exp_avg_, exp_avg_sq_;
};

// The multiplier of the base learning rate at optimizer step `step` (0-based), as transformers'
// get_constant/linear/cosine_schedule_with_warmup (cosine with num_cycles 0.5) compute it.
double lr_multiplier(LrSchedule schedule, int64_t step, int64_t warmup_steps, int64_t total_steps);

// torch.nn.utils.clip_grad_norm_(params, max_norm): returns the global 2-norm before clipping and scales
// every gradient by min(1, max_norm / (norm + 1e-6)). max_norm <= 0 only measures.
double clip_grad_norm(const std::vector<at::Tensor>& params, double max_norm);

}  // namespace forja::train
