// kernels/decode on the GPU: each kernel against its CPU reference on random inputs of odd and real sizes,
// outputs poisoned first so that an unwritten element fails; then the Llama decoder's single-token step with
// the kernels on against the stock step (kernels off) on bf16 models with random weights (head sizes 64, 128
// and Gemma 3's 256, GQA, a sliding window, a LoRA adapter), eagerly and captured in CUDA graphs across a
// bucket boundary.
#include <ATen/core/grad_mode.h>
#include <torch/cuda.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#if FORJA_TORCH_CUDA
#include <torch/csrc/autograd/profiler_kineto.h>
#endif

#include <cstdlib>

#include "causal_lm.h"
#include "decode_kernels.h"
#include "engine.h"
#include "forja/model_config.h"
#include "forja/nf4.h"
#include "forja_kernels/decode.h"
#include "fused_ops.h"
#include "gpu_harness.h"
#include "nf4_weight.h"
#include "peft_adapter.h"
#include "reference.h"
#include "weights.h"

namespace {

const at::Device kCuda(at::kCUDA, 0);

at::Tensor randn_bf16(std::vector<int64_t> shape, double scale = 1.0) {
  return (at::randn(shape, at::kFloat) * scale).to(at::kBFloat16).contiguous();
}

// The legacy default stream: LibTorch's current stream unless someone set another (nobody does here), and
// torch::cuda::synchronize() waits for it.
cudaStream_t stream() {
  return nullptr;
}

// max |a - b| / max |b|: an indexing or reduction mistake shows as O(1); rounding as ~1e-3.
// The prologues that take [gate | up], x of 2k values.
bool gated(ForjaDecodePrologue pro) {
  return pro == FORJA_DECODE_SWIGLU || pro == FORJA_DECODE_GEGLU;
}

constexpr ForjaDecodePrologue kPrologues[] = {FORJA_DECODE_PLAIN, FORJA_DECODE_RMSNORM, FORJA_DECODE_SWIGLU,
                                              FORJA_DECODE_RMSNORM_UNIT_OFFSET, FORJA_DECODE_GEGLU};

double rel_max(const at::Tensor& a, const at::Tensor& b) {
  at::Tensor ad = a.to(at::kCPU, at::kDouble), bd = b.to(at::kCPU, at::kDouble);
  return (ad - bd).abs().max().item<double>() / std::max(1e-30, bd.abs().max().item<double>());
}

// `x_offset`: x starts that many elements into its buffer (1: not 16-byte aligned, so the GEMV that reads x
// element by element runs).
void gemv_case(ForjaDecodePrologue pro, int64_t n, int64_t k, bool bias, bool residual,
               int64_t x_offset = 0) {
  const int64_t in = gated(pro) ? 2 * k : k;
  at::Tensor w = randn_bf16({n, k}, 1.0 / std::sqrt(static_cast<double>(k))), x = randn_bf16({in});
  at::Tensor nw = randn_bf16({k}), b = randn_bf16({n}), r = randn_bf16({n});
  auto fill = [&](ForjaDecodeGemv& p, const at::Tensor& W, const at::Tensor& X, const at::Tensor& NW,
                  const at::Tensor& B, const at::Tensor& R, at::Tensor& Y, at::Tensor& A) {
    p = ForjaDecodeGemv{};
    p.n = n, p.k = k, p.w = W.data_ptr(), p.x = X.data_ptr(), p.prologue = pro, p.norm_weight = NW.data_ptr();
    p.eps = 1e-5f, p.bias = bias ? B.data_ptr() : nullptr, p.residual = residual ? R.data_ptr() : nullptr;
    p.y = Y.data_ptr(), p.act_out = A.data_ptr();
  };
  at::Tensor y_ref = at::zeros({n}, at::kBFloat16), a_ref = at::zeros({k}, at::kBFloat16);
  ForjaDecodeGemv p;
  fill(p, w, x, nw, b, r, y_ref, a_ref);
  FORJA_CHECK(forja_decode_gemv_bf16_ref(&p) == 0, "reference refused");

  at::Tensor xbuf = at::cat({randn_bf16({x_offset}), x}).to(kCuda), xd = xbuf.narrow(0, x_offset, in);
  at::Tensor wd = w.to(kCuda), nwd = nw.to(kCuda), bd = b.to(kCuda), rd = r.to(kCuda);
  at::Tensor yd = at::full({n}, NAN, wd.options()), ad = at::full({k}, NAN, wd.options());
  fill(p, wd, xd, nwd, bd, rd, yd, ad);
  const int rc = forja_decode_gemv_bf16(&p, stream());
  torch::cuda::synchronize();
  FORJA_CHECK(rc == 0, "gemv launch failed: %d", rc);
  const double e = rel_max(yd, y_ref), ea = rel_max(ad, a_ref);
  const bool finite = at::isfinite(yd).all().item<bool>() && at::isfinite(ad).all().item<bool>();
  std::printf("gemv prologue %d  n %6lld k %6lld bias %d res %d x+%lld: y %.2e act %.2e\n",
              static_cast<int>(pro), static_cast<long long>(n), static_cast<long long>(k), bias, residual,
              static_cast<long long>(x_offset), e, ea);
  FORJA_CHECK(finite, "an output element was not written (NaN poison left)");
  FORJA_CHECK(e <= 1e-2, "gemv n %lld k %lld: rel err %g", static_cast<long long>(n),
              static_cast<long long>(k), e);
  FORJA_CHECK(ea <= 1e-2, "gemv act_out: rel err %g", ea);
}

// The NF4 GEMV against its CPU reference: a weight quantized on the device (double quantization, as QLoRA
// trains), its absmax decoded to fp32 as the decoder hands it over.
void gemv_nf4_case(ForjaDecodePrologue pro, int64_t n, int64_t k, int64_t block, bool bias, bool residual) {
  const int64_t in = gated(pro) ? 2 * k : k;
  forja::Nf4Weight q = forja::quantize_nf4_weight(
      (at::randn({n, k}) / std::sqrt(static_cast<double>(k))).to(kCuda), {block, true, 256}, "w");
  at::Tensor absmax = q.decoded_absmax().contiguous();
  at::Tensor codes_h = q.codes.cpu().contiguous(), absmax_h = absmax.cpu();
  at::Tensor x = randn_bf16({in}), nw = randn_bf16({k}), b = randn_bf16({n}), r = randn_bf16({n});
  auto fill = [&](ForjaDecodeGemvNf4& p, const at::Tensor& C, const at::Tensor& A, const at::Tensor& X,
                  const at::Tensor& NW, const at::Tensor& B, const at::Tensor& R, at::Tensor& Y,
                  at::Tensor& ACT) {
    p = ForjaDecodeGemvNf4{};
    p.n = n, p.k = k, p.codes = C.data_ptr<uint8_t>(), p.absmax = A.data_ptr<float>(), p.block_size = block;
    p.x = X.data_ptr(), p.prologue = pro, p.norm_weight = NW.data_ptr(), p.eps = 1e-5f;
    p.bias = bias ? B.data_ptr() : nullptr, p.residual = residual ? R.data_ptr() : nullptr;
    p.y = Y.data_ptr(), p.act_out = ACT.data_ptr();
  };
  at::Tensor y_ref = at::zeros({n}, at::kBFloat16), a_ref = at::zeros({k}, at::kBFloat16);
  ForjaDecodeGemvNf4 p;
  fill(p, codes_h, absmax_h, x, nw, b, r, y_ref, a_ref);
  FORJA_CHECK(forja_decode_gemv_nf4_ref(&p) == 0, "reference refused: %s", forja_decode_gemv_nf4_check(&p));

  at::Tensor xd = x.to(kCuda), nwd = nw.to(kCuda), bd = b.to(kCuda), rd = r.to(kCuda);
  at::Tensor yd = at::full({n}, NAN, xd.options()), ad = at::full({k}, NAN, xd.options());
  fill(p, q.codes, absmax, xd, nwd, bd, rd, yd, ad);
  const int rc = forja_decode_gemv_nf4(&p, stream());
  torch::cuda::synchronize();
  FORJA_CHECK(rc == 0, "gemv_nf4 launch failed: %d", rc);
  const double e = rel_max(yd, y_ref), ea = rel_max(ad, a_ref);
  const bool finite = at::isfinite(yd).all().item<bool>() && at::isfinite(ad).all().item<bool>();
  // The bar for each output: its bf16 rounding on both sides plus 2^-8 of the terms' magnitudes (fp32 sums in
  // another order stay far under that). A misplaced element or block is off by the size of the terms.
  const float* code_values = forja_nf4_codes();
  const at::Tensor act = a_ref.to(at::kFloat).contiguous();
  const float* a = act.data_ptr<float>();
  const uint8_t* cb = codes_h.data_ptr<uint8_t>();
  const float* ab = absmax_h.data_ptr<float>();
  const at::Tensor yc = yd.to(at::kCPU, at::kDouble), yr = y_ref.to(at::kDouble);
  const double* got = yc.data_ptr<double>();
  const double* want = yr.data_ptr<double>();
  double worst = 0;  // the largest error as a fraction of its bar
  for (int64_t row = 0; row < n; ++row) {
    double terms = 0;
    for (int64_t c = 0; c < k; ++c) {
      const int64_t i = row * k + c;
      const uint8_t byte = cb[i / 2];
      terms += std::fabs(a[c] * code_values[i % 2 == 0 ? byte >> 4 : byte & 0x0f] * ab[i / block]);
    }
    const double ref = want[row], err = std::fabs(got[row] - ref);
    worst = std::max(worst, err / (std::ldexp(terms + std::fabs(ref), -8) + 1e-30));
  }
  std::printf(
      "gemv_nf4 prologue %d n %6lld k %6lld block %3lld bias %d res %d: y %.2e (%.2f of the bar) act %.2e\n",
      static_cast<int>(pro), static_cast<long long>(n), static_cast<long long>(k),
      static_cast<long long>(block), bias, residual, e, worst, ea);
  FORJA_CHECK(finite, "gemv_nf4: an output element was not written (NaN poison left)");
  FORJA_CHECK(worst <= 1.0,
              "gemv_nf4 n %lld k %lld: an output is %.2f times its rounding bar away (rel err %g)",
              static_cast<long long>(n), static_cast<long long>(k), worst, e);
  FORJA_CHECK(ea <= 1e-2, "gemv_nf4 act_out: rel err %g", ea);
}

void rope_case(int64_t heads, int64_t kv, int64_t d, int64_t cap, int64_t pos) {
  at::Tensor qkv = randn_bf16({(heads + 2 * kv) * d}), cos = randn_bf16({cap, d}), sin = randn_bf16({cap, d});
  at::Tensor cache = at::full({2, kv, cap, d}, 5.0, at::kBFloat16);
  at::Tensor qkv_ref = qkv.clone(), cache_ref = cache.clone();
  int64_t position = pos;
  ForjaDecodeRopeKv p{};
  p.heads = heads, p.kv_heads = kv, p.head_dim = d, p.capacity = cap;
  p.qkv = qkv_ref.data_ptr(), p.cache = cache_ref.data_ptr(), p.cos = cos.data_ptr(), p.sin = sin.data_ptr();
  p.position = &position;
  FORJA_CHECK(forja_decode_rope_kv_bf16_ref(&p) == 0, "reference refused");
  at::Tensor qkv_d = qkv.to(kCuda), cache_d = cache.to(kCuda), cos_d = cos.to(kCuda), sin_d = sin.to(kCuda);
  at::Tensor pos_d = at::full({1}, pos, at::TensorOptions().dtype(at::kLong).device(kCuda));
  p.qkv = qkv_d.data_ptr(), p.cache = cache_d.data_ptr(), p.cos = cos_d.data_ptr(), p.sin = sin_d.data_ptr();
  p.position = pos_d.data_ptr<int64_t>();
  const int rc = forja_decode_rope_kv_bf16(&p, stream());
  torch::cuda::synchronize();
  FORJA_CHECK(rc == 0, "rope launch failed: %d", rc);
  const double eq = rel_max(qkv_d, qkv_ref), ec = rel_max(cache_d, cache_ref);
  std::printf("rope_kv heads %lld kv %lld d %lld pos %lld: qkv %.2e cache %.2e\n",
              static_cast<long long>(heads), static_cast<long long>(kv), static_cast<long long>(d),
              static_cast<long long>(pos), eq, ec);
  FORJA_CHECK(eq <= 1e-2 && ec <= 1e-2, "rope: qkv %g cache %g", eq, ec);
}

void attention_case(int64_t heads, int64_t kv, int64_t d, int64_t cap, int64_t max_keys, int64_t pos,
                    int64_t window, float softcap = 0) {
  at::Tensor q = randn_bf16({heads, d}), cache = randn_bf16({2, kv, cap, d});
  at::Tensor out_ref = at::zeros({heads, d}, at::kBFloat16);
  int64_t position = pos;
  ForjaDecodeAttention p{};
  p.heads = heads, p.kv_heads = kv, p.head_dim = d, p.capacity = cap, p.max_keys = max_keys;
  p.chunk = forja_decode_attention_chunk(max_keys), p.window = window;
  p.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d))), p.softcap = softcap;
  p.q = q.data_ptr(), p.cache = cache.data_ptr(), p.position = &position, p.out = out_ref.data_ptr();
  FORJA_CHECK(forja_decode_attention_bf16_ref(&p) == 0, "reference refused");
  at::Tensor qd = q.to(kCuda), cd = cache.to(kCuda), od = at::full({heads, d}, NAN, qd.options());
  at::Tensor pos_d = at::full({1}, pos, at::TensorOptions().dtype(at::kLong).device(kCuda));
  at::Tensor scratch = at::full({forja::infer::decode_kernels::attention_scratch_floats(heads, d)}, NAN,
                                at::TensorOptions().dtype(at::kFloat).device(kCuda));
  p.q = qd.data_ptr(), p.cache = cd.data_ptr(), p.position = pos_d.data_ptr<int64_t>(), p.out = od.data_ptr();
  p.scratch = scratch.data_ptr<float>();
  const int rc = forja_decode_attention_bf16(&p, stream());
  torch::cuda::synchronize();
  FORJA_CHECK(rc == 0, "attention launch failed: %d", rc);
  const double e = rel_max(od, out_ref);
  std::printf("attention heads %2lld kv %lld d %3lld keys %5lld pos %5lld window %3lld cap %g: %.2e\n",
              static_cast<long long>(heads), static_cast<long long>(kv), static_cast<long long>(d),
              static_cast<long long>(max_keys), static_cast<long long>(pos), static_cast<long long>(window),
              softcap, e);
  FORJA_CHECK(at::isfinite(od).all().item<bool>(), "attention: an output element was not written");
  FORJA_CHECK(e <= 1e-2, "attention: rel err %g", e);
}

