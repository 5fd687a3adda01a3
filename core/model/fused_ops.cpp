#include "fused_ops.h"

#include <torch/csrc/autograd/custom_function.h>

#include <atomic>
#include <cstdlib>
#include <vector>

#include "forja/error.h"

// The CUDA-calling half needs the kernels (FORJA_HAS_KERNELS_fused, from linking forja_kernels_fused) and a
// LibTorch with CUDA (FORJA_TORCH_CUDA, from cmake/ForjaTorch.cmake).
#if FORJA_TORCH_CUDA && defined(FORJA_HAS_KERNELS_fused)
#define FORJA_FUSED_OPS 1
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include "forja_kernels/fused.h"
#else
#define FORJA_FUSED_OPS 0
#endif

namespace forja::fused {
namespace {

enum class Mode { Auto, Off, On };

Mode env_mode() {
  static const Mode mode = [] {
    const char* v = std::getenv("FORJA_KERNELS");
    const std::string s = v ? v : "";
    if (s.empty() || s == "auto") return Mode::Auto;
    if (s == "off" || s == "0") return Mode::Off;
    if (s == "on" || s == "1") return Mode::On;
    throw Error("FORJA_KERNELS=" + s + " is not a setting", "Use auto (the default), on or off.");
  }();
  return mode;
}

std::atomic<int> g_override{-1};  // -1: FORJA_KERNELS decides; 0 off; 1 on

// A literal (not a runtime concatenation) so that describe() can splice it in at compile time.
#if !FORJA_TORCH_CUDA
#define FORJA_FUSED_NOT_COMPILED_WHY "this build's LibTorch has no CUDA"
#else
#define FORJA_FUSED_NOT_COMPILED_WHY \
  "this build has no forja_kernels_fused (configured without nvcc, or FORJA_CUDA_KERNELS=OFF)"
#endif
const char* kNotCompiled = FORJA_FUSED_NOT_COMPILED_WHY;

[[noreturn]] void throw_not_compiled() {
  throw Error(std::string("the fused CUDA kernels are not in this build: ") + kNotCompiled,
              "Build with nvcc and a CUDA LibTorch (cmake --preset cuda), or unset FORJA_KERNELS.");
}

}  // namespace

bool compiled_in() {
  return FORJA_FUSED_OPS;
}

bool active() {
  const int o = g_override.load(std::memory_order_relaxed);
  if (o >= 0) return o == 1;
  switch (env_mode()) {
    case Mode::Off:
      return false;
    case Mode::On:
      if (!compiled_in()) throw_not_compiled();
      return true;
    case Mode::Auto:
      break;
  }
  return compiled_in();
}

void set_enabled(bool on) {
  if (on && !compiled_in()) throw_not_compiled();
  g_override.store(on ? 1 : 0, std::memory_order_relaxed);
}

std::string describe() {
  // One literal: GCC 12 flags building this string at run time (-Warray-bounds, a false positive).
  if (!compiled_in()) return "fused kernels: not compiled in (" FORJA_FUSED_NOT_COMPILED_WHY ")";
  if (active()) return "fused kernels: active";
  return g_override.load() == 0 ? "fused kernels: off (switched off in this process)"
                                : "fused kernels: off (FORJA_KERNELS=off)";
}

bool applies(std::initializer_list<at::Tensor> tensors) {
  if (!active() || tensors.size() == 0) return false;
  const at::Tensor& first = *tensors.begin();
  if (!first.defined()) return false;
  const at::ScalarType dtype = first.scalar_type();
  if (dtype != at::kFloat && dtype != at::kBFloat16) return false;
  for (const at::Tensor& t : tensors)
    if (!t.defined() || !t.is_cuda() || !t.is_contiguous() || t.scalar_type() != dtype ||
        t.device() != first.device())
      return false;
  return true;
}

#if FORJA_FUSED_OPS
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

ForjaFusedDType dtype_of(const at::Tensor& t) {
  return t.scalar_type() == at::kFloat ? FORJA_FUSED_F32 : FORJA_FUSED_BF16;
}

cudaStream_t current_stream() {
  return at::cuda::getCurrentCUDAStream().stream();
}

void check_launch(const char* err, const char* what) {
  TORCH_CHECK(err == nullptr, "fused ", what, ": ", err);
}

void check_applies(std::initializer_list<at::Tensor> tensors, const char* what) {
  TORCH_CHECK(applies(tensors), "fused ", what,
              ": needs contiguous CUDA tensors of one device and dtype (fp32 or bf16), and the kernels on");
}

// The gradient as a contiguous tensor of `like`'s dtype; zeros where autograd passes none.
at::Tensor grad_or_zeros(const at::Tensor& grad, const at::Tensor& like) {
  if (!grad.defined()) return at::zeros_like(like);
  return grad.to(like.scalar_type()).contiguous();
}

// dh (and dweight when asked for) of the RMSNorm whose normalised input was h.
std::pair<at::Tensor, at::Tensor> rms_norm_backward(const at::Tensor& h, const at::Tensor& weight,
                                                    const at::Tensor& rstd, const at::Tensor& grad_y,
                                                    const at::Tensor& grad_h, bool want_dweight) {
  const c10::cuda::CUDAGuard guard(h.device());
  const int64_t cols = h.size(-1), rows = h.numel() / cols;
  at::Tensor dy = grad_or_zeros(grad_y, h);
  at::Tensor dh_in = grad_h.defined() ? grad_h.to(h.scalar_type()).contiguous() : at::Tensor();
  at::Tensor dh = at::empty_like(h);
  at::Tensor dweight, workspace;
  if (want_dweight) {
    dweight = at::empty({cols}, h.options().dtype(at::kFloat));
    const int64_t bytes = static_cast<int64_t>(forja_fused_rmsnorm_backward_workspace_bytes(rows, cols));
    workspace = at::empty({bytes > 0 ? bytes : 1}, h.options().dtype(at::kByte));
  }
  ForjaRmsNormBackward p{dtype_of(h),
                         rows,
                         cols,
                         dy.data_ptr(),
                         dh_in.defined() ? dh_in.data_ptr() : nullptr,
                         h.data_ptr(),
                         weight.data_ptr(),
                         rstd.data_ptr<float>(),
                         dh.data_ptr(),
                         want_dweight ? dweight.data_ptr<float>() : nullptr,
                         want_dweight ? workspace.data_ptr() : nullptr};
  check_launch(forja_fused_rmsnorm_backward(&p, current_stream()), "rmsnorm backward");
  return {dh, want_dweight ? dweight.to(weight.scalar_type()) : at::Tensor()};
}

// Runs the RMSNorm forward into y (and h when a residual is given); returns 1/rms per row.
at::Tensor rms_norm_forward(const at::Tensor& x, const at::Tensor& residual, const at::Tensor& weight,
                            double eps, const at::Tensor& h, const at::Tensor& y) {
  const c10::cuda::CUDAGuard guard(x.device());
  const int64_t cols = x.size(-1), rows = x.numel() / cols;
  TORCH_CHECK(weight.numel() == cols, "fused rmsnorm: weight has ", weight.numel(), " elements for rows of ",
              cols);
  at::Tensor rstd = at::empty({rows}, x.options().dtype(at::kFloat));
  ForjaRmsNormForward p{dtype_of(x),
                        rows,
                        cols,
                        static_cast<float>(eps),
                        x.data_ptr(),
                        residual.defined() ? residual.data_ptr() : nullptr,
                        weight.data_ptr(),
                        residual.defined() ? h.data_ptr() : nullptr,
                        y.data_ptr(),
                        rstd.data_ptr<float>()};
  check_launch(forja_fused_rmsnorm_forward(&p, current_stream()), "rmsnorm forward");
  return rstd;
}

struct RmsNormFn : torch::autograd::Function<RmsNormFn> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& weight, double eps) {
    at::Tensor y = at::empty_like(x);
    at::Tensor rstd = rms_norm_forward(x, at::Tensor(), weight, eps, at::Tensor(), y);
    ctx->save_for_backward({x, weight, rstd});
    return y;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const variable_list saved = ctx->get_saved_variables();
    auto [dx, dweight] =
        rms_norm_backward(saved[0], saved[1], saved[2], grads[0], at::Tensor(), ctx->needs_input_grad(1));
    return {dx, dweight, at::Tensor()};
  }
};

