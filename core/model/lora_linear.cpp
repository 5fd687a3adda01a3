#include "lora_linear.h"

#include "forja/architecture.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/grad_mode.h>

#include <algorithm>
#include <cmath>

#include "causal_lm.h"
#include "forja/error.h"
#include "fused_ops.h"
#include "layers.h"

namespace forja {

double lora_scale(const LoraOptions& o) {
  return o.use_rslora ? o.alpha / std::sqrt(static_cast<double>(o.rank))
                      : o.alpha / static_cast<double>(o.rank);
}

at::Tensor LoraAdapter::add_to(const at::Tensor& base_out, const at::Tensor& x) const {
  // B's product is accumulated into the projection's own output (which is updated in place and returned).
  return fused::lora_add(base_out, x, lora_A, lora_B, scale, training ? dropout : 0.0);
}

namespace {

bool matches_target(const std::string& module, const std::vector<std::string>& targets) {
  for (const auto& t : targets) {
    if (module == t) return true;
    if (module.size() > t.size() && module.compare(module.size() - t.size(), t.size(), t) == 0 &&
        module[module.size() - t.size() - 1] == '.')
      return true;
  }
  return false;
}

}  // namespace

std::shared_ptr<LoraAdapters> LoraAdapters::attach(CausalLM& model, const LoraOptions& options) {
  if (options.rank <= 0) throw Error("LoRA rank must be positive (got " + std::to_string(options.rank) + ")");
  if (options.dropout < 0 || options.dropout >= 1)
    throw Error("LoRA dropout must be in [0, 1) (got " + std::to_string(options.dropout) + ")");
  std::shared_ptr<LoraAdapters> set(new LoraAdapters());
  set->options_ = options;
  const double scale = lora_scale(options);
  auto gen = at::make_generator<at::CPUGeneratorImpl>(options.seed);
  std::vector<bool> target_used(options.target_modules.size(), false);

  auto named = model.named_modules("", /*include_self=*/false);
  std::vector<std::string> names = named.keys();
  std::sort(names.begin(), names.end());
  for (const auto& name : names) {
    auto module = named[name];
    std::shared_ptr<LoraAdapter>* slot = nullptr;
    at::Tensor weight;
    int64_t in = 0, out = 0;
    bool fan_in_fan_out = false;
    LinearImpl* linear = module->as<LinearImpl>();
    at::Device device = at::kCPU;
    if (linear != nullptr) {
      slot = &linear->lora, weight = linear->weight, in = linear->in_features(), out = linear->out_features();
      device = linear->nf4.defined() ? linear->nf4.device() : weight.device();
    } else if (auto* conv = module->as<Conv1DImpl>()) {
      slot = &conv->lora, weight = conv->weight, in = weight.size(0), out = weight.size(1),
      fan_in_fan_out = true, device = weight.device();
    } else {
      continue;
    }
    if (!matches_target(name, options.target_modules)) continue;
    for (size_t i = 0; i < options.target_modules.size(); ++i)
      if (matches_target(name, {options.target_modules[i]})) target_used[i] = true;
    if (*slot)
      throw Error("'" + name + "' already carries a LoRA adapter", "Detach the first adapter set first.");

    auto adapter = std::make_shared<LoraAdapter>();
    const auto fp32 = at::TensorOptions().dtype(at::kFloat);
    // kaiming_uniform_(a=sqrt(5)) on [r, in]: gain sqrt(2 / (1 + 5)), bound gain * sqrt(3 / in) = 1 /
    // sqrt(in).
    const double bound = 1.0 / std::sqrt(static_cast<double>(in));
    at::Tensor a = at::empty({options.rank, in}, fp32).uniform_(-bound, bound, gen);
    adapter->lora_A = a.to(device).requires_grad_(true);
    adapter->lora_B = at::zeros({out, options.rank}, fp32.device(device)).requires_grad_(true);
    adapter->scale = scale;
    adapter->dropout = options.dropout;
    *slot = adapter;
    set->entries_.push_back({name, adapter, weight, fan_in_fan_out, linear});
    set->slots_.push_back(slot);
  }
  for (size_t i = 0; i < target_used.size(); ++i) {
    if (!target_used[i]) {
      for (auto* slot : set->slots_) slot->reset();
      throw Error(
          "LoRA target module '" + options.target_modules[i] + "' matches no projection of this " +
              family_name(model.config().family) + " model",
          "This model's projections are " + projection_list(architecture(model.config().family)) + ".");
    }
  }
  return set;
}

LoraAdapters::~LoraAdapters() {
  for (size_t i = 0; i < slots_.size(); ++i)
    if (*slots_[i] == entries_[i].adapter) slots_[i]->reset();
}

std::vector<at::Tensor> LoraAdapters::parameters() const {
  std::vector<at::Tensor> out;
  for (const auto& e : entries_) {
    out.push_back(e.adapter->lora_A);
    out.push_back(e.adapter->lora_B);
  }
  return out;
}

std::vector<std::string> LoraAdapters::parameter_names() const {
  std::vector<std::string> out;
  for (const auto& e : entries_) {
    out.push_back("base_model.model." + e.module + ".lora_A.weight");
    out.push_back("base_model.model." + e.module + ".lora_B.weight");
  }
  return out;
}

int64_t LoraAdapters::parameter_count() const {
  int64_t n = 0;
  for (const auto& p : parameters()) n += p.numel();
  return n;
}

void LoraAdapters::set_enabled(bool enabled) {
  for (auto& e : entries_) e.adapter->enabled = enabled;
}

void LoraAdapters::set_training(bool training) {
  for (auto& e : entries_) e.adapter->training = training;
}

void LoraAdapters::merge_into_base(at::ScalarType nf4_dtype) {
  at::NoGradGuard no_grad;
  for (auto& e : entries_) {
    if (e.linear != nullptr && e.linear->nf4.defined()) {
      e.linear->dequantize_weight(nf4_dtype);
      e.base_weight = e.linear->weight;
    }
    // Delta in fp32, added in fp32, stored back in the base dtype (one rounding, as PEFT's merge does).
    at::Tensor delta = at::matmul(e.adapter->lora_B.detach(), e.adapter->lora_A.detach()) * e.adapter->scale;
    if (e.fan_in_fan_out) delta = delta.t();
    e.base_weight.copy_(e.base_weight.to(at::kFloat) + delta);
    e.adapter->enabled = false;
  }
}

}  // namespace forja