void rms_norm_case(int64_t rows, int64_t d, bool unit_offset, bool residual) {
  at::Tensor x = randn_bf16({rows, d}), w = randn_bf16({d}, 0.5), r = randn_bf16({rows, d});
  at::Tensor out_ref = at::zeros({rows, d}, at::kBFloat16);
  ForjaDecodeRmsNorm p{};
  p.rows = rows, p.d = d, p.x = x.data_ptr(), p.weight = w.data_ptr(), p.eps = 1e-6f;
  p.unit_offset = unit_offset, p.residual = residual ? r.data_ptr() : nullptr, p.out = out_ref.data_ptr();
  FORJA_CHECK(forja_decode_rms_norm_bf16_ref(&p) == 0, "reference refused");
  at::Tensor xd = x.to(kCuda), wd = w.to(kCuda), rd = r.to(kCuda),
             od = at::full({rows, d}, NAN, xd.options());
  p.x = xd.data_ptr(), p.weight = wd.data_ptr(), p.residual = residual ? rd.data_ptr() : nullptr;
  p.out = od.data_ptr();
  const int rc = forja_decode_rms_norm_bf16(&p, stream());
  torch::cuda::synchronize();
  FORJA_CHECK(rc == 0, "rms_norm launch failed: %d", rc);
  const double e = rel_max(od, out_ref);
  std::printf("rms_norm rows %3lld d %5lld unit %d res %d: %.2e\n", static_cast<long long>(rows),
              static_cast<long long>(d), unit_offset, residual, e);
  FORJA_CHECK(at::isfinite(od).all().item<bool>(), "rms_norm: an output element was not written");
  FORJA_CHECK(e <= 1e-2, "rms_norm: rel err %g", e);
}

