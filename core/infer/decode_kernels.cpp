#include "decode_kernels.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include "forja/error.h"
#include "fused_ops.h"
#include "infer_compat.h"
#include "layers.h"

#if FORJA_TORCH_CUDA && defined(FORJA_HAS_KERNELS_decode)
#define FORJA_DECODE_KERNELS 1
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAFunctions.h>

#include "forja_kernels/decode.h"
#else
#define FORJA_DECODE_KERNELS 0
#endif

namespace forja::infer::decode_kernels {

bool compiled_in() {
  return FORJA_DECODE_KERNELS;
}

bool active() {
  // FORJA_KERNELS switches all of our kernels together; fused::active() reads it (and throws on a bad value).
  return compiled_in() && fused::active();
}

int64_t attention_scratch_floats(int64_t heads, int64_t head_dim) {
  return heads * 64 * (head_dim + 2);  // forja_decode_attention_chunk keeps the splits at 64 or fewer
}

#if FORJA_DECODE_KERNELS
namespace {

cudaStream_t stream() {
  return at::cuda::getCurrentCUDAStream().stream();
}

void check(int rc, const char* problem, const char* what) {
  if (rc == FORJA_DECODE_OK) return;
  if (rc == FORJA_DECODE_INVALID_ARGUMENT)
    throw Error(std::string("decode kernel ") + what + ": " + (problem ? problem : "invalid arguments"));
  throw Error(std::string("decode kernel ") + what + ": CUDA error " + std::to_string(rc) + " (" +
              cudaGetErrorString(static_cast<cudaError_t>(rc)) + ")");
}

const void* ptr(const at::Tensor& t) {
  return t.defined() ? t.data_ptr() : nullptr;
}

at::Tensor stock_activation(const at::Tensor& x, Prologue prologue, const at::Tensor& norm_weight,
                            double eps) {
  if (prologue == Prologue::Plain) return x;
  if (prologue == Prologue::RmsNorm) return compat::rms_norm(x, norm_weight, eps);
  if (prologue == Prologue::RmsNormUnitOffset) return rms_norm_plus_one(x, norm_weight, eps);
  // The gated ones: x is [gate | up].
  const int64_t k = x.size(1) / 2;
  at::Tensor gate = x.narrow(1, 0, k), up = x.narrow(1, k, k);
  if (prologue == Prologue::GeGlu) return at::gelu(gate, "tanh").mul_(up);
  return fused::applies({gate, up}) ? fused::swiglu(gate, up) : at::silu(gate).mul_(up);
}

// The fields both GEMV structs (bf16 and NF4) share: the activation's input and prologue, the epilogue's
// bias and residual, and the outputs.
template <typename Params>
void set_common(Params& p, const at::Tensor& x, Prologue prologue, const at::Tensor& norm_weight, double eps,
                const at::Tensor& bias, const at::Tensor& residual, at::Tensor& y,
                const at::Tensor& act_out) {
  p.x = x.data_ptr();
  switch (prologue) {
    case Prologue::RmsNorm:
      p.prologue = FORJA_DECODE_RMSNORM;
      break;
    case Prologue::SwiGlu:
      p.prologue = FORJA_DECODE_SWIGLU;
      break;
    case Prologue::RmsNormUnitOffset:
      p.prologue = FORJA_DECODE_RMSNORM_UNIT_OFFSET;
      break;
    case Prologue::GeGlu:
      p.prologue = FORJA_DECODE_GEGLU;
      break;
    case Prologue::Plain:
      p.prologue = FORJA_DECODE_PLAIN;
      break;
  }
  p.norm_weight = ptr(norm_weight);
  p.eps = static_cast<float>(eps);
  p.bias = ptr(bias);
  p.residual = ptr(residual);
  p.y = y.data_ptr();
  p.act_out = act_out.defined() ? act_out.data_ptr() : nullptr;
}

}  // namespace

at::Tensor gemv(const at::Tensor& w, const at::Tensor& x, Prologue prologue, const at::Tensor& norm_weight,
                double eps, const at::Tensor& bias, const at::Tensor& residual, const at::Tensor& act_out) {
  TORCH_CHECK(w.is_contiguous() && x.is_contiguous() && w.scalar_type() == at::kBFloat16 &&
                  x.scalar_type() == at::kBFloat16,
              "decode gemv: contiguous bf16 tensors");
  at::Tensor y = at::empty({1, w.size(0)}, x.options());
  ForjaDecodeGemv p{};
  p.n = w.size(0);
  p.k = w.size(1);
  p.w = w.data_ptr();
  set_common(p, x, prologue, norm_weight, eps, bias, residual, y, act_out);
  check(forja_decode_gemv_bf16(&p, stream()), forja_decode_gemv_check(&p), "gemv");
  return y;
}

at::Tensor gemv_stock(const at::Tensor& w, const at::Tensor& x, Prologue prologue,
                      const at::Tensor& norm_weight, double eps, const at::Tensor& bias,
                      const at::Tensor& residual, const at::Tensor& act_out) {
  at::Tensor act = stock_activation(x, prologue, norm_weight, eps);
  if (act_out.defined()) act_out.copy_(act);
  at::Tensor y = residual.defined() ? at::addmm(residual, act, w.t()) : at::mm(act, w.t());
  if (bias.defined()) y.add_(bias);
  return y;
}

namespace {

// Whether to use the fused kernel `fused` rather than the stock operators `stock` for this kind of weight
// (device, shape, prologue, residual, 4-bit or not): decided once per kind and process, on the weight
// itself, at the first call outside a graph capture (a capture replays the choice made before it); the fused
// kernel until decided. The fused kernel is used when its output agrees with the stock operators' (within
// bf16 rounding: 2% of the largest output) and it ran faster. A kernel that disagrees is never used again in
// this process, and says so on stderr: the stock path is the reference, and a kernel that was only ever
// measured on one GPU architecture must not turn a chat into noise on another.
template <typename Fused, typename Stock>
bool use_fused_kernel(const char* what, const at::Tensor& weight_part, int64_t n, int64_t k,
                      Prologue prologue, bool residual, bool nf4, Fused&& fused, Stock&& stock) {
  using Key = std::tuple<int, int64_t, int64_t, int, bool, bool>;
  static std::mutex mu;
  static std::map<Key, bool> decided;
  const Key key{weight_part.get_device(), n, k, static_cast<int>(prologue), residual, nf4};
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = decided.find(key);
    if (it != decided.end()) return it->second;
  }
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream(), &capture) != cudaSuccess || capture != cudaStreamCaptureStatusNone)
    return true;
  const at::Tensor want = stock().to(at::kFloat), got = fused().to(at::kFloat);
  const double scale = want.abs().max().item<double>();
  const double err = (got - want).abs().max().item<double>();
  const bool agrees = std::isfinite(err) && err <= 2e-2 * std::max(scale, 1e-6);
  bool wins = false;
  if (agrees) {
    // A few runs of each on the real weight, after a warm-up, with the device synchronised around them.
    auto time = [&](auto&& fn) {
      for (int i = 0; i < 3; ++i) fn();
      c10::cuda::device_synchronize();
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < 20; ++i) fn();
      c10::cuda::device_synchronize();
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    };
    wins = time(fused) <= time(stock);
  } else {
    std::fprintf(stderr,
                 "forja: decode kernel %s disagrees with the stock operators on a [%lld x %lld] weight (max "
                 "difference %g, largest output %g); using the stock operators for it\n",
                 what, static_cast<long long>(n), static_cast<long long>(k), err, scale);
  }
  std::lock_guard<std::mutex> lock(mu);
  decided[key] = wins;
  return wins;
}

}  // namespace

