// forja-cli bench kernels [--shape tinyllama|mistral7b|all] [--dtype bf16|fp32] [--tokens 8192] [--runs 20]
// [--json] The fused kernels (kernels/fused) at real layer shapes: each kernel's achieved bandwidth (bytes it
// must read and write / time, CUDA events, median of --runs launches after a warm-up) against the copy
// ceiling measured in the same run (cudaMemcpyAsync device-to-device of a 1 GiB buffer, read + write). These
// kernels are memory-bound, so the ratio is how close each comes to what the GPU can move. CUDA runtime only:
// no LibTorch involved.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench.h"
#include "forja/error.h"
#include "forja_kernels/fused.h"

namespace forja::cli {
namespace {

struct Shape {
  const char* name;
  int64_t hidden, intermediate, heads, kv_heads, head_dim;
};

// TinyLlama-1.1B and Mistral-7B, as bench decode and the peer baseline use them.
constexpr Shape kShapes[] = {{"tinyllama", 2048, 5632, 32, 4, 64}, {"mistral7b", 4096, 14336, 32, 8, 128}};

void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw Error(std::string("bench kernels: ") + what + ": " + cudaGetErrorString(e));
}

void launch_check(const char* err, const std::string& what) {
  if (err) throw Error("bench kernels: " + what + ": " + err);
}

// A device buffer filled with the byte 0x3c: about 0.0115 in fp32 and bf16 alike, so every input is a finite,
// ordinary number (the values do not change the traffic).
class Buffer {
 public:
  explicit Buffer(size_t bytes) {
    cuda_check(cudaMalloc(&ptr_, bytes > 0 ? bytes : 1), "cudaMalloc");
    cuda_check(cudaMemset(ptr_, 0x3c, bytes), "cudaMemset");
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() { cudaFree(ptr_); }
  void* get() const { return ptr_; }
  float* f32() const { return static_cast<float*>(ptr_); }

 private:
  void* ptr_ = nullptr;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

// Median seconds of `runs` launches of `launch`, each timed by its own pair of events, after three warm-up
// runs.
double time_median(const std::function<void()>& launch, int runs) {
  cudaEvent_t start, stop;
  cuda_check(cudaEventCreate(&start), "cudaEventCreate");
  cuda_check(cudaEventCreate(&stop), "cudaEventCreate");
  for (int i = 0; i < 3; ++i) launch();
  std::vector<double> seconds;
  for (int i = 0; i < runs; ++i) {
    cuda_check(cudaEventRecord(start), "cudaEventRecord");
    launch();
    cuda_check(cudaEventRecord(stop), "cudaEventRecord");
    cuda_check(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float ms = 0;
    cuda_check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    seconds.push_back(ms * 1e-3);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return median(seconds);
}

// Device-to-device copy bandwidth (bytes read + written per second) of a 1 GiB buffer.
double copy_ceiling(int runs) {
  constexpr size_t kBytes = size_t{1} << 30;
  Buffer src(kBytes), dst(kBytes);
  const double s = time_median(
      [&] { cuda_check(cudaMemcpyAsync(dst.get(), src.get(), kBytes, cudaMemcpyDeviceToDevice), "copy"); },
      runs);
  return 2.0 * static_cast<double>(kBytes) / s;
}

struct Row {
  std::string shape, kernel;
  double bytes, seconds;
};

// Times every kernel at one shape; `bytes` counts each tensor the kernel must read or write once.
std::vector<Row> bench_shape(const Shape& s, ForjaFusedDType dtype, int64_t tokens, int runs) {
  const size_t es = dtype == FORJA_FUSED_F32 ? 4 : 2;
  const int64_t hidden_n = tokens * s.hidden, inter_n = tokens * s.intermediate;
  const int64_t q_n = tokens * s.heads * s.head_dim, k_n = tokens * s.kv_heads * s.head_dim;
  const int64_t table_n = tokens * s.head_dim / 2;
  const size_t big = static_cast<size_t>(std::max(hidden_n, inter_n)) * es;
  // Five activation-sized buffers cover the widest kernel (SwiGLU backward: three in, two out).
  Buffer a(big), b(big), c(big), d(big), e(big), weight(s.hidden * es), rstd(tokens * 4),
      dweight(s.hidden * 4);
  Buffer cos_t(table_n * 4), sin_t(table_n * 4);
  Buffer ws(forja_fused_rmsnorm_backward_workspace_bytes(tokens, s.hidden));
  std::vector<Row> rows;
  auto add = [&](const std::string& kernel, double bytes, const std::function<void()>& launch) {
    rows.push_back({s.name, kernel, bytes, time_median(launch, runs)});
  };
  const double act = static_cast<double>(es);

  ForjaRmsNormForward nf{dtype,   tokens,       s.hidden, 1e-5f,   a.get(),
                         b.get(), weight.get(), c.get(),  d.get(), rstd.f32()};
  add("rmsnorm+residual fwd", act * (4.0 * hidden_n + s.hidden) + 4.0 * tokens,
      [&] { launch_check(forja_fused_rmsnorm_forward(&nf, nullptr), "rmsnorm forward"); });
  ForjaRmsNormBackward nb{dtype,        tokens,     s.hidden, a.get(), b.get(), c.get(),
                          weight.get(), rstd.f32(), d.get(),  nullptr, nullptr};
  add("rmsnorm bwd (+dh_in)", act * (4.0 * hidden_n + s.hidden) + 4.0 * tokens,
      [&] { launch_check(forja_fused_rmsnorm_backward(&nb, nullptr), "rmsnorm backward"); });
  ForjaRmsNormBackward nbw = nb;
  nbw.dweight = dweight.f32(), nbw.workspace = ws.get();
  add("rmsnorm bwd (+dh_in, +dw)", act * (4.0 * hidden_n + s.hidden) + 4.0 * tokens + 4.0 * s.hidden,
      [&] { launch_check(forja_fused_rmsnorm_backward(&nbw, nullptr), "rmsnorm backward with dweight"); });

  ForjaRope rope{dtype,   tokens,  s.heads, s.kv_heads,  s.head_dim,  c.get(),
                 d.get(), a.get(), b.get(), cos_t.f32(), sin_t.f32(), nullptr};
  const double rope_bytes = act * 2.0 * (q_n + k_n) + 8.0 * table_n;
  add("rope fwd", rope_bytes,
      [&] { launch_check(forja_fused_rope_forward(&rope, nullptr), "rope forward"); });
  add("rope bwd", rope_bytes,
      [&] { launch_check(forja_fused_rope_backward(&rope, nullptr), "rope backward"); });

  ForjaSwigluForward sf{dtype, inter_n, a.get(), b.get(), c.get()};
  add("swiglu fwd", act * 3.0 * inter_n,
      [&] { launch_check(forja_fused_swiglu_forward(&sf, nullptr), "swiglu forward"); });
  ForjaSwigluBackward sb{dtype, inter_n, a.get(), b.get(), c.get(), d.get(), e.get()};
  add("swiglu bwd", act * 5.0 * inter_n,
      [&] { launch_check(forja_fused_swiglu_backward(&sb, nullptr), "swiglu backward"); });
  ForjaGeluForward gf{dtype, inter_n, a.get(), c.get()};
  add("gelu-tanh fwd", act * 2.0 * inter_n,
      [&] { launch_check(forja_fused_gelu_tanh_forward(&gf, nullptr), "gelu forward"); });
  ForjaGeluBackward gb{dtype, inter_n, a.get(), b.get(), c.get()};
  add("gelu-tanh bwd", act * 3.0 * inter_n,
      [&] { launch_check(forja_fused_gelu_tanh_backward(&gb, nullptr), "gelu backward"); });

  // The LM-head loss's softmax / cross-entropy kernel over one chunk of logits as core/train/loss.cpp makes
  // it (loss_chunk_rows: 256 MiB of fp32 logits, 2048 rows at both shapes' 32000-token vocabulary), gradient
  // written in place: the chunk read once and written once, plus labels and losses. Labels 0 (valid rows).
  constexpr int64_t kVocab = 32000;
  const int64_t ce_rows = std::min<int64_t>(tokens, (int64_t{256} << 20) / (kVocab * 4));
  Buffer logits(static_cast<size_t>(ce_rows * kVocab) * es), labels(ce_rows * 8), losses(ce_rows * 4);
  cuda_check(cudaMemset(labels.get(), 0, ce_rows * 8), "cudaMemset");
  ForjaCrossEntropy ce{dtype,        ce_rows, kVocab,       -100,
                       1.0f,         1,       logits.get(), static_cast<const int64_t*>(labels.get()),
                       losses.f32(), nullptr};
  add("cross-entropy + grad", act * 2.0 * ce_rows * kVocab + 12.0 * ce_rows,
      [&] { launch_check(forja_fused_cross_entropy(&ce, nullptr), "cross entropy"); });
  cuda_check(cudaDeviceSynchronize(), "kernels");
  return rows;
}

int run_kernels_bench(Args& args) {
  args.reject_unknown({"shape", "dtype", "tokens", "runs"});
  const std::string shape = args.option_or("shape", "all");
  const std::string dtype_name = args.option_or("dtype", "bf16");
  const int64_t tokens = std::stoll(args.option_or("tokens", "8192"));
  const int runs = std::max(1, std::stoi(args.option_or("runs", "20")));
  if (dtype_name != "bf16" && dtype_name != "fp32")
    throw Error("--dtype takes bf16 or fp32, got '" + dtype_name + "'");
  if (shape != "all" && shape != "tinyllama" && shape != "mistral7b")
    throw Error("unknown shape '" + shape + "'", "the shapes are tinyllama, mistral7b and all");
  if (tokens < 1) throw Error("--tokens must be at least 1");
  const ForjaFusedDType dtype = dtype_name == "fp32" ? FORJA_FUSED_F32 : FORJA_FUSED_BF16;

  int devices = 0;
  const cudaError_t probe = cudaGetDeviceCount(&devices);
  if (probe != cudaSuccess || devices == 0) {
    const std::string why = probe != cudaSuccess ? cudaGetErrorString(probe) : "no device";
    if (args.flag("json"))
      std::printf("%s\n", nlohmann::json({{"skipped", "no CUDA GPU visible: " + why}}).dump().c_str());
    else
      std::printf("bench kernels: skipped, no CUDA GPU visible (%s)\n", why.c_str());
    return 0;
  }
  cudaDeviceProp prop{};
  cuda_check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");

  const double ceiling = copy_ceiling(runs);
  std::vector<Row> rows;
  for (const Shape& s : kShapes)
    if (shape == "all" || shape == s.name)
      for (Row& r : bench_shape(s, dtype, tokens, runs)) rows.push_back(std::move(r));

  if (args.flag("json")) {
    nlohmann::ordered_json out = {{"bench", "kernels"},
                                  {"device", prop.name},
                                  {"dtype", dtype_name},
                                  {"tokens", tokens},
                                  {"runs", runs},
                                  {"copy_gb_s", ceiling / 1e9},
                                  {"kernels", nlohmann::json::array()}};
    for (const Row& r : rows)
      out["kernels"].push_back({{"shape", r.shape},
                                {"kernel", r.kernel},
                                {"bytes", r.bytes},
                                {"us", r.seconds * 1e6},
                                {"gb_s", r.bytes / r.seconds / 1e9},
                                {"of_copy", r.bytes / r.seconds / ceiling}});
    std::printf("%s\n", out.dump().c_str());
    return 0;
  }
  std::printf("bench kernels: %s, %s, %lld tokens, median of %d\n", prop.name, dtype_name.c_str(),
              static_cast<long long>(tokens), runs);
  std::printf("  copy ceiling (1 GiB device-to-device, read + write): %.0f GB/s\n", ceiling / 1e9);
  std::printf("  %-10s %-26s %10s %10s %9s %8s\n", "shape", "kernel", "MB", "us", "GB/s", "of copy");
  for (const Row& r : rows)
    std::printf("  %-10s %-26s %10.1f %10.1f %9.0f %7.0f%%\n", r.shape.c_str(), r.kernel.c_str(),
                r.bytes / 1e6, r.seconds * 1e6, r.bytes / r.seconds / 1e9,
                100.0 * r.bytes / r.seconds / ceiling);
  return 0;
}

}  // namespace
}  // namespace forja::cli

FORJA_BENCH(
    kernels, "Fused kernels' bandwidth at TinyLlama / Mistral-7B shapes against the copy ceiling",
    "bench kernels [--shape tinyllama|mistral7b|all] [--dtype bf16|fp32] [--tokens N] [--runs R] [--json]",
    forja::cli::run_kernels_bench);