// Microseconds per call of `fn`: 200 calls after 5 warm-up ones, the device synchronised around them.
template <typename Fn>
double time_us(Fn&& fn) {
  for (int i = 0; i < 5; ++i) fn();
  torch::cuda::synchronize();
  const int iters = 200;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) fn();
  torch::cuda::synchronize();
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / iters;
}

forja::infer::decode_kernels::Prologue core_prologue(ForjaDecodePrologue pro) {
  namespace dk = forja::infer::decode_kernels;
  return pro == FORJA_DECODE_RMSNORM               ? dk::Prologue::RmsNorm
         : pro == FORJA_DECODE_SWIGLU              ? dk::Prologue::SwiGlu
         : pro == FORJA_DECODE_RMSNORM_UNIT_OFFSET ? dk::Prologue::RmsNormUnitOffset
         : pro == FORJA_DECODE_GEGLU               ? dk::Prologue::GeGlu
                                                   : dk::Prologue::Plain;
}

// Information, not a check: the GEMV's time and bandwidth at the real shapes against cuBLAS (at::mm) on the
// same operands, so a slow kernel shows in the log (bench/ measures the decode itself).
void gemv_speed(const char* what, int64_t n, int64_t k, ForjaDecodePrologue pro) {
  const int64_t in = gated(pro) ? 2 * k : k;
  auto opts = at::TensorOptions().dtype(at::kBFloat16).device(kCuda);
  at::Tensor w = at::randn({n, k}, opts) * 0.02, x = at::randn({1, in}, opts), nw = at::ones({k}, opts);
  at::Tensor xk = x.narrow(1, 0, k).contiguous();
  namespace dk = forja::infer::decode_kernels;
  const dk::Prologue prologue = core_prologue(pro);
  const double ours = time_us([&] { dk::gemv(w, x, prologue, nw, 1e-5, {}, {}); });
  const double cublas = time_us([&] { at::mm(xk, w.t()); });
  const double gb = static_cast<double>(n * k * 2) / 1e9;
  std::printf(
      "gemv speed %-22s [%6lld x %6lld]: ours %7.1f us (%5.0f GB/s), cuBLAS mm %7.1f us (%5.0f GB/s)\n", what,
      static_cast<long long>(n), static_cast<long long>(k), ours, gb / ours * 1e6, cublas, gb / cublas * 1e6);
}