at::Tensor gemv_fastest(const at::Tensor& w, const at::Tensor& x, Prologue prologue,
                        const at::Tensor& norm_weight, double eps, const at::Tensor& bias,
                        const at::Tensor& residual, const at::Tensor& act_out) {
  const bool use_fused = use_fused_kernel(
      "gemv", w, w.size(0), w.size(1), prologue, residual.defined(), false,
      [&] { return gemv(w, x, prologue, norm_weight, eps, bias, residual); },
      [&] { return gemv_stock(w, x, prologue, norm_weight, eps, bias, residual); });
  return use_fused ? gemv(w, x, prologue, norm_weight, eps, bias, residual, act_out)
                   : gemv_stock(w, x, prologue, norm_weight, eps, bias, residual, act_out);
}

namespace {

// The weight's part of the NF4 GEMV's parameters.
ForjaDecodeGemvNf4 nf4_params(const Nf4Weight& w) {
  ForjaDecodeGemvNf4 p{};
  p.n = w.shape[0];
  p.k = w.shape[1];
  p.codes = w.codes.data_ptr<uint8_t>();
  p.absmax = w.absmax.data_ptr<float>();
  p.block_size = w.block_size;
  return p;
}

}  // namespace

bool gemv_nf4_fits(const Nf4Weight& w) {
  if (!w.defined() || w.shape.size() != 2 || !w.device().is_cuda() || w.double_quant || !w.absmax.defined())
    return false;
  if (!w.codes.is_contiguous() || !w.absmax.is_contiguous() || w.absmax.scalar_type() != at::kFloat)
    return false;
  ForjaDecodeGemvNf4 p = nf4_params(w);
  uint16_t unused = 0;  // x and y are only checked for NULL here
  p.x = &unused;
  p.y = &unused;
  p.prologue = FORJA_DECODE_PLAIN;
  return forja_decode_gemv_nf4_check(&p) == nullptr;
}