// Outputs {h, y}; h is saved as an output (it is the residual stream, alive anyway).
struct AddRmsNormFn : torch::autograd::Function<AddRmsNormFn> {
  static variable_list forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& residual,
                               const at::Tensor& weight, double eps) {
    at::Tensor h = at::empty_like(x), y = at::empty_like(x);
    at::Tensor rstd = rms_norm_forward(x, residual, weight, eps, h, y);
    ctx->save_for_backward({h, weight, rstd});
    return {h, y};
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const variable_list saved = ctx->get_saved_variables();
    auto [dh, dweight] =
        rms_norm_backward(saved[0], saved[1], saved[2], grads[1], grads[0], ctx->needs_input_grad(2));
    return {dh, dh, dweight, at::Tensor()};  // h = x + residual: both receive dh
  }
};

// Rotates q and k (either may be undefined: its heads are skipped) from the sources into the destinations; a
// destination equal to its source rotates in place.
void launch_rope(const at::Tensor& q_dst, const at::Tensor& k_dst, const at::Tensor& q_src,
                 const at::Tensor& k_src, const at::Tensor& cos, const at::Tensor& sin, bool backward) {
  const at::Tensor& any = q_dst.defined() ? q_dst : k_dst;
  const c10::cuda::CUDAGuard guard(any.device());
  const int64_t dim = any.size(-1);
  const int64_t tokens = any.numel() / (any.size(-2) * dim);
  TORCH_CHECK(cos.dim() == 2 && cos.size(0) == tokens && cos.size(1) == dim / 2 && sin.sizes() == cos.sizes(),
              "fused rotary: cos/sin must be [tokens, head_dim / 2] = [", tokens, ", ", dim / 2, "], got ",
              cos.sizes());
  ForjaRope p{dtype_of(any),
              tokens,
              q_dst.defined() ? q_dst.size(-2) : 0,
              k_dst.defined() ? k_dst.size(-2) : 0,
              dim,
              q_dst.defined() ? q_dst.data_ptr() : nullptr,
              k_dst.defined() ? k_dst.data_ptr() : nullptr,
              q_dst.defined() && !q_dst.is_same(q_src) ? q_src.data_ptr() : nullptr,
              k_dst.defined() && !k_dst.is_same(k_src) ? k_src.data_ptr() : nullptr,
              cos.data_ptr<float>(),
              sin.data_ptr<float>(),
              nullptr};
  const cudaStream_t stream = current_stream();
  check_launch(backward ? forja_fused_rope_backward(&p, stream) : forja_fused_rope_forward(&p, stream),
               "rotary");
}