// Information: the split-K attention (both launches) at a decode shape, `pos` keys deep in a `keys` bucket.
void attention_speed(const char* what, int64_t heads, int64_t kv, int64_t d, int64_t keys, int64_t pos) {
  auto opts = at::TensorOptions().dtype(at::kBFloat16).device(kCuda);
  at::Tensor q = at::randn({heads, d}, opts), cache = at::randn({2, kv, keys, d}, opts);
  at::Tensor out = at::empty({heads, d}, opts);
  at::Tensor pos_d = at::full({1}, pos, at::TensorOptions().dtype(at::kLong).device(kCuda));
  at::Tensor scratch =
      at::empty({forja::infer::decode_kernels::attention_scratch_floats(heads, d)}, opts.dtype(at::kFloat));
  ForjaDecodeAttention p{};
  p.heads = heads, p.kv_heads = kv, p.head_dim = d, p.capacity = keys, p.max_keys = keys;
  p.chunk = forja_decode_attention_chunk(keys), p.window = 0;
  p.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)));
  p.q = q.data_ptr(), p.cache = cache.data_ptr(), p.position = pos_d.data_ptr<int64_t>();
  p.scratch = scratch.data_ptr<float>(), p.out = out.data_ptr();
  int rc = 0;
  const double us = time_us([&] { rc |= forja_decode_attention_bf16(&p, stream()); });
  FORJA_CHECK(rc == 0, "attention launch failed: %d", rc);
  std::printf("attention speed %-16s heads %2lld kv %lld d %3lld keys %5lld pos %5lld: %6.1f us\n", what,
              static_cast<long long>(heads), static_cast<long long>(kv), static_cast<long long>(d),
              static_cast<long long>(keys), static_cast<long long>(pos), us);
}

