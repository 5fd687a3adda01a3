// The fused CUDA kernels of kernels/fused (issue 9) as autograd operations: RMSNorm (with the residual add
// fused in), rotary embedding, SwiGLU and GELU-tanh. The model code asks applies() and otherwise runs its own
// stock LibTorch formulation, which stays the fallback and the reference.
//
// They exist in a build with nvcc (forja_kernels_fused) and a LibTorch with CUDA; FORJA_KERNELS in the
// environment picks at run time: unset or "auto" uses them where they apply, "off" never does, "on" insists
// (and the first use fails loudly in a build without them). Each saves only what its backward needs.
#pragma once

#include <ATen/ATen.h>

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

}  // namespace forja::fused