at::Tensor gemv_nf4(const Nf4Weight& w, const at::Tensor& x, Prologue prologue, const at::Tensor& norm_weight,
                    double eps, const at::Tensor& bias, const at::Tensor& residual,
                    const at::Tensor& act_out) {
  TORCH_CHECK(x.is_contiguous() && x.scalar_type() == at::kBFloat16, "decode gemv_nf4: a contiguous bf16 x");
  at::Tensor y = at::empty({1, w.shape[0]}, x.options());
  ForjaDecodeGemvNf4 p = nf4_params(w);
  set_common(p, x, prologue, norm_weight, eps, bias, residual, y, act_out);
  check(forja_decode_gemv_nf4(&p, stream()), forja_decode_gemv_nf4_check(&p), "gemv_nf4");
  return y;
}

at::Tensor gemv_nf4_stock(const Nf4Weight& w, const at::Tensor& x, Prologue prologue,
                          const at::Tensor& norm_weight, double eps, const at::Tensor& bias,
                          const at::Tensor& residual, const at::Tensor& act_out) {
  at::Tensor act = stock_activation(x, prologue, norm_weight, eps);
  if (act_out.defined()) act_out.copy_(act);
  at::Tensor y = nf4_matmul(act, w);
  if (bias.defined()) y.add_(bias);
  if (residual.defined()) y.add_(residual);
  return y;
}

at::Tensor gemv_nf4_fastest(const Nf4Weight& w, const at::Tensor& x, Prologue prologue,
                            const at::Tensor& norm_weight, double eps, const at::Tensor& bias,
                            const at::Tensor& residual, const at::Tensor& act_out) {
  const bool use_fused = use_fused_kernel(
      "gemv_nf4", w.codes, w.shape[0], w.shape[1], prologue, residual.defined(), true,
      [&] { return gemv_nf4(w, x, prologue, norm_weight, eps, bias, residual); },
      [&] { return gemv_nf4_stock(w, x, prologue, norm_weight, eps, bias, residual); });
  return use_fused ? gemv_nf4(w, x, prologue, norm_weight, eps, bias, residual, act_out)
                   : gemv_nf4_stock(w, x, prologue, norm_weight, eps, bias, residual, act_out);
}

void rope_kv(at::Tensor& qkv, at::Tensor& layer_cache, const at::Tensor& cos, const at::Tensor& sin,
             const at::Tensor& position, int64_t heads) {
  ForjaDecodeRopeKv p{};
  p.heads = heads;
  p.kv_heads = layer_cache.size(1);
  p.head_dim = layer_cache.size(3);
  p.capacity = layer_cache.size(2);
  p.qkv = qkv.data_ptr();
  p.cache = layer_cache.data_ptr();
  p.cos = cos.data_ptr();
  p.sin = sin.data_ptr();
  p.position = position.data_ptr<int64_t>();
  check(forja_decode_rope_kv_bf16(&p, stream()), forja_decode_rope_kv_check(&p), "rope_kv");
}

void rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps, bool unit_offset,
              const at::Tensor& residual, const at::Tensor& out) {
  TORCH_CHECK(x.is_contiguous() && out.is_contiguous() && x.numel() == out.numel() &&
                  (!residual.defined() || (residual.is_contiguous() && residual.numel() == x.numel())),
              "decode rms_norm: contiguous tensors of one size");
  ForjaDecodeRmsNorm p{};
  p.d = weight.numel();
  p.rows = x.numel() / p.d;
  p.x = x.data_ptr();
  p.weight = weight.data_ptr();
  p.eps = static_cast<float>(eps);
  p.unit_offset = unit_offset ? 1 : 0;
  p.residual = ptr(residual);
  p.out = out.data_ptr();
  check(forja_decode_rms_norm_bf16(&p, stream()), forja_decode_rms_norm_check(&p), "rms_norm");
}

at::Tensor attention(const at::Tensor& qkv, const at::Tensor& layer_cache, const at::Tensor& position,
                     int64_t heads, int64_t max_keys, int64_t window, double scale, double softcap,
                     at::Tensor& scratch) {
  const int64_t d = layer_cache.size(3);
  const int64_t chunk = forja_decode_attention_chunk(max_keys);
  const int64_t floats = forja_decode_attention_scratch_floats(heads, d, max_keys, chunk);
  if (!scratch.defined())
    scratch = at::empty({attention_scratch_floats(heads, d)}, qkv.options().dtype(at::kFloat));
  TORCH_CHECK(scratch.numel() >= floats, "decode attention: the scratch holds ", scratch.numel(),
              " floats, needs ", floats);
  at::Tensor out = at::empty({1, heads * d}, qkv.options());
  ForjaDecodeAttention p{};
  p.heads = heads;
  p.kv_heads = layer_cache.size(1);
  p.head_dim = d;
  p.capacity = layer_cache.size(2);
  p.max_keys = max_keys;
  p.chunk = chunk;
  p.window = window;
  p.scale = static_cast<float>(scale);
  p.softcap = static_cast<float>(softcap);
  p.q = qkv.data_ptr();
  p.cache = layer_cache.data_ptr();
  p.position = position.data_ptr<int64_t>();
  p.scratch = scratch.data_ptr<float>();
  p.out = out.data_ptr();
  check(forja_decode_attention_bf16(&p, stream()), forja_decode_attention_check(&p), "attention");
  return out;
}

#else

namespace {
[[noreturn]] void not_compiled() {
  throw Error("the decode kernels are not in this build (no nvcc or no CUDA LibTorch)");
}
}  // namespace

at::Tensor gemv(const at::Tensor&, const at::Tensor&, Prologue, const at::Tensor&, double, const at::Tensor&,
                const at::Tensor&, const at::Tensor&) {
  not_compiled();
}
at::Tensor gemv_stock(const at::Tensor&, const at::Tensor&, Prologue, const at::Tensor&, double,
                      const at::Tensor&, const at::Tensor&, const at::Tensor&) {
  not_compiled();
}
at::Tensor gemv_fastest(const at::Tensor&, const at::Tensor&, Prologue, const at::Tensor&, double,
                        const at::Tensor&, const at::Tensor&, const at::Tensor&) {
  not_compiled();
}
bool gemv_nf4_fits(const Nf4Weight&) {
  return false;
}
at::Tensor gemv_nf4(const Nf4Weight&, const at::Tensor&, Prologue, const at::Tensor&, double,
                    const at::Tensor&, const at::Tensor&, const at::Tensor&) {
  not_compiled();
}
at::Tensor gemv_nf4_stock(const Nf4Weight&, const at::Tensor&, Prologue, const at::Tensor&, double,
                          const at::Tensor&, const at::Tensor&, const at::Tensor&) {
  not_compiled();
}
at::Tensor gemv_nf4_fastest(const Nf4Weight&, const at::Tensor&, Prologue, const at::Tensor&, double,
                            const at::Tensor&, const at::Tensor&, const at::Tensor&) {
  not_compiled();
}
void rope_kv(at::Tensor&, at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&, int64_t) {
  not_compiled();
}
void rms_norm(const at::Tensor&, const at::Tensor&, double, bool, const at::Tensor&, const at::Tensor&) {
  not_compiled();
}
at::Tensor attention(const at::Tensor&, const at::Tensor&, const at::Tensor&, int64_t, int64_t, int64_t,
                     double, double, at::Tensor&) {
  not_compiled();
}

#endif

}  // namespace forja::infer::decode_kernels