// The same for the NF4 GEMV: ours (prologue fused), the stock prologue + kernels/nf4's GEMV, and cuBLAS on
// the bf16 weight, with GB/s counted on the 4-bit bytes read (codes and fp32 absmax).
void gemv_nf4_speed(const char* what, int64_t n, int64_t k, ForjaDecodePrologue pro) {
  const int64_t in = gated(pro) ? 2 * k : k;
  auto opts = at::TensorOptions().dtype(at::kBFloat16).device(kCuda);
  at::Tensor w = at::randn({n, k}, opts) * 0.02, x = at::randn({1, in}, opts), nw = at::ones({k}, opts);
  forja::Nf4Weight q = forja::quantize_nf4_weight(w, {}, "w");
  at::Tensor xk = x.narrow(1, 0, k).contiguous();
  namespace dk = forja::infer::decode_kernels;
  const dk::Prologue prologue = core_prologue(pro);
  const double ours = time_us([&] { dk::gemv_nf4(q, x, prologue, nw, 1e-5, {}, {}); });
  const double stock = time_us([&] { dk::gemv_nf4_stock(q, x, prologue, nw, 1e-5, {}, {}); });
  const double cublas = time_us([&] { at::mm(xk, w.t()); });
  const double gb = static_cast<double>(q.bytes()) / 1e9;
  std::printf(
      "gemv_nf4 speed %-18s [%6lld x %6lld]: ours %6.1f us (%5.0f GB/s), stock + nf4 GEMV %6.1f us (%5.0f "
      "GB/s), "
      "cuBLAS bf16 %6.1f us\n",
      what, static_cast<long long>(n), static_cast<long long>(k), ours, gb / ours * 1e6, stock,
      gb / stock * 1e6, cublas);
}

std::unique_ptr<forja::Generator::Impl> engine(std::shared_ptr<forja::CausalLM> lm, bool graphs,
                                               int64_t ctx) {
  forja::EngineOptions o;
  o.cuda_graphs = graphs;
  o.max_context = ctx;
  return std::make_unique<forja::Generator::Impl>(std::move(lm), o, "");
}

// A random adapter on q/v/down of every layer, the same for both engines.
forja::infer::PeftAdapter random_adapter(const forja::ModelConfig& c) {
  forja::infer::PeftAdapter a;
  a.scale = 2.0;
  at::manual_seed(11);
  for (int64_t i = 0; i < c.num_layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i);
    a.modules[p + ".self_attn.q_proj"] = {at::randn({8, c.hidden_size}) * 0.05,
                                          at::randn({c.num_heads * c.head_dim, 8}) * 0.05};
    a.modules[p + ".self_attn.v_proj"] = {at::randn({8, c.hidden_size}) * 0.05,
                                          at::randn({c.num_kv_heads * c.head_dim, 8}) * 0.05};
    a.modules[p + ".mlp.down_proj"] = {at::randn({8, c.intermediate_size}) * 0.05,
                                       at::randn({c.hidden_size, 8}) * 0.05};
  }
  return a;
}

// Teacher-forced decode with the kernels on (engine `on`) and off (`off`), the same token fed to both.
// `nf4`: a 4-bit base (QLoRA's, double quantization), the same quantized weights in both.
void compare_decoders(const std::string& what, forja::ModelConfig c, bool graphs, bool adapter,
                      int64_t prompt_len, int64_t steps, bool nf4 = false) {
  auto make = [&] {
    forja::RandomWeights w(5, at::kBFloat16, kCuda);
    if (nf4) w.set_nf4(forja::quant::Nf4Options{64, true, 256});
    return forja::make_causal_lm(c, w);
  };
  const int64_t ctx = prompt_len + steps + 8;
  auto on = engine(make(), graphs, ctx), off = engine(make(), false, ctx);
  if (adapter) {
    auto a = random_adapter(c);
    on->decoder().set_adapter(a);
    off->decoder().set_adapter(a);
  }
  std::vector<int64_t> prompt;
  for (int64_t i = 0; i < prompt_len; ++i) prompt.push_back(3 + (i * 37) % (c.vocab_size - 3));
  forja::fused::set_enabled(false);
  at::Tensor l_off = off->decoder().prefill(at::tensor(prompt), 0);
  on->decoder().prefill(at::tensor(prompt), 0);  // prefill is the same code either way
  int32_t token = static_cast<int32_t>(l_off.argmax().item<int64_t>());
  double worst = 0;
  int agree = 0;
  for (int64_t i = 0; i < steps; ++i) {
    const int64_t pos = prompt_len + i;
    forja::fused::set_enabled(true);
    FORJA_CHECK(on->decoder().decode_kernels_on(), "%s: the decode kernels do not take this model",
                what.c_str());
    auto a = on->runner().step(token, pos);
    at::Tensor la = a.logits.clone();
    forja::fused::set_enabled(false);
    auto b = off->runner().step(token, pos);
    worst = std::max(worst, forja_test::relative_error(la, b.logits));
    agree += a.best == b.best;
    token = b.best;
  }
  forja::fused::set_enabled(true);
  std::printf("%-44s graphs %d: worst rel. logits error %.2e, same argmax %d/%lld\n", what.c_str(), graphs,
              worst, agree, static_cast<long long>(steps));
  FORJA_CHECK(worst <= 3e-2, "%s: logits differ by %g (relative)", what.c_str(), worst);
  FORJA_CHECK(agree >= steps * 9 / 10, "%s: argmax agreed on %d of %lld steps", what.c_str(), agree,
              static_cast<long long>(steps));
}

