// The fused training pieces on CUDA. (1) The chunked LM-head loss (core/train/loss.cpp) with the fused
// cross-entropy kernel against the same loss on the LibTorch formulation (FORJA_KERNELS off), in fp32 and
// bf16, at odd N / V / H with ignored rows and several chunk sizes: the summed loss and the hidden states'
// gradient. Bars: relative error <= 1e-5 in fp32, <= 1e-2 in bf16. (2) LoRA training on the llama
// fixture in bf16 with selective checkpointing against without: the same loss and adapter gradients (the same
// kernels run in the same order; only the A gradient's GEMM is arranged differently), within the bf16 bar.
#include <ATen/ATen.h>
#include <torch/cuda.h>

#include <cstdio>
#include <string>
#include <vector>

#include "causal_lm.h"
#include "fused_ops.h"
#include "gpu_harness.h"
#include "lora_linear.h"
#include "loss.h"
#include "reference.h"

namespace {

struct LossResult {
  at::Tensor loss, grad;
};

LossResult run_loss(const at::Tensor& hidden, const at::Tensor& head, const at::Tensor& labels, int64_t chunk,
                    bool kernels) {
  forja::fused::set_enabled(kernels);
  at::Tensor h = hidden.detach().clone().requires_grad_(true);
  at::Tensor loss = forja::train::linear_cross_entropy_sum(h, head, labels, chunk);
  (loss * 0.5).backward();  // a mean's scale: the gradient is scaled in backward, not in the kernel
  return {loss.detach().cpu(), h.grad().cpu()};
}

void test_loss(at::ScalarType dtype, int64_t n, int64_t v, int64_t hdim, int64_t chunk) {
  const at::Device cuda(at::kCUDA, 0);
  const std::string what = std::string(dtype == at::kFloat ? "fp32" : "bf16") + " N" + std::to_string(n) +
                           " V" + std::to_string(v) + " H" + std::to_string(hdim) + " chunk" +
                           std::to_string(chunk);
  at::manual_seed(7);
  const auto opt = at::TensorOptions().device(cuda);
  at::Tensor hidden = at::randn({n, hdim}, opt).to(dtype);
  at::Tensor head = (at::randn({v, hdim}, opt) * 0.5).to(dtype);
  at::Tensor labels = at::randint(v, {n}, opt.dtype(at::kLong));
  labels.index_fill_(0, at::arange(0, n, 3, opt.dtype(at::kLong)), -100);  // every third row ignored
  const LossResult on = run_loss(hidden, head, labels, chunk, true);
  const LossResult off = run_loss(hidden, head, labels, chunk, false);
  const double tol = dtype == at::kFloat ? 1e-5 : 1e-2;
  const double loss_err = forja_test::relative_error(on.loss, off.loss);
  const double grad_err = forja_test::relative_error(on.grad, off.grad);
  FORJA_CHECK(loss_err <= tol && grad_err <= tol, "%s: loss rel err %.3g, grad rel err %.3g (bar %.0e)",
              what.c_str(), loss_err, grad_err, tol);
  std::printf("%-36s loss %.3g, grad %.3g\n", what.c_str(), loss_err, grad_err);
}

// {loss, every adapter gradient} of one forward/backward of the llama fixture in bf16 on CUDA.
std::vector<at::Tensor> lora_step(bool selective) {
  const at::Device cuda(at::kCUDA, 0);
  auto model = forja::load_causal_lm(forja_test::fixture_dir("llama"), {at::kBFloat16, cuda});
  forja::LoraOptions lo;
  lo.target_modules = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"};
  auto adapters = forja::LoraAdapters::attach(*model, lo);
  {
    at::NoGradGuard no_grad;
    at::manual_seed(3);
    for (auto& p : adapters->parameters()) p.copy_(at::randn_like(p) * 0.05);  // nonzero B: A gets gradients
  }
  adapters->set_training(true);
  at::Tensor ids = forja_test::expected("llama", "input_ids").to(cuda);
  forja::ForwardOptions fo;
  fo.selective_checkpointing = selective;
  at::Tensor h = model->hidden_states(ids, fo);
  at::Tensor labels = ids.roll(-1, 1).reshape({-1}).contiguous();
  at::Tensor loss =
      forja::train::linear_cross_entropy_sum(h.reshape({-1, h.size(-1)}), model->head_weight(), labels, 7);
  loss.backward();
  std::vector<at::Tensor> out{loss.detach().to(at::kDouble).cpu()};
  for (auto& p : adapters->parameters()) out.push_back(p.grad().cpu());
  return out;
}

}  // namespace

int main() {
  if (!torch::cuda::is_available()) forja_test::skip("no CUDA GPU visible (or this LibTorch has no CUDA)");
  FORJA_CHECK(forja::fused::compiled_in(), "%s", forja::fused::describe().c_str());
  if (!forja::fused::compiled_in()) return forja_test::finish("gpu fused loss");
  at::globalContext().setAllowTF32CuBLAS(false);  // fp32 means fp32 matmuls on both sides

  for (at::ScalarType dtype : {at::kFloat, at::kBFloat16}) {
    test_loss(dtype, 37, 1001, 72, 16);     // odd vocabulary: the kernel's element-wise path
    test_loss(dtype, 64, 4096, 128, 64);    // vector path, one chunk
    test_loss(dtype, 300, 32000, 64, 128);  // a real vocabulary, a short last chunk
    test_loss(dtype, 5, 3, 7, 2);           // tiny everything
  }

  for (bool kernels : {true, false}) {
    forja::fused::set_enabled(kernels);
    const auto plain = lora_step(false), selective = lora_step(true);
    double worst = 0;
    for (size_t i = 0; i < plain.size(); ++i) {
      const double err = forja_test::relative_error(selective[i], plain[i]);
      worst = std::max(worst, err);
      FORJA_CHECK(err <= 1e-2, "selective checkpointing (kernels %s): tensor %zu rel err %.3g",
                  kernels ? "on" : "off", i, err);
    }
    std::printf("selective checkpointing, kernels %-3s loss + %zu adapter grads: worst rel err %.3g\n",
                kernels ? "on" : "off", plain.size() - 1, worst);
  }
  return forja_test::finish("gpu fused loss");
}
