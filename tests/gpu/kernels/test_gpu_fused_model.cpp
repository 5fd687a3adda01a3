// The fixture models on CUDA with the fused kernels on and off (core/model/fused_ops.h): fp32 logits and the
// gradients that reach the model's own weights without any LoRA adapter (the token embedding, which every
// token's input gradient flows into, and the norm weights) agree within 1e-5 relative (the fp32 bar),
// for a plain forward and for a packed batch (per-row positions, segments) with block recomputation. bf16
// logits with the kernels stay within the bf16 parity bar (2e-2 relative to transformers' fp32 logits, as the
// GPU parity suite).
#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <torch/cuda.h>

#include <cstdio>
#include <map>
#include <string>

#include "causal_lm.h"
#include "fused_ops.h"
#include "gpu_harness.h"
#include "reference.h"

namespace {

struct Result {
  at::Tensor logits;
  std::map<std::string, at::Tensor> grads;
};

bool is_lora_free_input(const std::string& name) {
  return name.find("embed_tokens") != std::string::npos || name.find("wte") != std::string::npos ||
         name.find("norm") != std::string::npos;
}

// Forward + backward of sum(logits * probe) with the kernels on or off.
Result run(forja::CausalLM& model, const at::Tensor& ids, const forja::ForwardOptions& options,
           const at::Tensor& probe, bool kernels) {
  forja::fused::set_enabled(kernels);
  for (auto& p : model.named_parameters())
    if (p.value().requires_grad()) p.value().mutable_grad() = at::Tensor();
  at::Tensor logits = model.logits(model.hidden_states(ids, options));
  (logits.to(at::kFloat) * probe).sum().backward();
  Result r{logits.detach().cpu(), {}};
  for (auto& p : model.named_parameters())
    if (p.value().requires_grad()) r.grads[p.key()] = p.value().grad().detach().cpu();
  return r;
}

void compare(const std::string& what, const Result& on, const Result& off) {
  const double logits_err = forja_test::relative_error(on.logits, off.logits);
  FORJA_CHECK(logits_err <= 1e-5, "%s logits: rel err %.3g", what.c_str(), logits_err);
  double worst = 0;
  for (const auto& [name, g] : off.grads) {
    const double err = forja_test::relative_error(on.grads.at(name), g);
    worst = std::max(worst, err);
    FORJA_CHECK(err <= 1e-5, "%s grad of %s: rel err %.3g", what.c_str(), name.c_str(), err);
  }
  std::printf("%-28s logits %.2g, worst of %zu gradients %.2g\n", what.c_str(), logits_err, off.grads.size(),
              worst);
}

}  // namespace

int main() {
  if (!torch::cuda::is_available()) forja_test::skip("no CUDA GPU visible (or this LibTorch has no CUDA)");
  // The suite is only built with forja_kernels_fused; a CUDA LibTorch without them compiled in is a build
  // error.
  FORJA_CHECK(forja::fused::compiled_in(), "%s", forja::fused::describe().c_str());
  if (!forja::fused::compiled_in()) return forja_test::finish("gpu fused model");
  at::globalContext().setAllowTF32CuBLAS(false);  // fp32 means fp32 matmuls in both runs
  const at::Device cuda(at::kCUDA, 0);

  forja::fused::set_enabled(true);
  FORJA_CHECK(forja::fused::applies({at::zeros({4, 8}, at::TensorOptions().device(cuda))}),
              "the kernels do not take a contiguous fp32 CUDA tensor");

  for (const auto& name : forja_test::fixture_models()) {
    at::Tensor ids = forja_test::expected(name, "input_ids").to(cuda);
    const int64_t b = ids.size(0), t = ids.size(1);
    auto model = forja::load_causal_lm(forja_test::fixture_dir(name), {at::kFloat, cuda});
    for (auto& p : model->named_parameters())
      if (is_lora_free_input(p.key())) p.value().requires_grad_(true);
    at::manual_seed(0);
    const at::Tensor probe = at::randn({b, t, model->config().vocab_size}, at::TensorOptions().device(cuda));

    compare(name + " plain", run(*model, ids, {}, probe, true), run(*model, ids, {}, probe, false));

    // Two packed examples per row: positions restart at t/2, attention stays inside each half.
    forja::ForwardOptions packed;
    at::Tensor pos = at::arange(t, at::TensorOptions().dtype(at::kLong).device(cuda)).remainder(t / 2);
    packed.position_ids = pos.unsqueeze(0).expand({b, t}).contiguous();
    packed.segment_ids =
        (at::arange(t, pos.options()) >= t / 2).to(at::kLong).unsqueeze(0).expand({b, t}).contiguous();
    packed.recompute_blocks = true;
    compare(name + " packed, recompute", run(*model, ids, packed, probe, true),
            run(*model, ids, packed, probe, false));

    auto bf16 = forja::load_causal_lm(forja_test::fixture_dir(name), {at::kBFloat16, cuda});
    forja::fused::set_enabled(true);
    at::NoGradGuard no_grad;
    const double rel16 = forja_test::relative_error(bf16->forward(ids), forja_test::expected(name, "logits"));
    std::printf("%-28s bf16 logits vs transformers fp32: rel err %.3g\n", name.c_str(), rel16);
    FORJA_CHECK(rel16 <= 2e-2, "%s bf16 with the kernels: rel err %.3g", name.c_str(), rel16);
  }
  return forja_test::finish("gpu fused model");
}