// The stock LibTorch step (run with FORJA_KERNELS=off): the runner with CUDA graphs against the same model
// stepped eagerly, teacher-forced. Capturing must work on every path that exists, the 4-bit base's
// dequantize-then-GEMM included (it may copy nothing from the host inside a capture).
void compare_stock_graphs(const std::string& what, forja::ModelConfig c, bool adapter, bool nf4) {
  auto make = [&] {
    forja::RandomWeights w(5, at::kBFloat16, kCuda);
    if (nf4) w.set_nf4(forja::quant::Nf4Options{64, true, 256});
    return forja::make_causal_lm(c, w);
  };
  const int64_t prompt_len = 30, steps = 40, ctx = prompt_len + steps + 8;
  auto graphs = engine(make(), true, ctx), eager = engine(make(), false, ctx);
  FORJA_CHECK(!graphs->decoder().decode_kernels_on(), "%s: FORJA_KERNELS=off left the decode kernels on",
              what.c_str());
  if (adapter) {
    auto a = random_adapter(c);
    graphs->decoder().set_adapter(a);
    eager->decoder().set_adapter(a);
  }
  std::vector<int64_t> prompt;
  for (int64_t i = 0; i < prompt_len; ++i) prompt.push_back(3 + (i * 37) % (c.vocab_size - 3));
  at::Tensor l = eager->decoder().prefill(at::tensor(prompt), 0);
  graphs->decoder().prefill(at::tensor(prompt), 0);
  int32_t token = static_cast<int32_t>(l.argmax().item<int64_t>());
  double worst = 0;
  int agree = 0;
  for (int64_t i = 0; i < steps; ++i) {
    auto a = graphs->runner().step(token, prompt_len + i);
    at::Tensor la = a.logits.clone();
    auto b = eager->runner().step(token, prompt_len + i);
    worst = std::max(worst, forja_test::relative_error(la, b.logits));
    agree += a.best == b.best;
    token = b.best;
  }
  std::printf("%-44s stock, graphs %lld captured: worst rel. logits error %.2e, same argmax %d/%lld\n",
              what.c_str(), static_cast<long long>(graphs->runner().graph_count()), worst, agree,
              static_cast<long long>(steps));
  FORJA_CHECK(graphs->runner().graph_count() > 0, "%s: no CUDA graph was captured", what.c_str());
  FORJA_CHECK(worst <= 1e-2, "%s: graphs vs eager logits differ by %g (relative)", what.c_str(), worst);
  FORJA_CHECK(agree == steps, "%s: argmax agreed on %d of %lld steps", what.c_str(), agree,
              static_cast<long long>(steps));
}

// With FORJA_DECODE_PROFILE=<trace.json>: a TinyLlama-1.1B-shaped model (random weights), the time per greedy
// step through the runner (CUDA graphs on), and a Kineto trace of 20 steps for bench/gpu/decode.sh to sum up.
void profile_tinyllama(const char* path) {
#if FORJA_TORCH_CUDA
  forja::ModelConfig c = forja::parse_model_config(forja_test::fixture_dir("llama") / "config.json");
  c.vocab_size = 32000, c.hidden_size = 2048, c.intermediate_size = 5632, c.num_layers = 22, c.num_heads = 32;
  c.num_kv_heads = 4, c.head_dim = 64, c.max_position_embeddings = 4096, c.tie_word_embeddings = false;
  forja::RandomWeights w(3, at::kBFloat16, kCuda);
  auto e = engine(forja::make_causal_lm(c, w), true, 512);
  std::vector<int64_t> prompt(128, 7);
  at::Tensor l = e->decoder().prefill(at::tensor(prompt), 0);
  int32_t token = static_cast<int32_t>(l.argmax().item<int64_t>());
  int64_t pos = 128;
  for (int i = 0; i < 20; ++i) token = e->runner().step(token, pos++).best;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 200; ++i) token = e->runner().step(token, pos++).best;
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / 200;
  std::printf("tinyllama shape: %.3f ms per greedy step through the runner (%.0f tok/s)\n", ms, 1000 / ms);
  namespace prof = torch::autograd::profiler;
  using torch::profiler::impl::ActivityType;
  const torch::profiler::impl::ProfilerConfig cfg(torch::profiler::impl::ProfilerState::KINETO);
  const std::set<ActivityType> acts{ActivityType::CPU, ActivityType::CUDA};
  prof::prepareProfiler(cfg, acts);
  prof::enableProfiler(cfg, acts);
  for (int i = 0; i < 20; ++i) token = e->runner().step(token, pos++).best;
  prof::disableProfiler()->save(path);
  std::printf("trace of 20 steps: %s\n", path);
#else
  std::printf("no profile: this LibTorch has no CUDA (%s)\n", path);
#endif
}

}  // namespace

