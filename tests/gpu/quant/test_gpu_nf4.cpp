// NF4 kernels on CUDA against the CPU reference (kernels/nf4/reference.cpp): dequantize must give the same
// bf16 bits; the GEMV must be within 1e-2 relative error (norm-wise) and one bf16 rounding per element. Sizes
// are random and odd as well as Llama-shaped; pointers are sometimes misaligned to take the scalar paths;
// every output is poisoned with NaN bytes before a launch, and a guard after its end must stay untouched. At
// the end, timings of the GEMV on Llama-sized layers (printed, not checked).
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "forja_kernels/nf4.h"
#include "gpu_harness.h"

namespace {

constexpr size_t kGuard = 16;         // bf16 elements after each output that must stay poisoned
constexpr uint16_t kPoison = 0xFFFF;  // a NaN in bf16

#define CUDA_OK(call)                                                                                   \
  do {                                                                                                  \
    cudaError_t err_ = (call);                                                                          \
    if (err_ != cudaSuccess) {                                                                          \
      std::printf("CUDA error %s at %s:%d: %s\n", cudaGetErrorString(err_), __FILE__, __LINE__, #call); \
      std::exit(1);                                                                                     \
    }                                                                                                   \
  } while (0)

// A device copy of a host vector, `offset` bytes into its allocation (to misalign it on purpose).
struct DeviceBuffer {
  void* base = nullptr;
  void* ptr = nullptr;
  DeviceBuffer(const void* host, size_t bytes, size_t offset = 0) {
    CUDA_OK(cudaMalloc(&base, bytes + offset + 16));
    ptr = static_cast<char*>(base) + offset;
    if (host && bytes) CUDA_OK(cudaMemcpy(ptr, host, bytes, cudaMemcpyHostToDevice));
  }
  ~DeviceBuffer() { cudaFree(base); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

// Random NF4 weights: every code byte equally likely, absmax in [0, 0.1) (a zero block now and then), or the
// double-quantized form with q in [-127, 127].
struct HostWeights {
  std::vector<uint8_t> codes;
  std::vector<float> absmax;
  std::vector<int8_t> absmax_q;
  std::vector<float> absmax_scale;
  float offset = 0.0f;
  int64_t block_size = 64, dq_block_size = 256;
  bool dq = false;

  HostWeights(int64_t n, int64_t bs, bool double_quant, int64_t dq_bs, std::mt19937& rng)
      : block_size(bs), dq_block_size(dq_bs), dq(double_quant) {
    codes.resize(size_t((n + 1) / 2));
    for (auto& c : codes) c = uint8_t(rng() & 0xff);
    const int64_t blocks = (n + bs - 1) / bs;
    std::uniform_real_distribution<float> a(0.0f, 0.1f);
    if (!dq) {
      absmax.resize(size_t(blocks));
      for (auto& v : absmax) v = (rng() % 50 == 0) ? 0.0f : a(rng);
    } else {
      absmax_q.resize(size_t(blocks));
      for (auto& q : absmax_q) q = int8_t(int(rng() % 255) - 127);
      absmax_scale.resize(size_t((blocks + dq_bs - 1) / dq_bs));
      for (auto& s : absmax_scale) s = a(rng) / 254.0f;
      offset = 0.05f;
    }
  }

  ForjaNf4Weights host() const {
    ForjaNf4Weights w{};
    w.codes = codes.data();
    w.block_size = block_size;
    if (dq) {
      w.absmax_q = absmax_q.data();
      w.absmax_scale = absmax_scale.data();
      w.absmax_offset = offset;
      w.dq_block_size = dq_block_size;
    } else {
      w.absmax = absmax.data();
    }
    return w;
  }
};

// The same weights on the device; codes `code_offset` bytes into their allocation.
struct DeviceWeights {
  DeviceBuffer codes, absmax, absmax_q, absmax_scale;
  ForjaNf4Weights w{};
  DeviceWeights(const HostWeights& h, size_t code_offset)
      : codes(h.codes.data(), h.codes.size(), code_offset),
        absmax(h.absmax.data(), h.absmax.size() * 4),
        absmax_q(h.absmax_q.data(), h.absmax_q.size()),
        absmax_scale(h.absmax_scale.data(), h.absmax_scale.size() * 4) {
    w = h.host();
    w.codes = static_cast<const uint8_t*>(codes.ptr);
    if (h.dq) {
      w.absmax_q = static_cast<const int8_t*>(absmax_q.ptr);
      w.absmax_scale = static_cast<const float*>(absmax_scale.ptr);
    } else {
      w.absmax = static_cast<const float*>(absmax.ptr);
    }
  }
};

float bf(uint16_t v) {
  return forja_bf16_to_float(v);
}

void check_dequantize(int64_t n, int64_t bs, bool dq, int64_t dq_bs, size_t code_offset, size_t out_offset,
                      std::mt19937& rng) {
  const HostWeights h(n, bs, dq, dq_bs, rng);
  std::vector<uint16_t> ref(static_cast<size_t>(n));
  ForjaNf4Dequantize hp{h.host(), n, ref.data()};
  FORJA_CHECK(forja_nf4_dequantize_bf16_ref(&hp) == 0, "reference refused n=%lld", (long long)n);

  const DeviceWeights d(h, code_offset);
  const size_t total = size_t(n) + kGuard;
  std::vector<uint16_t> got(total, 0);
  DeviceBuffer out(nullptr, total * 2, out_offset * 2);
  CUDA_OK(cudaMemset(out.ptr, 0xFF, total * 2));
  ForjaNf4Dequantize dp{d.w, n, out.ptr};
  const int rc = forja_nf4_dequantize_bf16(&dp, nullptr);
  CUDA_OK(cudaDeviceSynchronize());
  CUDA_OK(cudaMemcpy(got.data(), out.ptr, total * 2, cudaMemcpyDeviceToHost));
  FORJA_CHECK(rc == 0, "launch returned %d", rc);

  int64_t wrong = 0, first = -1;
  for (int64_t i = 0; i < n; ++i)
    if (got[size_t(i)] != ref[size_t(i)]) {
      if (first < 0) first = i;
      ++wrong;
    }
  FORJA_CHECK(wrong == 0,
              "dequantize n=%lld bs=%lld dq=%d dq_bs=%lld offsets %zu/%zu: %lld elements differ, first %lld "
              "(gpu 0x%04x, cpu 0x%04x)",
              (long long)n, (long long)bs, int(dq), (long long)dq_bs, code_offset, out_offset,
              (long long)wrong, (long long)first, first >= 0 ? got[size_t(first)] : 0,
              first >= 0 ? ref[size_t(first)] : 0);
  for (size_t i = size_t(n); i < total; ++i)
    FORJA_CHECK(got[i] == kPoison, "dequantize n=%lld wrote past the end (element %zu)", (long long)n, i);
}

void check_gemv(int64_t rows, int64_t cols, int64_t bs, bool dq, size_t code_offset, size_t x_offset,
                std::mt19937& rng) {
  const HostWeights h(rows * cols, bs, dq, 256, rng);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<uint16_t> x(static_cast<size_t>(cols));
  for (auto& v : x) v = forja_float_to_bf16(nd(rng));
  std::vector<uint16_t> ref(static_cast<size_t>(rows));
  ForjaNf4Gemv hp{h.host(), rows, cols, x.data(), ref.data()};
  FORJA_CHECK(forja_nf4_gemv_bf16_ref(&hp) == 0, "reference refused %lldx%lld", (long long)rows,
              (long long)cols);

  const DeviceWeights d(h, code_offset);
  const DeviceBuffer dx(x.data(), x.size() * 2, x_offset * 2);
  const size_t total = size_t(rows) + kGuard;
  DeviceBuffer dy(nullptr, total * 2);
  CUDA_OK(cudaMemset(dy.ptr, 0xFF, total * 2));
  ForjaNf4Gemv dp{d.w, rows, cols, dx.ptr, dy.ptr};
  const int rc = forja_nf4_gemv_bf16(&dp, nullptr);
  CUDA_OK(cudaDeviceSynchronize());
  std::vector<uint16_t> got(total);
  CUDA_OK(cudaMemcpy(got.data(), dy.ptr, total * 2, cudaMemcpyDeviceToHost));
  FORJA_CHECK(rc == 0, "launch returned %d", rc);

  double diff2 = 0.0, ref2 = 0.0, peak = 0.0;
  for (int64_t r = 0; r < rows; ++r) peak = std::max(peak, std::fabs(double(bf(ref[size_t(r)]))));
  int64_t bad = 0, first = -1;
  for (int64_t r = 0; r < rows; ++r) {
    const double g = bf(got[size_t(r)]), e = bf(ref[size_t(r)]);
    diff2 += (g - e) * (g - e);
    ref2 += e * e;
    // One bf16 rounding apart (2^-8 relative each side), plus fp32 summation-order noise.
    if (!(std::fabs(g - e) <= std::ldexp(1.0, -7) * std::fabs(e) + 1e-3 * peak + 1e-30)) {
      if (first < 0) first = r;
      ++bad;
    }
  }
  const double rel = std::sqrt(diff2 / std::max(ref2, 1e-300));
  FORJA_CHECK(
      rel <= 1e-2 && bad == 0,
      "gemv %lldx%lld bs=%lld dq=%d offsets %zu/%zu: relative error %g, %lld rows off (first %lld: gpu %g, "
      "cpu %g)",
      (long long)rows, (long long)cols, (long long)bs, int(dq), code_offset, x_offset, rel, (long long)bad,
      (long long)first, first >= 0 ? double(bf(got[size_t(first)])) : 0.0,
      first >= 0 ? double(bf(ref[size_t(first)])) : 0.0);
  for (size_t i = size_t(rows); i < total; ++i)
    FORJA_CHECK(got[i] == kPoison, "gemv %lldx%lld wrote past the end", (long long)rows, (long long)cols);
}

void bench_gemv(int64_t rows, int64_t cols, bool dq, std::mt19937& rng) {
  const HostWeights h(rows * cols, 64, dq, 256, rng);
  std::vector<uint16_t> x(size_t(cols), forja_float_to_bf16(0.5f));
  const DeviceWeights d(h, 0);
  const DeviceBuffer dx(x.data(), x.size() * 2);
  DeviceBuffer dy(nullptr, size_t(rows) * 2);
  ForjaNf4Gemv p{d.w, rows, cols, dx.ptr, dy.ptr};
  for (int i = 0; i < 20; ++i) forja_nf4_gemv_bf16(&p, nullptr);
  cudaEvent_t a, b;
  CUDA_OK(cudaEventCreate(&a));
  CUDA_OK(cudaEventCreate(&b));
  const int iters = 200;
  CUDA_OK(cudaEventRecord(a));
  for (int i = 0; i < iters; ++i) forja_nf4_gemv_bf16(&p, nullptr);
  CUDA_OK(cudaEventRecord(b));
  CUDA_OK(cudaEventSynchronize(b));
  float ms = 0.0f;
  CUDA_OK(cudaEventElapsedTime(&ms, a, b));
  const double us = 1000.0 * ms / iters;
  const double bytes = double(h.codes.size()) + 4.0 * double(h.absmax.size()) + double(h.absmax_q.size()) +
                       4.0 * double(h.absmax_scale.size()) + 2.0 * double(cols + rows);
  std::printf("  gemv %6lld x %6lld %s: %8.2f us, %7.1f GB/s\n", (long long)rows, (long long)cols,
              dq ? "dq   " : "plain", us, bytes / (us * 1e3));
  cudaEventDestroy(a);
  cudaEventDestroy(b);
}

}  // namespace

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) forja_test::skip("no CUDA GPU visible");
  cudaDeviceProp prop{};
  CUDA_OK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s\n", prop.name);
  std::mt19937 rng(20230523);  // fixed seed: a failure reproduces

  // Argument checks reach the launchers; nothing to do is fine.
  {
    ForjaNf4Dequantize p{};
    p.n = 8;
    p.w.block_size = 64;
    FORJA_CHECK(forja_nf4_dequantize_bf16(&p, nullptr) == FORJA_NF4_INVALID_ARGUMENT,
                "NULL pointers accepted");
    p.n = 0;
    FORJA_CHECK(forja_nf4_dequantize_bf16(&p, nullptr) == 0, "n = 0 refused");
    ForjaNf4Gemv g{};
    g.w.block_size = 64;
    FORJA_CHECK(forja_nf4_gemv_bf16(&g, nullptr) == 0, "rows = 0 refused");
  }

  // Dequantize: edge sizes, the vector path (block % 8 == 0, aligned), the scalar path (odd blocks,
  // misaligned pointers), double quantization with full and tiny groups.
  for (bool dq : {false, true}) {
    for (int64_t n : {1, 2, 3, 7, 8, 9, 63, 64, 65, 1001, 4097, (1 << 20) + 13}) {
      for (int64_t bs : {2, 8, 30, 64, 128}) {
        check_dequantize(n, bs, dq, 256, 0, 0, rng);
        check_dequantize(n, bs, dq, 3, 0, 0, rng);
      }
      check_dequantize(n, 64, dq, 256, 1, 0, rng);  // codes misaligned
      check_dequantize(n, 64, dq, 256, 0, 1, rng);  // out misaligned
      check_dequantize(n, 64, dq, 256, 2, 3, rng);
    }
    check_dequantize(4096 * 4096, 64, dq, 256, 0, 0, rng);
  }
  std::uniform_int_distribution<int64_t> size(1, 300000);
  const int64_t block_sizes[] = {2, 8, 24, 30, 32, 64, 128, 256};
  for (int i = 0; i < 40; ++i)
    check_dequantize(size(rng) | 1, block_sizes[rng() % 8], rng() % 2 == 0, 1 + int64_t(rng() % 300),
                     rng() % 3, rng() % 2, rng);

  // GEMV: Llama shapes (the vector path), odd shapes (the scalar path), misaligned x or codes.
  const std::pair<int64_t, int64_t> shapes[] = {{1, 1},        {1, 32},       {3, 33},          {17, 64},
                                                {5, 4160},     {64, 4096},    {333, 96},        {4096, 4096},
                                                {11008, 4096}, {4096, 11008}, {1027, 2048 + 32}};
  for (bool dq : {false, true}) {
    for (auto [rows, cols] : shapes) {
      check_gemv(rows, cols, 64, dq, 0, 0, rng);
      if (rows * cols < 5'000'000) {
        check_gemv(rows, cols, 32, dq, 0, 0, rng);
        check_gemv(rows, cols, 128, dq, 0, 0, rng);
        check_gemv(rows, cols, 30, dq, 0, 0, rng);
        check_gemv(rows, cols, 64, dq, 0, 1, rng);   // x misaligned
        check_gemv(rows, cols, 64, dq, 16, 8, rng);  // still aligned
        check_gemv(rows, cols, 64, dq, 4, 0, rng);   // codes misaligned
      }
    }
  }
  std::uniform_int_distribution<int64_t> dim(1, 700);
  for (int i = 0; i < 30; ++i)
    check_gemv(dim(rng), dim(rng) | 1, block_sizes[rng() % 8], rng() % 2 == 0, 0, 0, rng);

  std::printf("GEMV timings (bs 64, bf16 x/y):\n");
  for (bool dq : {false, true}) {
    bench_gemv(4096, 4096, dq, rng);
    bench_gemv(14336, 4096, dq, rng);
    bench_gemv(4096, 14336, dq, rng);
  }
  return forja_test::finish("gpu nf4");
}
