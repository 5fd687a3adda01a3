// Reference parity on CUDA: every fixture model in fp32 (max abs error <= 1e-4 vs transformers' fp32 CPU
// logits, widened to 2e-4 where cuBLAS may reorder sums) and in bf16 (relative error <= 2e-2), the parity
// bars.
#include <ATen/core/grad_mode.h>
#include <torch/cuda.h>

#include <cstdio>

#include "causal_lm.h"
#include "gpu_harness.h"
#include "reference.h"

int main() {
  if (!torch::cuda::is_available()) forja_test::skip("no CUDA GPU visible (or this LibTorch has no CUDA)");
  at::NoGradGuard no_grad;
  at::globalContext().setAllowTF32CuBLAS(false);  // fp32 parity means true fp32 matmuls
  for (const auto& name : forja_test::fixture_models()) {
    at::Tensor ids = forja_test::expected(name, "input_ids").cuda();
    at::Tensor ref = forja_test::expected(name, "logits");
    auto fp32 = forja::load_causal_lm(forja_test::fixture_dir(name), {at::kFloat, at::Device(at::kCUDA, 0)});
    const double abs32 = forja_test::max_abs_error(fp32->forward(ids), ref);
    auto bf16 =
        forja::load_causal_lm(forja_test::fixture_dir(name), {at::kBFloat16, at::Device(at::kCUDA, 0)});
    const double rel16 = forja_test::relative_error(bf16->forward(ids), ref);
    std::printf("%-8s fp32 max abs err %.3g   bf16 rel err %.3g\n", name.c_str(), abs32, rel16);
    FORJA_CHECK(abs32 <= 2e-4, "%s fp32 on CUDA: %g", name.c_str(), abs32);
    FORJA_CHECK(rel16 <= 2e-2, "%s bf16 on CUDA: %g", name.c_str(), rel16);
  }
  return forja_test::finish("gpu model parity");
}
