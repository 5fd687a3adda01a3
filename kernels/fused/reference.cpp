// The CPU reference of every fused kernel (forja_kernels/fused.h): the formulas written out in double, each
// output rounded once to the storage dtype, plus the argument checks the CUDA launchers share. Plain C++: CI
// tests the maths with it where there is no GPU, and the GPU tests compare the kernels against it.
#include <cmath>
#include <cstdint>
#include <vector>

#include "forja_kernels/fused.h"
#include "fused_internal.h"

namespace {

bool valid_dtype(ForjaFusedDType d) {
  return d == FORJA_FUSED_F32 || d == FORJA_FUSED_BF16;
}

double load(ForjaFusedDType d, const void* base, int64_t i) {
  if (d == FORJA_FUSED_F32) return static_cast<const float*>(base)[i];
  return forja_bf16_to_float(static_cast<const uint16_t*>(base)[i]);
}

void store(ForjaFusedDType d, void* base, int64_t i, double v) {
  if (d == FORJA_FUSED_F32)
    static_cast<float*>(base)[i] = static_cast<float>(v);
  else
    static_cast<uint16_t*>(base)[i] = forja_float_to_bf16(static_cast<float>(v));
}

// The value a store of v reads back as: what the kernels compute with after rounding an intermediate.
double rounded(ForjaFusedDType d, double v) {
  if (d == FORJA_FUSED_F32) return static_cast<float>(v);
  return forja_bf16_to_float(forja_float_to_bf16(static_cast<float>(v)));
}

double sigmoid(double g) {
  return 1.0 / (1.0 + std::exp(-g));
}

// GELU-tanh's constants: sqrt(2 / pi) and the cubic coefficient of Hendrycks & Gimpel's approximation.
constexpr double kGeluScale = 0.7978845608028654;
constexpr double kGeluCubic = 0.044715;

}  // namespace

