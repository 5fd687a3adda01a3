// The fused CUDA kernels of kernels/fused as autograd operations: RMSNorm (with the residual add
// fused in), rotary embedding, SwiGLU and GELU-tanh. The model code asks applies() and otherwise runs its own
// stock LibTorch formulation, which stays the fallback and the reference.
//
// They exist in a build with nvcc (forja_kernels_fused) and a LibTorch with CUDA; FORJA_KERNELS in the
// environment picks at run time: unset or "auto" uses them where they apply, "off" never does, "on" insists
// (and the first use fails loudly in a build without them). Each saves only what its backward needs.
#pragma once

#include <ATen/ATen.h>

#include <functional>
#include <initializer_list>
#include <string>
#include <utility>

namespace forja::fused {

// Whether this build has the kernels (and a CUDA LibTorch to call them with).
bool compiled_in();

// Whether the model uses them now: compiled in and not switched off. Throws forja::Error when FORJA_KERNELS
// asks for them in a build without them, or holds a value other than auto / on / off.
bool active();

// Overrides FORJA_KERNELS for this process (tests and benchmarks compare on and off in one run). Turning them
// on in a build without them throws forja::Error.
void set_enabled(bool on);

// One line for logs and `doctor`: active, off (and why), or not compiled in (and why).
std::string describe();

// active(), and every tensor is a defined, contiguous CUDA tensor of one device and one dtype, fp32 or bf16.
bool applies(std::initializer_list<at::Tensor> tensors);

// The operations. Each needs applies() on its tensors (checked) and throws forja::Error in a build without
// the kernels. Shapes: the normalised / activated dimension is the last one; any leading dimensions.

// x * rsqrt(mean(x²) + eps) * weight over the last dimension. Saves x, weight and 1/rms (fp32, one per row).
at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps);

// h = x + residual and y = rms_norm(h) in one pass; returns {h, y}. Saves h (which the residual stream keeps
// anyway), weight and 1/rms.
std::pair<at::Tensor, at::Tensor> add_rms_norm(const at::Tensor& x, const at::Tensor& residual,
                                               const at::Tensor& weight, double eps);

// Hugging Face's rotate_half rotation of q [..., q_heads, head_dim] and k [..., kv_heads, head_dim] (the same
// leading token dimensions) by the angles whose cos / sin are given per token: [tokens, head_dim / 2], fp32,
// contiguous, on q's device. Returns new tensors; saves only the tables.
std::pair<at::Tensor, at::Tensor> rotary(const at::Tensor& q, const at::Tensor& k, const at::Tensor& cos,
                                         const at::Tensor& sin);

// silu(gate) * up. Saves gate and up.
at::Tensor swiglu(const at::Tensor& gate, const at::Tensor& up);

// GELU with the tanh approximation (GPT-2's gelu_new). Saves x.
at::Tensor gelu_tanh(const at::Tensor& x);

// The softmax / cross-entropy half of the fused LM-head loss on one chunk (not an autograd operation; the
// chunked loss in core/train/loss.cpp drives it): logits [rows, vocab] (fp32 or bf16, contiguous CUDA),
// labels [rows] int64 on the same device. Returns the per-row loss in fp32 (0 where label == ignore_index);
// with write_grad, overwrites `logits` with (softmax - onehot(label)) * grad_scale (zeros on ignored rows).
at::Tensor cross_entropy_rows(const at::Tensor& logits, const at::Tensor& labels, int64_t ignore_index,
                              double grad_scale, bool write_grad);

// ---- LoRA's epilogue and selective activation checkpointing (plain LibTorch: CPU and CUDA alike)

// base_out + (dropout(x) · aᵀ) · bᵀ · scale, with the second product accumulated straight into base_out by
// the GEMM (addmm_ with beta = 1, alpha = scale): no [tokens, out] temporary and no extra pass over the
// output. base_out is modified in place and returned; it must be a projection's fresh output, which no
// backward needs (a linear's backward keeps its input and weight, not its output), so autograd's version
// check holds. a [r, in] and b [out, r] are the fp32 masters, cast to x's dtype under autograd. dropout_p > 0
// draws a mask on the LoRA branch only. A base_out that is not contiguous or not of x's dtype gets the
// out-of-place sum.
at::Tensor lora_add(const at::Tensor& base_out, const at::Tensor& x, const at::Tensor& a, const at::Tensor& b,
                    double scale, double dropout_p);

// Selective activation checkpointing. While one of these is alive on this thread, a LoRA adapter (lora_add)
// whose input is exactly `value` does not keep that tensor for its backward but `remake`, which computes it
// again from tensors the model keeps anyway (a norm's input, SwiGLU's gate and up): the cheap, memory-bound
// op runs twice, the GEMMs once. remake must give the same values as the forward did (it runs with grad mode
// on, as the forward did, and its result is detached).
class RecomputableInput {
 public:
  RecomputableInput(const at::Tensor& value, std::function<at::Tensor()> remake);
  ~RecomputableInput();
  RecomputableInput(const RecomputableInput&) = delete;
  RecomputableInput& operator=(const RecomputableInput&) = delete;
};

}  // namespace forja::fused
