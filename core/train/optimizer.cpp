#include "optimizer.h"

#include <ATen/core/grad_mode.h>

#include <cmath>
#include <numbers>

#include "torch_compat.h"

namespace forja::train {

AdamW::AdamW(std::vector<at::Tensor> params, const OptimizerSettings& settings)
    : params_(std::move(params)), s_(settings) {}

void AdamW::ensure_state() {
  if (!exp_avg_.empty()) return;
  for (const auto& p : params_) {
    exp_avg_.push_back(at::zeros_like(p, at::MemoryFormat::Preserve));
    exp_avg_sq_.push_back(at::zeros_like(p, at::MemoryFormat::Preserve));
  }
}

void AdamW::restore(int64_t steps, std::vector<at::Tensor> exp_avg, std::vector<at::Tensor> exp_avg_sq) {
  step_ = steps;
  exp_avg_ = std::move(exp_avg);
  exp_avg_sq_ = std::move(exp_avg_sq);
}

void AdamW::zero_grad() {
  for (auto& p : params_) {
    // set_to_none, as torch's default: the next backward writes fresh gradients instead of adding to zeros.
    if (p.grad().defined()) p.mutable_grad() = at::Tensor();
  }
}

void AdamW::step(double lr) {
  at::NoGradGuard no_grad;
  ensure_state();
  ++step_;
  const double b1 = s_.beta1, b2 = s_.beta2;
  if (compat::fused_adamw(params_, exp_avg_, exp_avg_sq_, step_, lr, b1, b2, s_.weight_decay, s_.eps)) return;
  const double bias_correction1 = 1 - std::pow(b1, static_cast<double>(step_));
  const double bias_correction2 = 1 - std::pow(b2, static_cast<double>(step_));
  const double step_size = lr / bias_correction1;
  const double bias_correction2_sqrt = std::sqrt(bias_correction2);
  for (size_t i = 0; i < params_.size(); ++i) {
    at::Tensor& p = params_[i];
    const at::Tensor& g = p.grad();
    if (!g.defined()) continue;
    p.mul_(1 - lr * s_.weight_decay);
    exp_avg_[i].lerp_(g, 1 - b1);
    exp_avg_sq_[i].mul_(b2).addcmul_(g, g, 1 - b2);
    at::Tensor denom = (exp_avg_sq_[i].sqrt() / bias_correction2_sqrt).add_(s_.eps);
    p.addcdiv_(exp_avg_[i], denom, -step_size);
  }
}

double lr_multiplier(LrSchedule schedule, int64_t step, int64_t warmup, int64_t total) {
  if (step < warmup) return static_cast<double>(step) / static_cast<double>(std::max<int64_t>(1, warmup));
  switch (schedule) {
    case LrSchedule::Constant:
      return 1.0;
    case LrSchedule::Linear:
      return std::max(
          0.0, static_cast<double>(total - step) / static_cast<double>(std::max<int64_t>(1, total - warmup)));
    case LrSchedule::Cosine: {
      const double progress =
          static_cast<double>(step - warmup) / static_cast<double>(std::max<int64_t>(1, total - warmup));
      return std::max(0.0, 0.5 * (1.0 + std::cos(std::numbers::pi * 0.5 * 2.0 * progress)));
    }
  }
  return 1.0;
}

double clip_grad_norm(const std::vector<at::Tensor>& params, double max_norm) {
  at::NoGradGuard no_grad;
  std::vector<at::Tensor> norms;
  for (const auto& p : params)
    if (p.grad().defined()) norms.push_back(at::norm(p.grad(), 2));
  if (norms.empty()) return 0.0;
  at::Tensor total = at::norm(at::stack(norms), 2);
  if (max_norm > 0) {
    at::Tensor coef = at::clamp_max(max_norm / (total + 1e-6), 1.0);
    for (const auto& p : params)
      if (p.grad().defined()) p.grad().mul_(coef.to(p.grad().device()));
  }
  return total.item<double>();
}

}  // namespace forja::train