extern "C" {

size_t forja_fused_rmsnorm_backward_workspace_bytes(int64_t rows, int64_t cols) {
  if (rows <= 0 || cols <= 0) return 0;
  return static_cast<size_t>(forja_fused::rmsnorm_backward_blocks(rows)) * static_cast<size_t>(cols) *
         sizeof(float);
}

const char* forja_fused_rmsnorm_forward_check(const ForjaRmsNormForward* p) {
  if (!p) return "rmsnorm forward: null params";
  if (!valid_dtype(p->dtype)) return "rmsnorm forward: dtype must be FORJA_FUSED_F32 or FORJA_FUSED_BF16";
  if (p->rows < 0 || p->cols < 1) return "rmsnorm forward: rows must be >= 0 and cols >= 1";
  if (!(p->eps >= 0.0f)) return "rmsnorm forward: eps must be >= 0";
  if (p->rows == 0) return nullptr;
  if (!p->x || !p->weight || !p->y) return "rmsnorm forward: x, weight and y are required";
  if ((p->residual == nullptr) != (p->h == nullptr))
    return "rmsnorm forward: h is written exactly when a residual is given";
  return nullptr;
}

const char* forja_fused_rmsnorm_backward_check(const ForjaRmsNormBackward* p) {
  if (!p) return "rmsnorm backward: null params";
  if (!valid_dtype(p->dtype)) return "rmsnorm backward: dtype must be FORJA_FUSED_F32 or FORJA_FUSED_BF16";
  if (p->rows < 0 || p->cols < 1) return "rmsnorm backward: rows must be >= 0 and cols >= 1";
  if (p->rows > 0 && (!p->dy || !p->h || !p->weight || !p->rstd || !p->dh))
    return "rmsnorm backward: dy, h, weight, rstd and dh are required";
  return nullptr;
}

const char* forja_fused_rope_check(const ForjaRope* p) {
  if (!p) return "rope: null params";
  if (!valid_dtype(p->dtype)) return "rope: dtype must be FORJA_FUSED_F32 or FORJA_FUSED_BF16";
  if (p->tokens < 0 || p->q_heads < 0 || p->kv_heads < 0) return "rope: negative size";
  if (p->head_dim < 2 || p->head_dim % 2 != 0) return "rope: head_dim must be even and >= 2";
  if (p->tokens == 0) return nullptr;
  if ((p->q_heads > 0 && !p->q) || (p->kv_heads > 0 && !p->k))
    return "rope: q and k are required for their heads";
  if (!p->cos || !p->sin) return "rope: cos and sin tables are required";
  return nullptr;
}

const char* forja_fused_swiglu_forward_check(const ForjaSwigluForward* p) {
  if (!p) return "swiglu forward: null params";
  if (!valid_dtype(p->dtype)) return "swiglu forward: dtype must be FORJA_FUSED_F32 or FORJA_FUSED_BF16";
  if (p->n < 0) return "swiglu forward: n must be >= 0";
  if (p->n > 0 && (!p->gate || !p->up || !p->out)) return "swiglu forward: gate, up and out are required";
  return nullptr;
}

const char* forja_fused_swiglu_backward_check(const ForjaSwigluBackward* p) {
  if (!p) return "swiglu backward: null params";
  if (!valid_dtype(p->dtype)) return "swiglu backward: dtype must be FORJA_FUSED_F32 or FORJA_FUSED_BF16";
  if (p->n < 0) return "swiglu backward: n must be >= 0";
  if (p->n > 0 && (!p->dout || !p->gate || !p->up || !p->dgate || !p->dup))
    return "swiglu backward: dout, gate, up, dgate and dup are required";
  return nullptr;
}

const char* forja_fused_gelu_forward_check(const ForjaGeluForward* p) {
  if (!p) return "gelu forward: null params";
  if (!valid_dtype(p->dtype)) return "gelu forward: dtype must be FORJA_FUSED_F32 or FORJA_FUSED_BF16";
  if (p->n < 0) return "gelu forward: n must be >= 0";
  if (p->n > 0 && (!p->x || !p->y)) return "gelu forward: x and y are required";
  return nullptr;
}

const char* forja_fused_gelu_backward_check(const ForjaGeluBackward* p) {
  if (!p) return "gelu backward: null params";
  if (!valid_dtype(p->dtype)) return "gelu backward: dtype must be FORJA_FUSED_F32 or FORJA_FUSED_BF16";
  if (p->n < 0) return "gelu backward: n must be >= 0";
  if (p->n > 0 && (!p->dy || !p->x || !p->dx)) return "gelu backward: dy, x and dx are required";
  return nullptr;
}

const char* forja_fused_rmsnorm_forward_ref(const ForjaRmsNormForward* p) {
  if (const char* err = forja_fused_rmsnorm_forward_check(p)) return err;
  const ForjaFusedDType d = p->dtype;
  std::vector<double> h(static_cast<size_t>(p->cols));
  for (int64_t r = 0; r < p->rows; ++r) {
    const int64_t base = r * p->cols;
    double sum_sq = 0;
    for (int64_t c = 0; c < p->cols; ++c) {
      double v = load(d, p->x, base + c);
      if (p->residual) {
        v = rounded(d, v + load(d, p->residual, base + c));
        store(d, p->h, base + c, v);
      }
      h[c] = v;
      sum_sq += v * v;
    }
    const double rstd = 1.0 / std::sqrt(sum_sq / static_cast<double>(p->cols) + static_cast<double>(p->eps));
    if (p->rstd) p->rstd[r] = static_cast<float>(rstd);
    for (int64_t c = 0; c < p->cols; ++c) store(d, p->y, base + c, h[c] * rstd * load(d, p->weight, c));
  }
  return nullptr;
}

const char* forja_fused_rmsnorm_backward_ref(const ForjaRmsNormBackward* p) {
  if (const char* err = forja_fused_rmsnorm_backward_check(p)) return err;
  const ForjaFusedDType d = p->dtype;
  std::vector<double> dweight(static_cast<size_t>(p->cols), 0.0);
  for (int64_t r = 0; r < p->rows; ++r) {
    const int64_t base = r * p->cols;
    const double rstd = p->rstd[r];
    double dot = 0;  // sum over the row of g * n
    for (int64_t c = 0; c < p->cols; ++c)
      dot += load(d, p->dy, base + c) * load(d, p->weight, c) * load(d, p->h, base + c) * rstd;
    const double mean = dot / static_cast<double>(p->cols);
    for (int64_t c = 0; c < p->cols; ++c) {
      const double dy = load(d, p->dy, base + c);
      const double n = load(d, p->h, base + c) * rstd;
      double dh = rstd * (dy * load(d, p->weight, c) - n * mean);
      if (p->dh_in) dh += load(d, p->dh_in, base + c);
      store(d, p->dh, base + c, dh);
      dweight[c] += dy * n;
    }
  }
  if (p->dweight)
    for (int64_t c = 0; c < p->cols; ++c) p->dweight[c] = static_cast<float>(dweight[c]);
  return nullptr;
}

}  // extern "C"

namespace {

// Rotates every head of q then k by +theta (sign 1) or -theta (sign -1).
const char* rope_ref(const ForjaRope* p, double sign) {
  if (const char* err = forja_fused_rope_check(p)) return err;
  const ForjaFusedDType d = p->dtype;
  const int64_t half = p->head_dim / 2;
  for (int64_t t = 0; t < p->tokens; ++t) {
    const int64_t row = p->positions ? p->positions[t] : t;
    for (int which = 0; which < 2; ++which) {
      const int64_t heads = which == 0 ? p->q_heads : p->kv_heads;
      void* dst = which == 0 ? p->q : p->k;
      const void* src = which == 0 ? p->q_src : p->k_src;
      if (!src) src = dst;
      for (int64_t hd = 0; hd < heads; ++hd) {
        const int64_t base = (t * heads + hd) * p->head_dim;
        for (int64_t i = 0; i < half; ++i) {
          const double c = p->cos[row * half + i], s = sign * p->sin[row * half + i];
          const double x1 = load(d, src, base + i), x2 = load(d, src, base + half + i);
          store(d, dst, base + i, x1 * c - x2 * s);
          store(d, dst, base + half + i, x2 * c + x1 * s);
        }
      }
    }
  }
  return nullptr;
}

}  // namespace

