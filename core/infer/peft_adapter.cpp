#include "peft_adapter.h"

#include <ATen/core/grad_mode.h>

#include "lora_peft.h"

namespace forja::infer {

PeftAdapter read_peft_adapter(CausalLM& model, const std::filesystem::path& dir) {
  at::NoGradGuard no_grad;
  PeftAdapter out;
  out.dir = dir;
  // The trainer's loader attaches the adapters to the model's projections; take their tensors and let the
  // LoraAdapters go out of scope, which detaches them again (the decoder applies them itself).
  std::shared_ptr<LoraAdapters> adapters = load_peft_adapter(model, dir);
  out.scale = lora_scale(adapters->options());
  for (const auto& e : adapters->entries())
    out.modules[e.module] = {e.adapter->lora_A.detach().clone(), e.adapter->lora_B.detach().clone()};
  return out;
}

}  // namespace forja::infer