// A gradient to rotate back: a fresh contiguous copy is rotated in place, an incoming contiguous gradient
// (which autograd may share) into a new tensor. Returns {destination, source}; undefined for an undefined
// gradient.
std::pair<at::Tensor, at::Tensor> rope_grad_buffers(const at::Tensor& grad) {
  if (!grad.defined()) return {};
  if (grad.is_contiguous()) return {at::empty_like(grad), grad};
  at::Tensor copy = grad.contiguous();
  return {copy, copy};
}

struct RopeFn : torch::autograd::Function<RopeFn> {
  static variable_list forward(AutogradContext* ctx, const at::Tensor& q, const at::Tensor& k,
                               const at::Tensor& cos, const at::Tensor& sin) {
    at::Tensor q_out = at::empty_like(q), k_out = at::empty_like(k);
    launch_rope(q_out, k_out, q, k, cos, sin, /*backward=*/false);
    ctx->save_for_backward({cos, sin});
    return {q_out, k_out};
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const variable_list saved = ctx->get_saved_variables();
    auto [dq, dq_src] = rope_grad_buffers(grads[0]);
    auto [dk, dk_src] = rope_grad_buffers(grads[1]);
    if (dq.defined() || dk.defined())
      launch_rope(dq, dk, dq_src, dk_src, saved[0], saved[1], /*backward=*/true);
    return {dq, dk, at::Tensor(), at::Tensor()};
  }
};

struct SwigluFn : torch::autograd::Function<SwigluFn> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& gate, const at::Tensor& up) {
    const c10::cuda::CUDAGuard guard(gate.device());
    at::Tensor out = at::empty_like(gate);
    ForjaSwigluForward p{dtype_of(gate), gate.numel(), gate.data_ptr(), up.data_ptr(), out.data_ptr()};
    check_launch(forja_fused_swiglu_forward(&p, current_stream()), "swiglu forward");
    ctx->save_for_backward({gate, up});
    return out;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const variable_list saved = ctx->get_saved_variables();
    const at::Tensor& gate = saved[0];
    const at::Tensor& up = saved[1];
    const c10::cuda::CUDAGuard guard(gate.device());
    at::Tensor dout = grad_or_zeros(grads[0], gate);
    at::Tensor dgate = at::empty_like(gate), dup = at::empty_like(up);
    ForjaSwigluBackward p{dtype_of(gate), gate.numel(),     dout.data_ptr(), gate.data_ptr(),
                          up.data_ptr(),  dgate.data_ptr(), dup.data_ptr()};
    check_launch(forja_fused_swiglu_backward(&p, current_stream()), "swiglu backward");
    return {dgate, dup};
  }
};