extern "C" {

const char* forja_fused_rope_forward_ref(const ForjaRope* p) {
  return rope_ref(p, 1.0);
}
const char* forja_fused_rope_backward_ref(const ForjaRope* p) {
  return rope_ref(p, -1.0);
}

const char* forja_fused_swiglu_forward_ref(const ForjaSwigluForward* p) {
  if (const char* err = forja_fused_swiglu_forward_check(p)) return err;
  for (int64_t i = 0; i < p->n; ++i) {
    const double g = load(p->dtype, p->gate, i);
    store(p->dtype, p->out, i, g * sigmoid(g) * load(p->dtype, p->up, i));
  }
  return nullptr;
}

const char* forja_fused_swiglu_backward_ref(const ForjaSwigluBackward* p) {
  if (const char* err = forja_fused_swiglu_backward_check(p)) return err;
  for (int64_t i = 0; i < p->n; ++i) {
    const double dout = load(p->dtype, p->dout, i), g = load(p->dtype, p->gate, i),
                 u = load(p->dtype, p->up, i);
    const double s = sigmoid(g);
    store(p->dtype, p->dgate, i, dout * u * s * (1.0 + g * (1.0 - s)));
    store(p->dtype, p->dup, i, dout * g * s);
  }
  return nullptr;
}

const char* forja_fused_gelu_tanh_forward_ref(const ForjaGeluForward* p) {
  if (const char* err = forja_fused_gelu_forward_check(p)) return err;
  for (int64_t i = 0; i < p->n; ++i) {
    const double x = load(p->dtype, p->x, i);
    store(p->dtype, p->y, i, 0.5 * x * (1.0 + std::tanh(kGeluScale * (x + kGeluCubic * x * x * x))));
  }
  return nullptr;
}

const char* forja_fused_gelu_tanh_backward_ref(const ForjaGeluBackward* p) {
  if (const char* err = forja_fused_gelu_backward_check(p)) return err;
  for (int64_t i = 0; i < p->n; ++i) {
    const double x = load(p->dtype, p->x, i), dy = load(p->dtype, p->dy, i);
    const double t = std::tanh(kGeluScale * (x + kGeluCubic * x * x * x));
    const double slope =
        0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * kGeluScale * (1.0 + 3.0 * kGeluCubic * x * x);
    store(p->dtype, p->dx, i, dy * slope);
  }
  return nullptr;
}

}  // extern "C"

extern "C" {

const char* forja_fused_cross_entropy_check(const ForjaCrossEntropy* p) {
  if (!p) return "cross entropy: null params";
  if (!valid_dtype(p->dtype)) return "cross entropy: dtype must be FORJA_FUSED_F32 or FORJA_FUSED_BF16";
  if (p->rows < 0 || p->vocab < 1) return "cross entropy: rows must be >= 0 and vocab >= 1";
  if (!std::isfinite(p->grad_scale)) return "cross entropy: grad_scale must be finite";
  if (p->rows > 0 && (!p->logits || !p->labels || !p->loss))
    return "cross entropy: logits, labels and loss are required";
  return nullptr;
}

const char* forja_fused_cross_entropy_ref(const ForjaCrossEntropy* p) {
  if (const char* err = forja_fused_cross_entropy_check(p)) return err;
  const ForjaFusedDType d = p->dtype;
  for (int64_t r = 0; r < p->rows; ++r) {
    const int64_t base = r * p->vocab, label = p->labels[r];
    const bool ignored = label == p->ignore_index;
    const bool in_range = label >= 0 && label < p->vocab;
    double max = -INFINITY;
    for (int64_t c = 0; c < p->vocab; ++c) max = std::fmax(max, load(d, p->logits, base + c));
    double sum = 0;
    for (int64_t c = 0; c < p->vocab; ++c) sum += std::exp(load(d, p->logits, base + c) - max);
    const double lse = max + std::log(sum);
    if (p->lse) p->lse[r] = static_cast<float>(lse);
    double loss = 0;
    if (!ignored) loss = in_range ? lse - load(d, p->logits, base + label) : NAN;
    p->loss[r] = static_cast<float>(loss);
    if (!p->write_grad) continue;
    for (int64_t c = 0; c < p->vocab; ++c) {
      double g = 0;
      if (!ignored) {
        g = in_range ? std::exp(load(d, p->logits, base + c) - lse) - (c == label ? 1.0 : 0.0) : NAN;
        g *= p->grad_scale;
      }
      store(d, p->logits, base + c, g);  // column c is read above before it is overwritten here
    }
  }
  return nullptr;
}

}  // extern "C"
