// LoRA (Hu et al. 2021) on the projections of a loaded model, computed as PEFT computes it:
//   y = base(x) + B(A(dropout(x))) * scale,  scale = alpha / r  (rsLoRA: alpha / sqrt(r)),
// with A [r, in] drawn Kaiming-uniform (a = sqrt(5), i.e. U(±1/sqrt(in))) and B [out, r] zero, so a fresh
// adapter changes nothing. The base weights stay frozen in their dtype; A and B are fp32 master weights, cast
// to the activations' dtype in forward so that the bf16 matmuls run at bf16 speed while the optimizer updates
// fp32. GPT-2's Conv1D ([in, out] weights, PEFT's fan_in_fan_out) uses the same A/B shapes; only merging
// transposes.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace forja {

class CausalLM;
class LinearImpl;

struct LoraOptions {
  int64_t rank = 16;
  double alpha = 32;
  double dropout = 0.0;
  bool use_rslora = false;
  // Module names as PEFT matches them: a projection is adapted when its full name equals a target or ends
  // with
  // "." + target (so "c_proj" adapts GPT-2's attn.c_proj and mlp.c_proj).
  std::vector<std::string> target_modules = {"q_proj",    "k_proj",  "v_proj",   "o_proj",
                                             "gate_proj", "up_proj", "down_proj"};
  uint64_t seed = 0;  // for A's initial values
};

double lora_scale(const LoraOptions& options);

// One adapter on one projection. Not a torch::nn::Module on purpose: the base model's named_parameters() stay
// exactly the checkpoint's keys, and the adapter set below owns naming (PEFT's keys) and the parameter list.
struct LoraAdapter {
  at::Tensor lora_A;  // [r, in], fp32, requires grad
  at::Tensor lora_B;  // [out, r], fp32, requires grad
  double scale = 1.0;
  double dropout = 0.0;
  bool enabled = true;
  bool training = false;  // dropout only while training

  // base_out + B(A(dropout(x))) * scale, in x's dtype.
  at::Tensor add_to(const at::Tensor& base_out, const at::Tensor& x) const;
};

// The adapters attached to a model, in a fixed order (sorted by module name).
class LoraAdapters {
 public:
  struct Entry {
    std::string module;  // Hugging Face module name, e.g. "model.layers.0.self_attn.q_proj"
    std::shared_ptr<LoraAdapter> adapter;
    at::Tensor base_weight;  // the frozen projection weight ([out, in], or [in, out] when fan_in_fan_out);
                             // undefined while the base is held in NF4 (QLoRA)
    bool fan_in_fan_out = false;
    LinearImpl* linear = nullptr;  // the projection, for a Linear (merging dequantizes an NF4 base first)
  };

  // Attaches fresh adapters (PEFT init) to every targeted projection of `model`; throws forja::Error when a
  // target matches nothing (a misspelt name would otherwise train nothing).
  static std::shared_ptr<LoraAdapters> attach(CausalLM& model, const LoraOptions& options);
  // Removes the adapters from the model's projections (the base is as it was loaded).
  ~LoraAdapters();
  LoraAdapters(const LoraAdapters&) = delete;
  LoraAdapters& operator=(const LoraAdapters&) = delete;

  const LoraOptions& options() const { return options_; }
  const std::vector<Entry>& entries() const { return entries_; }
  // A then B of each entry, in entries() order: the optimizer's parameter list.
  std::vector<at::Tensor> parameters() const;
  // PEFT's saved key of each parameter, parallel to parameters():
  // "base_model.model.<module>.lora_A.weight".
  std::vector<std::string> parameter_names() const;
  int64_t parameter_count() const;

  void set_enabled(bool enabled);    // off: the model computes exactly the base model
  void set_training(bool training);  // dropout on/off

  // W += scale * B A (transposed for Conv1D) on every adapted projection, then the adapters are disabled. For
  // export: the model then is the merged model. An NF4 base projection is first dequantized to `nf4_dtype`
  // (the adapter was trained against the dequantized values) and becomes a plain `weight` parameter again.
  void merge_into_base(at::ScalarType nf4_dtype = at::kBFloat16);

 private:
  LoraAdapters() = default;
  LoraOptions options_;
  std::vector<Entry> entries_;
  std::vector<std::shared_ptr<LoraAdapter>*> slots_;  // where each adapter hangs in the model, for detaching
};

}  // namespace forja