struct GeluTanhFn : torch::autograd::Function<GeluTanhFn> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x) {
    const c10::cuda::CUDAGuard guard(x.device());
    at::Tensor y = at::empty_like(x);
    ForjaGeluForward p{dtype_of(x), x.numel(), x.data_ptr(), y.data_ptr()};
    check_launch(forja_fused_gelu_tanh_forward(&p, current_stream()), "gelu forward");
    ctx->save_for_backward({x});
    return y;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const at::Tensor x = ctx->get_saved_variables()[0];
    const c10::cuda::CUDAGuard guard(x.device());
    at::Tensor dy = grad_or_zeros(grads[0], x);
    at::Tensor dx = at::empty_like(x);
    ForjaGeluBackward p{dtype_of(x), x.numel(), dy.data_ptr(), x.data_ptr(), dx.data_ptr()};
    check_launch(forja_fused_gelu_tanh_backward(&p, current_stream()), "gelu backward");
    return {dx};
  }
};

}  // namespace

at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps) {
  check_applies({x, weight}, "rms_norm");
  return RmsNormFn::apply(x, weight, eps);
}

std::pair<at::Tensor, at::Tensor> add_rms_norm(const at::Tensor& x, const at::Tensor& residual,
                                               const at::Tensor& weight, double eps) {
  check_applies({x, residual, weight}, "add_rms_norm");
  TORCH_CHECK(x.sizes() == residual.sizes(), "fused add_rms_norm: x ", x.sizes(), " vs residual ",
              residual.sizes());
  variable_list out = AddRmsNormFn::apply(x, residual, weight, eps);
  return {out[0], out[1]};
}

std::pair<at::Tensor, at::Tensor> rotary(const at::Tensor& q, const at::Tensor& k, const at::Tensor& cos,
                                         const at::Tensor& sin) {
  check_applies({q, k}, "rotary");
  TORCH_CHECK(cos.scalar_type() == at::kFloat && sin.scalar_type() == at::kFloat && cos.is_contiguous() &&
                  sin.is_contiguous() && cos.device() == q.device() && sin.device() == q.device(),
              "fused rotary: cos/sin must be contiguous fp32 on q's device");
  TORCH_CHECK(q.dim() >= 2 && k.dim() == q.dim() && q.size(-1) == k.size(-1) && q.size(-1) % 2 == 0 &&
                  q.numel() / q.size(-2) == k.numel() / k.size(-2),
              "fused rotary: q ", q.sizes(), " and k ", k.sizes(), " must be [tokens..., heads, head_dim]");
  variable_list out = RopeFn::apply(q, k, cos, sin);
  return {out[0], out[1]};
}

at::Tensor swiglu(const at::Tensor& gate, const at::Tensor& up) {
  check_applies({gate, up}, "swiglu");
  TORCH_CHECK(gate.sizes() == up.sizes(), "fused swiglu: gate ", gate.sizes(), " vs up ", up.sizes());
  return SwigluFn::apply(gate, up);
}

at::Tensor gelu_tanh(const at::Tensor& x) {
  check_applies({x}, "gelu_tanh");
  return GeluTanhFn::apply(x);
}

at::Tensor cross_entropy_rows(const at::Tensor& logits, const at::Tensor& labels, int64_t ignore_index,
                              double grad_scale, bool write_grad) {
  check_applies({logits}, "cross_entropy_rows");
  TORCH_CHECK(
      logits.dim() == 2 && labels.dim() == 1 && labels.size(0) == logits.size(0) &&
          labels.scalar_type() == at::kLong && labels.is_contiguous() && labels.device() == logits.device(),
      "fused cross_entropy_rows: logits [rows, vocab] and contiguous int64 labels [rows] on one device");
  const c10::cuda::CUDAGuard guard(logits.device());
  at::Tensor loss = at::empty({logits.size(0)}, logits.options().dtype(at::kFloat));
  ForjaCrossEntropy p{dtype_of(logits),
                      logits.size(0),
                      logits.size(1),
                      ignore_index,
                      static_cast<float>(grad_scale),
                      write_grad ? 1 : 0,
                      logits.data_ptr(),
                      labels.data_ptr<int64_t>(),
                      loss.data_ptr<float>(),
                      nullptr};
  check_launch(forja_fused_cross_entropy(&p, current_stream()), "cross entropy");
  return loss;
}

#else  // the kernels are not in this build: asking for them fails loudly