int main() {
  if (!torch::cuda::is_available()) forja_test::skip("no CUDA GPU visible (or this LibTorch has no CUDA)");
  at::NoGradGuard no_grad;
  at::manual_seed(0);
  if (const char* k = std::getenv("FORJA_KERNELS"); k && std::string(k) == "off") {
    forja::ModelConfig c = forja::parse_model_config(forja_test::fixture_dir("llama") / "config.json");
    c.hidden_size = 256, c.num_heads = 4, c.num_kv_heads = 2, c.head_dim = 64, c.intermediate_size = 768;
    c.num_layers = 3, c.max_position_embeddings = 1024;
    compare_stock_graphs("llama d64 bf16", c, false, false);
    compare_stock_graphs("llama d64 bf16 + adapter", c, true, false);
    compare_stock_graphs("llama d64 4-bit base", c, false, true);
    compare_stock_graphs("llama d64 4-bit base + adapter", c, true, true);
    return forja_test::finish("gpu decode, stock path (FORJA_KERNELS=off)");
  }
  if (!forja::infer::decode_kernels::compiled_in()) forja_test::skip("this build has no kernels/decode");
  if (const char* path = std::getenv("FORJA_DECODE_PROFILE")) {
    profile_tinyllama(path);
    return forja_test::finish("gpu decode kernels (profile only)");
  }

  for (auto pro : kPrologues) {
    gemv_case(pro, 1, 8, false, false);
    gemv_case(pro, 1001, 1000, true, true);    // 16-byte path, rows not a multiple of the block
    gemv_case(pro, 257, 1003, false, true);    // scalar path (k not a multiple of 8)
    gemv_case(pro, 2560, 2048, false, false);  // TinyLlama q/k/v
    gemv_case(pro, 300, 2048, true, true, 1);  // x not 16-byte aligned: the element-wise prologue
  }
  gemv_case(FORJA_DECODE_RMSNORM, 11264, 2048, false, true);  // TinyLlama gate/up: several rows per warp
  gemv_case(FORJA_DECODE_SWIGLU, 4096, 14336, false, true);   // Mistral down: 28 KB of shared activations
  gemv_case(FORJA_DECODE_RMSNORM, 333, 30000, false, false);  // above 48 KB of shared memory (opt-in)
  gemv_case(FORJA_DECODE_PLAIN, 32000, 2048, false, false);   // a vocabulary-sized output

  rope_case(32, 4, 64, 40, 0);
  rope_case(32, 8, 128, 300, 299);
  rope_case(3, 1, 18, 7, 4);  // head_dim not a power of two

  rms_norm_case(16, 128, false, false);  // Qwen3's q heads
  rms_norm_case(1, 1152, true, true);    // Gemma 3 1B's norm after attention, with the residual add
  rms_norm_case(4, 256, true, false);    // Gemma's q heads
  rms_norm_case(3, 8191, false, true);   // a long odd row

  for (int64_t pos : {0, 31, 32, 33, 255})
    attention_case(32, 4, 64, 512, 256, pos, 0);    // TinyLlama heads, bucket 256
  attention_case(32, 8, 128, 4096, 2048, 2047, 0);  // Mistral heads, a 2048-slot bucket, full
  attention_case(32, 8, 128, 4096, 4096, 3000, 0);
  attention_case(12, 12, 64, 100, 97, 96, 0);        // MHA, keys not a multiple of 32
  attention_case(16, 1, 128, 1024, 1024, 900, 100);  // 16 query heads on one kv head, a sliding window
  attention_case(8, 2, 64, 64, 64, 10, 4);
  attention_case(4, 1, 256, 1024, 1024, 700, 512);         // Gemma 3 1B's heads, a local layer
  attention_case(8, 4, 256, 512, 512, 300, 0);             // Gemma 2 2B / Gemma 3 4B heads, a global layer
  attention_case(16, 2, 256, 128, 128, 77, 0);             // 8 query heads per kv head, the most at 256
  attention_case(8, 4, 256, 512, 512, 300, 0, 1.0f);       // Gemma 2's soft-capped scores (a tight cap)
  attention_case(16, 1, 128, 1024, 1024, 900, 100, 2.0f);  // soft cap with 16 heads per kv head, a window

  gemv_speed("tinyllama qkv", 2560, 2048, FORJA_DECODE_RMSNORM);
  gemv_speed("tinyllama o", 2048, 2048, FORJA_DECODE_PLAIN);
  gemv_speed("tinyllama gate_up", 11264, 2048, FORJA_DECODE_RMSNORM);
  gemv_speed("tinyllama down", 2048, 5632, FORJA_DECODE_SWIGLU);
  gemv_speed("mistral qkv", 6144, 4096, FORJA_DECODE_RMSNORM);
  gemv_speed("mistral gate_up", 28672, 4096, FORJA_DECODE_RMSNORM);
  gemv_speed("mistral down", 4096, 14336, FORJA_DECODE_SWIGLU);
  gemv_speed("lm head", 32000, 4096, FORJA_DECODE_PLAIN);
  attention_speed("tinyllama", 32, 4, 64, 512, 300);
  attention_speed("tinyllama long", 32, 4, 64, 4096, 2200);
  attention_speed("mistral", 32, 8, 128, 512, 300);
  attention_speed("mistral long", 32, 8, 128, 4096, 2200);
  attention_speed("gemma3-1b long", 4, 1, 256, 4096, 2200);
  gemv_speed("gemma3-1b qkv", 1536, 1152, FORJA_DECODE_RMSNORM_UNIT_OFFSET);
  gemv_speed("gemma3-1b down", 1152, 6912, FORJA_DECODE_GEGLU);

  // The decoder with the kernels on vs off.
  forja::ModelConfig c = forja::parse_model_config(forja_test::fixture_dir("llama") / "config.json");
  c.hidden_size = 256, c.num_heads = 4, c.num_kv_heads = 2, c.head_dim = 64, c.intermediate_size = 688;
  c.num_layers = 3, c.max_position_embeddings = 1024;
  compare_decoders("llama d64 GQA 2:1", c, false, false, 20, 30);
  compare_decoders("llama d64 GQA 2:1, graphs over 256 -> 512", c, true, false, 250, 20);
  compare_decoders("llama d64 + adapter, graphs", c, true, true, 20, 30);
  forja::ModelConfig m = c;
  m.hidden_size = 512, m.num_heads = 4, m.num_kv_heads = 1, m.head_dim = 128, m.intermediate_size = 1376;
  m.sliding_window = 40;
  compare_decoders("mistral-like d128 GQA 4:1, window 40, graphs", m, true, false, 30, 40);
  // Gemma 3: (1 + w) norms around attention and the MLP, GeGLU, q/k norms, the query_pre_attn_scalar scale,
  // local layers with their own window and RoPE, head size 256.
  forja::ModelConfig g = forja::parse_model_config(forja_test::fixture_dir("gemma3") / "config.json");
  g.hidden_size = 512, g.num_heads = 4, g.num_kv_heads = 1, g.head_dim = 256, g.intermediate_size = 1024;
  g.num_layers = 3, g.max_position_embeddings = 1024, g.sliding_window = 24;
  g.sliding_layers = {true, false, true};
  compare_decoders("gemma3-like d256, local window 24, graphs", g, true, false, 30, 40);
  compare_decoders("gemma3-like d256 + adapter", g, false, true, 30, 40);
  // Gemma 2: the same norms and MLP, no q/k norms, soft-capped attention scores (the fixture's cap, 5), local
  // and global layers alternating.
  forja::ModelConfig g2 = forja::parse_model_config(forja_test::fixture_dir("gemma2") / "config.json");
  g2.hidden_size = 512, g2.num_heads = 4, g2.num_kv_heads = 2, g2.head_dim = 256, g2.intermediate_size = 1024;
  g2.max_position_embeddings = 1024, g2.sliding_window = 24;
  compare_decoders("gemma2-like d256 soft-capped scores, window 24, graphs", g2, true, false, 30, 40);
  compare_decoders("gemma2-like d256 + adapter", g2, false, true, 30, 40);
  forja::ModelConfig q3 = forja::parse_model_config(forja_test::fixture_dir("qwen3") / "config.json");
  q3.hidden_size = 256, q3.num_heads = 4, q3.num_kv_heads = 2, q3.head_dim = 128, q3.intermediate_size = 688;
  q3.num_layers = 3, q3.max_position_embeddings = 1024;
  compare_decoders("qwen3-like d128 q/k norms, graphs", q3, true, false, 30, 40);

  // The NF4 GEMV, and the decoder on a 4-bit base (every in-feature a multiple of the 64-element block).
  for (auto pro : kPrologues) {
    gemv_nf4_case(pro, 1, 32, 32, false, false);
    gemv_nf4_case(pro, 1001, 1024, 64, true, true);    // odd rows: the last warp's second row is out of range
    gemv_nf4_case(pro, 2560, 2048, 64, false, false);  // TinyLlama q/k/v
    gemv_nf4_case(pro, 77, 4224, 128, false, true);    // 132 groups: a partial batch at the end of the row
  }
  gemv_nf4_case(FORJA_DECODE_SWIGLU, 4096, 14336, 64, false, true);   // Mistral down
  gemv_nf4_case(FORJA_DECODE_RMSNORM, 333, 30016, 64, false, false);  // above 40 KB of shared memory
  // More 16-row tiles than blocks (each block takes several, its next tile's codes requested early), with
  // 1, 2 and 4 absmax blocks in a 128-element slice and warps holding unequal numbers of slices.
  gemv_nf4_case(FORJA_DECODE_RMSNORM, 11264, 2048, 64, false, false);
  gemv_nf4_case(FORJA_DECODE_PLAIN, 9000, 4224, 32, true, true);
  gemv_nf4_case(FORJA_DECODE_SWIGLU, 5003, 1024, 128, false, true);
  gemv_nf4_speed("mistral qkv", 6144, 4096, FORJA_DECODE_RMSNORM);
  gemv_nf4_speed("mistral o", 4096, 4096, FORJA_DECODE_PLAIN);
  gemv_nf4_speed("mistral gate_up", 28672, 4096, FORJA_DECODE_RMSNORM);
  gemv_nf4_speed("mistral down", 4096, 14336, FORJA_DECODE_SWIGLU);
  gemv_nf4_speed("tinyllama gate_up", 11264, 2048, FORJA_DECODE_RMSNORM);
  forja::ModelConfig q4 = c;
  q4.intermediate_size = 768;
  compare_decoders("llama d64 4-bit base", q4, false, false, 20, 30, true);
  compare_decoders("llama d64 4-bit base + adapter, graphs", q4, true, true, 20, 30, true);
  forja::ModelConfig m4 = m;
  m4.intermediate_size = 1408;
  compare_decoders("mistral-like d128 4-bit base, window 40, graphs", m4, true, false, 30, 40, true);
  return forja_test::finish("gpu decode kernels");
}
