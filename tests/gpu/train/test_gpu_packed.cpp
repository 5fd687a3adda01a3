// Packed padding-free training on CUDA in bf16: variable-length flash attention over cumulative sequence
// lengths (no [T, T] mask), positions restarting per example. (a) The kernel through
// compat::varlen_attention, GQA with and without a sliding window, against per-sequence fp32 attention,
// output and input gradients. (b) On the Llama-family fixture models, packed rows against the same examples
// one by one: per-example losses, step loss and LoRA gradients within the bf16 bar of 1%.
#include <ATen/ATen.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/cuda.h>

#include <cstdio>

#include "gpu_harness.h"
#include "layers.h"
#include "packed_check.h"
#include "reference.h"
#include "torch_compat.h"

namespace {

// bf16 inputs and outputs: a few parts in a thousand for attention, 1% for a whole model (the bar).
constexpr double kKernelTol = 1e-2, kModelTol = 1e-2;

// Causal attention of one sequence in fp32, keys limited to `window_left` earlier positions when >= 0.
at::Tensor reference_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, double scale,
                               int64_t window_left) {
  const int64_t t = q.size(0), n_rep = q.size(1) / k.size(1);
  at::Tensor qf = q.to(at::kFloat).transpose(0, 1);                              // [H, t, D]
  at::Tensor kf = k.to(at::kFloat).repeat_interleave(n_rep, 1).transpose(0, 1);  // [H, t, D]
  at::Tensor vf = v.to(at::kFloat).repeat_interleave(n_rep, 1).transpose(0, 1);
  at::Tensor scores = at::matmul(qf, kf.transpose(-2, -1)) * scale;
  at::Tensor i = at::arange(t, q.options().dtype(at::kLong)).unsqueeze(1), j = i.transpose(0, 1);
  at::Tensor allowed = j <= i;
  if (window_left >= 0) allowed = allowed & (i - j <= window_left);
  scores = scores.masked_fill(allowed.logical_not(), -INFINITY);
  return at::matmul(at::softmax(scores, -1), vf).transpose(0, 1);  // [t, H, D]
}

void kernel_matches_reference(int64_t window_left) {
  const std::vector<int64_t> lengths = {37, 128, 5, 300, 1};
  const int64_t heads = 8, kv = 2, dim = 64;
  int64_t total = 0, longest = 0;
  std::vector<int32_t> cu{0};
  for (int64_t n : lengths)
    total += n, longest = std::max(longest, n), cu.push_back(static_cast<int32_t>(total));
  auto opts = at::TensorOptions().dtype(at::kBFloat16).device(at::kCUDA);
  at::Tensor q = at::randn({total, heads, dim}, opts).requires_grad_(true);
  at::Tensor k = at::randn({total, kv, dim}, opts).requires_grad_(true);
  at::Tensor v = at::randn({total, kv, dim}, opts).requires_grad_(true);
  at::Tensor cu_t = at::tensor(cu, at::TensorOptions().dtype(at::kInt)).to(at::kCUDA);
  const double scale = 1.0 / 8.0;
  at::Tensor out = forja::compat::varlen_attention(q, k, v, cu_t, longest, scale, window_left);
  FORJA_CHECK(out.defined(), "this LibTorch's varlen flash attention is not callable (window %lld)",
              static_cast<long long>(window_left));
  if (!out.defined()) return;
  at::Tensor grad_out = at::randn_like(out);
  auto got = torch::autograd::grad({out}, {q, k, v}, {grad_out});
  // The reference, sequence by sequence, from the same inputs upcast.
  at::Tensor qr = q.detach().to(at::kFloat).requires_grad_(true),
             kr = k.detach().to(at::kFloat).requires_grad_(true),
             vr = v.detach().to(at::kFloat).requires_grad_(true);
  std::vector<at::Tensor> parts;
  for (size_t s = 0; s + 1 < cu.size(); ++s) {
    const int64_t a = cu[s], n = cu[s + 1] - cu[s];
    parts.push_back(
        reference_attention(qr.narrow(0, a, n), kr.narrow(0, a, n), vr.narrow(0, a, n), scale, window_left));
  }
  at::Tensor ref = at::cat(parts, 0);
  auto want = torch::autograd::grad({ref}, {qr, kr, vr}, {grad_out.to(at::kFloat)});
  const double e_out = forja_test::relative_error(out, ref);
  const double e_q = forja_test::relative_error(got[0], want[0]),
               e_k = forja_test::relative_error(got[1], want[1]),
               e_v = forja_test::relative_error(got[2], want[2]);
  std::printf("attention varlen (window %lld): out %.2e, dq %.2e, dk %.2e, dv %.2e\n",
              static_cast<long long>(window_left), e_out, e_q, e_k, e_v);
  FORJA_CHECK(e_out <= kKernelTol && e_q <= kKernelTol && e_k <= kKernelTol && e_v <= kKernelTol,
              "varlen attention off its fp32 reference");
}

void model_packed_matches_one_by_one(const std::string& name) {
  auto lm = forja::load_causal_lm(forja_test::fixture_dir(name), {at::kBFloat16, at::Device(at::kCUDA, 0)});
  // The model takes the varlen path for these tensors (else this would test the dense mask again).
  at::Tensor probe = at::zeros({1, 1}, at::TensorOptions().dtype(at::kBFloat16).device(at::kCUDA));
  const bool varlen = forja::compat::varlen_attention_applies(probe, lm->config().head_dim);
  FORJA_CHECK(varlen, "%s: the packed path would use the dense mask", name.c_str());
  auto adapters = forja_test::random_lora(*lm, 11);
  const auto examples =
      forja_test::random_examples({9, 14, 5, 20, 11, 3, 17, 40, 2, 60}, lm->config().vocab_size, 5);
  const auto r = forja_test::compare_packed(*lm, *adapters, examples, 4, 64);
  std::printf("packed %s bf16: losses %.2e, step loss %.2e, gradients %.2e, leak %.2e (%lld examples)\n",
              name.c_str(), r.worst_loss, r.step_loss_error, r.worst_grad, r.leak_loss,
              static_cast<long long>(r.examples));
  FORJA_CHECK(r.examples == 10, "%s: %lld examples compared", name.c_str(),
              static_cast<long long>(r.examples));
  FORJA_CHECK(r.grad_norm > 0, "%s: zero gradient", name.c_str());
  FORJA_CHECK(r.worst_loss <= kModelTol, "%s: per-example loss %.3e", name.c_str(), r.worst_loss);
  FORJA_CHECK(r.step_loss_error <= kModelTol, "%s: step loss %.3e", name.c_str(), r.step_loss_error);
  FORJA_CHECK(r.worst_grad <= kModelTol, "%s: LoRA gradients %.3e", name.c_str(), r.worst_grad);
}

}  // namespace

int main() {
  if (!torch::cuda::is_available()) forja_test::skip("no CUDA device");
  at::manual_seed(3);
  kernel_matches_reference(-1);
  kernel_matches_reference(7);  // Mistral's window of 8: a query sees itself and 7 earlier keys
  for (const std::string name : {"llama", "llama3", "mistral", "qwen2", "smollm"})
    model_packed_matches_one_by_one(name);
  return forja_test::finish("test_gpu_packed");
}