at::Tensor rms_norm(const at::Tensor&, const at::Tensor&, double) {
  throw_not_compiled();
}
std::pair<at::Tensor, at::Tensor> add_rms_norm(const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                               double) {
  throw_not_compiled();
}
std::pair<at::Tensor, at::Tensor> rotary(const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                         const at::Tensor&) {
  throw_not_compiled();
}
at::Tensor swiglu(const at::Tensor&, const at::Tensor&) {
  throw_not_compiled();
}
at::Tensor gelu_tanh(const at::Tensor&) {
  throw_not_compiled();
}
at::Tensor cross_entropy_rows(const at::Tensor&, const at::Tensor&, int64_t, double, bool) {
  throw_not_compiled();
}

#endif

namespace {

struct Remake {
  const c10::TensorImpl* value;
  std::function<at::Tensor()> fn;
};

thread_local std::vector<Remake> t_remakes;

const std::function<at::Tensor()>* find_remake(const at::Tensor& x) {
  for (auto it = t_remakes.rbegin(); it != t_remakes.rend(); ++it)
    if (it->value == x.unsafeGetTensorImpl()) return &it->fn;
  return nullptr;
}

struct RemakeHolder : torch::CustomClassHolder {
  std::function<at::Tensor()> fn;
};

// xa = x · aᵀ keeping, instead of x, the function that remakes it. Backward is the linear's: grad_x = g · a,
// grad_a = gᵀ · x over the flattened tokens.
struct LoraDownFn : torch::autograd::Function<LoraDownFn> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& x, const at::Tensor& a,
                            c10::intrusive_ptr<RemakeHolder> remake) {
    ctx->saved_data["remake"] = at::IValue::make_capsule(std::move(remake));
    ctx->save_for_backward({a});
    return at::linear(x, a);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const at::Tensor a = ctx->get_saved_variables()[0];
    const at::Tensor& g = grads[0];
    at::Tensor grad_x, grad_a;
    if (ctx->needs_input_grad(0)) grad_x = at::matmul(g, a);
    if (ctx->needs_input_grad(1)) {
      auto holder = c10::static_intrusive_pointer_cast<RemakeHolder>(ctx->saved_data["remake"].toCapsule());
      at::Tensor x;
      {
        const at::AutoGradMode grad_on(true);
        x = holder->fn().detach();
      }
      grad_a = at::matmul(g.reshape({-1, g.size(-1)}).t(), x.reshape({-1, x.size(-1)}));
    }
    return {grad_x, grad_a, at::Tensor()};
  }
};

}  // namespace

RecomputableInput::RecomputableInput(const at::Tensor& value, std::function<at::Tensor()> remake) {
  t_remakes.push_back({value.unsafeGetTensorImpl(), std::move(remake)});
}

RecomputableInput::~RecomputableInput() {
  t_remakes.pop_back();
}

at::Tensor lora_add(const at::Tensor& base_out, const at::Tensor& x, const at::Tensor& a, const at::Tensor& b,
                    double scale, double dropout_p) {
  const at::ScalarType dt = x.scalar_type();
  // Casting the fp32 masters to the activations' dtype is a differentiable op: the gradient reaches the
  // masters in fp32. In fp32 the casts are no-ops and the maths is PEFT's, term for term.
  const at::Tensor ad = a.scalar_type() == dt ? a : a.to(dt);
  const at::Tensor bd = b.scalar_type() == dt ? b : b.to(dt);
  at::Tensor xa;
  const std::function<at::Tensor()>* remake = dropout_p > 0 ? nullptr : find_remake(x);
  if (remake && at::GradMode::is_enabled() && ad.requires_grad()) {
    auto holder = c10::make_intrusive<RemakeHolder>();
    holder->fn = *remake;
    xa = LoraDownFn::apply(x, ad, holder);
  } else {
    xa = at::linear(dropout_p > 0 ? at::dropout(x, dropout_p, /*train=*/true) : x, ad);
  }
  const int64_t out = base_out.size(-1);
  // (No tokens: a [0, out] view cannot be spelled with -1.)
  if (base_out.numel() == 0 || !base_out.is_contiguous() || base_out.scalar_type() != dt ||
      base_out.numel() != xa.numel() / xa.size(-1) * out)
    return base_out + at::linear(xa, bd) * scale;
  base_out.view({-1, out}).addmm_(xa.reshape({-1, xa.size(-1)}), bd.t(), /*beta=*/1.0, /*alpha=*/scale);
  return base_out;
}

}  // namespace forja::fused
