// Every fused kernel (forja_kernels/fused.h), forward and backward, and the cross-entropy kernel, in fp32 and
// bf16, against its CPU reference on the same inputs. Sizes are odd (element-wise paths) and vector-aligned
// (16-byte paths), including buffers shifted by one element so that aligned sizes take the element-wise path
// too. Outputs are filled with NaN bytes before each launch, so an element a kernel fails to write fails the
// comparison. Bars: relative error ‖gpu − ref‖ / ‖ref‖ <= 1e-5 in fp32 and <= 1e-2 in bf16.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "forja_kernels/fused.h"
#include "gpu_harness.h"

namespace {

const char* dtype_name(ForjaFusedDType d) {
  return d == FORJA_FUSED_F32 ? "fp32" : "bf16";
}
size_t elem_size(ForjaFusedDType d) {
  return d == FORJA_FUSED_F32 ? 4 : 2;
}
double tolerance(ForjaFusedDType d) {
  return d == FORJA_FUSED_F32 ? 1e-5 : 1e-2;
}

void cuda_ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::printf("CUDA error in %s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

// Values held as the storage dtype's bytes; `values` is what they read back as.
struct Host {
  ForjaFusedDType dtype;
  std::vector<float> values;
  std::vector<unsigned char> bytes;

  Host(ForjaFusedDType d, std::vector<float> v) : dtype(d) { set(std::move(v)); }
  void set(std::vector<float> v) {
    bytes.assign(v.size() * elem_size(dtype), 0);
    for (size_t i = 0; i < v.size(); ++i) {
      if (dtype == FORJA_FUSED_F32) {
        std::memcpy(&bytes[i * 4], &v[i], 4);
      } else {
        const uint16_t b = forja_float_to_bf16(v[i]);
        std::memcpy(&bytes[i * 2], &b, 2);
        v[i] = forja_bf16_to_float(b);
      }
    }
    values = std::move(v);
  }
  void decode() {
    values.resize(bytes.size() / elem_size(dtype));
    for (size_t i = 0; i < values.size(); ++i) {
      if (dtype == FORJA_FUSED_F32) {
        std::memcpy(&values[i], &bytes[i * 4], 4);
      } else {
        uint16_t b;
        std::memcpy(&b, &bytes[i * 2], 2);
        values[i] = forja_bf16_to_float(b);
      }
    }
  }
  void* data() { return bytes.data(); }
  const void* data() const { return bytes.data(); }
  size_t size() const { return values.size(); }
};

Host random_host(ForjaFusedDType d, size_t n, uint32_t seed, float lo = -2.0f, float hi = 2.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return Host(d, std::move(v));
}

Host zeros_host(ForjaFusedDType d, size_t n) {
  return Host(d, std::vector<float>(n, 0.0f));
}

// Device memory for `bytes` bytes starting `shift` bytes into the allocation (a shift of one element makes a
// buffer that is not 16-byte aligned).
class Device {
 public:
  Device(size_t bytes, size_t shift = 0) : bytes_(bytes) {
    cuda_ok(cudaMalloc(&base_, bytes + shift + 16), "cudaMalloc");
    ptr_ = static_cast<unsigned char*>(base_) + shift;
  }
  Device(Device&& o) noexcept : base_(o.base_), ptr_(o.ptr_), bytes_(o.bytes_) { o.base_ = nullptr; }
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;
  ~Device() { cudaFree(base_); }
  void* get() const { return ptr_; }
  void upload(const void* src) { cuda_ok(cudaMemcpy(ptr_, src, bytes_, cudaMemcpyHostToDevice), "upload"); }
  void download(void* dst) const {
    cuda_ok(cudaMemcpy(dst, ptr_, bytes_, cudaMemcpyDeviceToHost), "download");
  }
  void poison() {
    cuda_ok(cudaMemset(ptr_, 0xff, bytes_), "poison");
  }  // all-ones bytes: NaN in fp32 and bf16

 private:
  void* base_ = nullptr;
  unsigned char* ptr_ = nullptr;
  size_t bytes_;
};

Device to_device(const Host& h, size_t shift = 0) {
  Device d(h.bytes.size(), shift);
  d.upload(h.bytes.data());
  return d;
}

std::vector<float> download(const Device& d, ForjaFusedDType dtype, size_t n) {
  Host h = zeros_host(dtype, n);
  d.download(h.data());
  h.decode();
  return h.values;
}

std::vector<float> download_f32(const Device& d, size_t n) {
  std::vector<float> v(n);
  d.download(v.data());
  return v;
}

double rel_error(const std::vector<float>& got, const std::vector<float>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double diff = double(got[i]) - double(ref[i]);
    num += diff * diff;
    den += double(ref[i]) * ref[i];
  }
  return std::sqrt(num) / std::max(std::sqrt(den), 1e-30);
}

size_t non_finite(const std::vector<float>& v) {
  size_t n = 0;
  for (float x : v) n += !std::isfinite(x);
  return n;
}

void expect_close(const std::string& what, ForjaFusedDType d, const std::vector<float>& got,
                  const std::vector<float>& ref, double tol) {
  const double err = rel_error(got, ref);
  const size_t bad = non_finite(got);
  FORJA_CHECK(bad == 0 && err <= tol, "%s %s: rel err %.3g (bar %.0e), %zu non-finite of %zu", what.c_str(),
              dtype_name(d), err, tol, bad, got.size());
}

void launch_ok(const char* err, const std::string& what) {
  FORJA_CHECK(err == nullptr, "%s: %s", what.c_str(), err ? err : "");
  cuda_ok(cudaDeviceSynchronize(), what.c_str());
}

// ---- RMSNorm
// ----------------------------------------------------------------------------------------------------

void test_rmsnorm(ForjaFusedDType d, int64_t rows, int64_t cols, bool residual, bool with_dh_in,
                  size_t shift) {
  const std::string what = "rmsnorm " + std::to_string(rows) + "x" + std::to_string(cols) +
                           (residual ? " +residual" : "") + (with_dh_in ? " +dh_in" : "") +
                           (shift ? " shifted" : "");
  const size_t n = size_t(rows) * cols;
  const double tol = tolerance(d);
  Host x = random_host(d, n, 1), r = random_host(d, n, 2), w = random_host(d, cols, 3, 0.5f, 1.5f);
  const float eps = 1e-5f;

  // Reference forward.
  Host h_ref = zeros_host(d, residual ? n : 0), y_ref = zeros_host(d, n);
  std::vector<float> rstd_ref(rows);
  ForjaRmsNormForward ref{d,
                          rows,
                          cols,
                          eps,
                          x.data(),
                          residual ? r.data() : nullptr,
                          w.data(),
                          residual ? h_ref.data() : nullptr,
                          y_ref.data(),
                          rstd_ref.data()};
  FORJA_CHECK(forja_fused_rmsnorm_forward_ref(&ref) == nullptr, "reference forward");
  h_ref.decode(), y_ref.decode();

  // GPU forward.
  Device xd = to_device(x, shift), rd = to_device(r, shift), wd = to_device(w, shift);
  Device hd(n * elem_size(d), shift), yd(n * elem_size(d), shift), rstd_d(rows * 4);
  hd.poison(), yd.poison(), rstd_d.poison();
  ForjaRmsNormForward fwd{d,        rows,
                          cols,     eps,
                          xd.get(), residual ? rd.get() : nullptr,
                          wd.get(), residual ? hd.get() : nullptr,
                          yd.get(), static_cast<float*>(rstd_d.get())};
  launch_ok(forja_fused_rmsnorm_forward(&fwd, nullptr), what + " forward");
  expect_close(what + " y", d, download(yd, d, n), y_ref.values, tol);
  if (residual) expect_close(what + " h", d, download(hd, d, n), h_ref.values, tol);
  expect_close(what + " rstd", d, download_f32(rstd_d, rows), rstd_ref, 1e-5);

  // Backward from the reference's h and rstd, so that it is compared on identical inputs.
  Host dy = random_host(d, n, 4), dh_in = random_host(d, n, 5);
  const Host& h_in = residual ? h_ref : x;
  Host dh_ref = zeros_host(d, n);
  std::vector<float> dw_ref(cols);
  ForjaRmsNormBackward bref{d,
                            rows,
                            cols,
                            dy.data(),
                            with_dh_in ? dh_in.data() : nullptr,
                            h_in.data(),
                            w.data(),
                            rstd_ref.data(),
                            dh_ref.data(),
                            dw_ref.data(),
                            nullptr};
  FORJA_CHECK(forja_fused_rmsnorm_backward_ref(&bref) == nullptr, "reference backward");
  dh_ref.decode();

  Device dyd = to_device(dy, shift), dh_in_d = to_device(dh_in, shift), h_in_d = to_device(h_in, shift);
  Device rstd_in(rows * 4);
  rstd_in.upload(rstd_ref.data());
  Device dhd(n * elem_size(d), shift), dwd(cols * 4);
  Device ws(forja_fused_rmsnorm_backward_workspace_bytes(rows, cols));
  ForjaRmsNormBackward bwd{d,
                           rows,
                           cols,
                           dyd.get(),
                           with_dh_in ? dh_in_d.get() : nullptr,
                           h_in_d.get(),
                           wd.get(),
                           static_cast<const float*>(rstd_in.get()),
                           dhd.get(),
                           static_cast<float*>(dwd.get()),
                           ws.get()};
  dhd.poison(), dwd.poison();
  launch_ok(forja_fused_rmsnorm_backward(&bwd, nullptr), what + " backward");
  expect_close(what + " dh", d, download(dhd, d, n), dh_ref.values, tol);
  // dweight is an fp32 sum over every row whatever the dtype; 1e-5 relative in both.
  const std::vector<float> dw1 = download_f32(dwd, cols);
  expect_close(what + " dweight", d, dw1, dw_ref, 1e-5);
  // Reproducible bit for bit: a second run gives the same weight gradient.
  dwd.poison();
  launch_ok(forja_fused_rmsnorm_backward(&bwd, nullptr), what + " backward again");
  FORJA_CHECK(std::memcmp(download_f32(dwd, cols).data(), dw1.data(), cols * 4) == 0,
              "%s %s: dweight differs between runs", what.c_str(), dtype_name(d));
  // Without the weight gradient (the LoRA case): same dh, no workspace.
  dhd.poison();
  bwd.dweight = nullptr, bwd.workspace = nullptr;
  launch_ok(forja_fused_rmsnorm_backward(&bwd, nullptr), what + " backward without dweight");
  expect_close(what + " dh (no dweight)", d, download(dhd, d, n), dh_ref.values, tol);
  // In place over dh_in.
  if (with_dh_in) {
    bwd.dh = dh_in_d.get();
    launch_ok(forja_fused_rmsnorm_backward(&bwd, nullptr), what + " backward in place");
    expect_close(what + " dh (in place)", d, download(dh_in_d, d, n), dh_ref.values, tol);
  }
}

// ---- RoPE
// -------------------------------------------------------------------------------------------------------

void test_rope(ForjaFusedDType d, int64_t tokens, int64_t qh, int64_t kvh, int64_t dim, bool positions,
               size_t shift) {
  const std::string what = "rope t" + std::to_string(tokens) + " q" + std::to_string(qh) + " kv" +
                           std::to_string(kvh) + " d" + std::to_string(dim) +
                           (positions ? " +positions" : "") + (shift ? " shifted" : "");
  const double tol = tolerance(d);
  const int64_t half = dim / 2, table_rows = positions ? tokens * 2 + 3 : tokens;
  // Tables as the model builds them: angle = position * inv_freq, inv_freq = 10000^(-2i/dim).
  std::vector<float> cos_t(size_t(table_rows * half)), sin_t(cos_t.size());
  for (int64_t p = 0; p < table_rows; ++p)
    for (int64_t i = 0; i < half; ++i) {
      const double a = double(p) * std::pow(10000.0, -2.0 * double(i) / double(dim));
      cos_t[p * half + i] = float(std::cos(a)), sin_t[p * half + i] = float(std::sin(a));
    }
  std::vector<int64_t> pos(tokens);
  for (int64_t t = 0; t < tokens; ++t) pos[t] = (t * 5 + 1) % table_rows;
  Device cos_d(cos_t.size() * 4), sin_d(sin_t.size() * 4), pos_d(pos.size() * 8);
  cos_d.upload(cos_t.data()), sin_d.upload(sin_t.data()), pos_d.upload(pos.data());

  Host q = random_host(d, size_t(tokens * qh * dim), 6), k = random_host(d, size_t(tokens * kvh * dim), 7);
  Host q_ref = q, k_ref = k;
  ForjaRope ref{d,       tokens,       qh,           kvh,
                dim,     q_ref.data(), k_ref.data(), nullptr,
                nullptr, cos_t.data(), sin_t.data(), positions ? pos.data() : nullptr};
  FORJA_CHECK(forja_fused_rope_forward_ref(&ref) == nullptr, "reference rope");
  q_ref.decode(), k_ref.decode();

  for (int direction = 0; direction < 2; ++direction) {
    const bool forward = direction == 0;
    // The backward is checked on the forward's output: it must give the input back (and match the reference).
    const Host& in_q = forward ? q : q_ref;
    const Host& in_k = forward ? k : k_ref;
    Host want_q = in_q, want_k = in_k;
    ForjaRope r = ref;
    r.q = want_q.data(), r.k = want_k.data();
    FORJA_CHECK((forward ? forja_fused_rope_forward_ref(&r) : forja_fused_rope_backward_ref(&r)) == nullptr,
                "ref");
    want_q.decode(), want_k.decode();
    const std::string name = what + (forward ? " forward" : " backward");

    // From a source buffer into poisoned outputs.
    Device qs = to_device(in_q, shift), ks = to_device(in_k, shift);
    Device qo(in_q.bytes.size(), shift), ko(in_k.bytes.size(), shift);
    qo.poison(), ko.poison();
    ForjaRope g{d,
                tokens,
                qh,
                kvh,
                dim,
                qo.get(),
                ko.get(),
                qs.get(),
                ks.get(),
                static_cast<const float*>(cos_d.get()),
                static_cast<const float*>(sin_d.get()),
                positions ? static_cast<const int64_t*>(pos_d.get()) : nullptr};
    launch_ok(forward ? forja_fused_rope_forward(&g, nullptr) : forja_fused_rope_backward(&g, nullptr), name);
    expect_close(name + " q", d, download(qo, d, in_q.size()), want_q.values, tol);
    if (kvh) expect_close(name + " k", d, download(ko, d, in_k.size()), want_k.values, tol);
    // In place.
    g.q = qs.get(), g.k = ks.get(), g.q_src = nullptr, g.k_src = nullptr;
    launch_ok(forward ? forja_fused_rope_forward(&g, nullptr) : forja_fused_rope_backward(&g, nullptr), name);
    expect_close(name + " q in place", d, download(qs, d, in_q.size()), want_q.values, tol);
    if (kvh) expect_close(name + " k in place", d, download(ks, d, in_k.size()), want_k.values, tol);
    if (!forward) expect_close(name + " undoes forward", d, want_q.values, q.values, tol);
  }
}

// ---- SwiGLU and GELU-tanh
// ---------------------------------------------------------------------------------------

void test_activations(ForjaFusedDType d, int64_t n, size_t shift) {
  const std::string what = "n" + std::to_string(n) + (shift ? " shifted" : "");
  const double tol = tolerance(d);
  const size_t bytes = size_t(n) * elem_size(d);
  Host gate = random_host(d, n, 8, -6, 6), up = random_host(d, n, 9), dout = random_host(d, n, 10);
  Device gd = to_device(gate, shift), ud = to_device(up, shift), dd = to_device(dout, shift);
  Device o1(bytes, shift), o2(bytes, shift);

  {  // SwiGLU forward
    Host want = zeros_host(d, n);
    ForjaSwigluForward r{d, n, gate.data(), up.data(), want.data()};
    FORJA_CHECK(forja_fused_swiglu_forward_ref(&r) == nullptr, "ref");
    want.decode();
    o1.poison();
    ForjaSwigluForward g{d, n, gd.get(), ud.get(), o1.get()};
    launch_ok(forja_fused_swiglu_forward(&g, nullptr), "swiglu forward");
    expect_close("swiglu forward " + what, d, download(o1, d, n), want.values, tol);
  }
  {  // SwiGLU backward
    Host wg = zeros_host(d, n), wu = zeros_host(d, n);
    ForjaSwigluBackward r{d, n, dout.data(), gate.data(), up.data(), wg.data(), wu.data()};
    FORJA_CHECK(forja_fused_swiglu_backward_ref(&r) == nullptr, "ref");
    wg.decode(), wu.decode();
    o1.poison(), o2.poison();
    ForjaSwigluBackward g{d, n, dd.get(), gd.get(), ud.get(), o1.get(), o2.get()};
    launch_ok(forja_fused_swiglu_backward(&g, nullptr), "swiglu backward");
    expect_close("swiglu dgate " + what, d, download(o1, d, n), wg.values, tol);
    expect_close("swiglu dup " + what, d, download(o2, d, n), wu.values, tol);
  }
  {  // GELU-tanh forward (gate as x)
    Host want = zeros_host(d, n);
    ForjaGeluForward r{d, n, gate.data(), want.data()};
    FORJA_CHECK(forja_fused_gelu_tanh_forward_ref(&r) == nullptr, "ref");
    want.decode();
    o1.poison();
    ForjaGeluForward g{d, n, gd.get(), o1.get()};
    launch_ok(forja_fused_gelu_tanh_forward(&g, nullptr), "gelu forward");
    expect_close("gelu forward " + what, d, download(o1, d, n), want.values, tol);
  }
  {  // GELU-tanh backward
    Host want = zeros_host(d, n);
    ForjaGeluBackward r{d, n, dout.data(), gate.data(), want.data()};
    FORJA_CHECK(forja_fused_gelu_tanh_backward_ref(&r) == nullptr, "ref");
    want.decode();
    o1.poison();
    ForjaGeluBackward g{d, n, dd.get(), gd.get(), o1.get()};
    launch_ok(forja_fused_gelu_tanh_backward(&g, nullptr), "gelu backward");
    expect_close("gelu backward " + what, d, download(o1, d, n), want.values, tol);
  }
  {  // In place: dgate over gate and dup over up (the header allows it).
    Host wg = zeros_host(d, n), wu = zeros_host(d, n);
    ForjaSwigluBackward r{d, n, dout.data(), gate.data(), up.data(), wg.data(), wu.data()};
    FORJA_CHECK(forja_fused_swiglu_backward_ref(&r) == nullptr, "ref");
    wg.decode(), wu.decode();
    ForjaSwigluBackward g{d, n, dd.get(), gd.get(), ud.get(), gd.get(), ud.get()};
    launch_ok(forja_fused_swiglu_backward(&g, nullptr), "swiglu backward in place");
    expect_close("swiglu dgate in place " + what, d, download(gd, d, n), wg.values, tol);
    expect_close("swiglu dup in place " + what, d, download(ud, d, n), wu.values, tol);
  }
}

// ---- Cross-entropy (the LM-head loss's softmax half)
// -----------------------------------------------------------

// Every fourth row ignored (or all of them); the rest labelled at random, including the last class. The
// gradient is written over the logits, so the device logits are the input and the output: an element the
// kernel fails to write keeps its logit and fails the comparison. Losses and logsumexps are poisoned.
void test_cross_entropy(ForjaFusedDType d, int64_t rows, int64_t vocab, bool all_ignored, size_t shift) {
  const std::string what = "cross entropy " + std::to_string(rows) + "x" + std::to_string(vocab) +
                           (all_ignored ? " all ignored" : "") + (shift ? " shifted" : "");
  const size_t n = size_t(rows) * vocab;
  Host logits = random_host(d, n, 21, -8.0f, 8.0f);
  std::vector<int64_t> labels(rows);
  std::mt19937 gen(22);
  for (int64_t r = 0; r < rows; ++r)
    labels[r] = all_ignored || r % 4 == 1 ? -100 : (r == 2 ? vocab - 1 : int64_t(gen() % vocab));
  const float scale = 1.0f / 3.0f;  // a mean over three rows, say

  for (int write_grad : {1, 0}) {
    Host want = logits;
    std::vector<float> want_loss(rows), want_lse(rows);
    ForjaCrossEntropy r{d,
                        rows,
                        vocab,
                        -100,
                        scale,
                        write_grad,
                        want.data(),
                        labels.data(),
                        want_loss.data(),
                        want_lse.data()};
    FORJA_CHECK(forja_fused_cross_entropy_ref(&r) == nullptr, "ref");
    want.decode();

    Device ld = to_device(logits, shift);
    Device lab(labels.size() * sizeof(int64_t));
    lab.upload(labels.data());
    Device loss(size_t(rows) * 4), lse(size_t(rows) * 4);
    loss.poison(), lse.poison();
    ForjaCrossEntropy g{d,
                        rows,
                        vocab,
                        -100,
                        scale,
                        write_grad,
                        ld.get(),
                        static_cast<const int64_t*>(lab.get()),
                        static_cast<float*>(loss.get()),
                        static_cast<float*>(lse.get())};
    launch_ok(forja_fused_cross_entropy(&g, nullptr), what);
    const std::string tag = what + (write_grad ? "" : " (no grad)");
    // Losses and logsumexps come from the same stored logits in fp32 arithmetic in both dtypes: fp32's bar.
    std::vector<float> got_loss = download_f32(loss, rows);
    if (all_ignored) {
      size_t nonzero = 0;
      for (float v : got_loss) nonzero += v != 0.0f;
      FORJA_CHECK(nonzero == 0, "%s: %zu ignored rows with a nonzero loss", tag.c_str(), nonzero);
    } else {
      expect_close(tag + " loss", d, got_loss, want_loss, 1e-5);
    }
    expect_close(tag + " logsumexp", d, download_f32(lse, rows), want_lse, 1e-5);
    std::vector<float> got = download(ld, d, n);
    if (all_ignored && write_grad) {
      size_t nonzero = 0;
      for (float v : got) nonzero += v != 0.0f;
      FORJA_CHECK(nonzero == 0, "%s: %zu gradient elements nonzero", tag.c_str(), nonzero);
    } else {
      expect_close(tag + (write_grad ? " gradient" : " logits untouched"), d, got, want.values, tolerance(d));
    }
  }
}

}  // namespace

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) forja_test::skip("no CUDA GPU visible");

  for (ForjaFusedDType d : {FORJA_FUSED_F32, FORJA_FUSED_BF16}) {
    const size_t one = elem_size(d);
    // RMSNorm: odd widths, vector widths (TinyLlama's 2048, Mistral's 4096), a width whose fp32 partial row
    // needs more than the default 48 KiB of shared memory (16384), one too wide for shared memory at all
    // (30000), and more rows than backward blocks (1500 > 512).
    test_rmsnorm(d, 7, 1003, true, true, 0);
    test_rmsnorm(d, 3, 3, true, false, 0);  // (width 1 is degenerate: y = ±w, dh is all cancellation)
    test_rmsnorm(d, 5, 2048, true, true, 0);
    test_rmsnorm(d, 5, 2048, false, false, 0);
    test_rmsnorm(d, 5, 2048, true, true, one);
    test_rmsnorm(d, 9, 4096, false, true, 0);
    test_rmsnorm(d, 4, 16384, true, true, 0);
    test_rmsnorm(d, 3, 30000, true, false, 0);
    test_rmsnorm(d, 1500, 129, true, true, 0);
    test_rmsnorm(d, 1500, 256, false, true, 0);
    // RoPE: TinyLlama's (32 q / 4 kv heads, head_dim 64) and Mistral's (head_dim 128) head shapes, an odd
    // half (head_dim 6), head_dim 2, positions looked up in a longer table, and shifted (unaligned) buffers.
    test_rope(d, 37, 32, 4, 64, false, 0);
    test_rope(d, 11, 32, 8, 128, true, 0);
    test_rope(d, 13, 5, 1, 6, true, 0);
    test_rope(d, 6, 3, 3, 2, false, 0);
    test_rope(d, 7, 4, 2, 64, false, one);
    test_rope(d, 9, 3, 0, 16, false, 0);
    // SwiGLU / GELU: tiny, odd, a vector multiple plus a tail, and unaligned.
    for (int64_t n : {1, 7, 1001, 5632 * 3 + 5, (1 << 20) + 3}) test_activations(d, n, 0);
    test_activations(d, 5632 * 3, one);
    // Cross-entropy: a real vocabulary (32000, a vector multiple), odd ones (1001, 3, 1), many rows, all rows
    // ignored, and a shifted (unaligned) buffer.
    test_cross_entropy(d, 5, 32000, false, 0);
    test_cross_entropy(d, 37, 1001, false, 0);
    test_cross_entropy(d, 9, 3, false, 0);
    test_cross_entropy(d, 4, 1, false, 0);
    test_cross_entropy(d, 600, 256, false, 0);
    test_cross_entropy(d, 6, 515, true, 0);
    test_cross_entropy(d, 7, 4096, false, one);
  }
  return forja_test::finish("gpu fused kernels");
}
