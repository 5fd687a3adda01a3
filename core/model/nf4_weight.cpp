#include "nf4_weight.h"

#include <ATen/core/grad_mode.h>
#include <torch/csrc/autograd/custom_function.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

#include "forja/error.h"
#include "weights.h"

// The CUDA half needs the kernels (FORJA_HAS_KERNELS_nf4, from linking forja_kernels_nf4) and a LibTorch with
// CUDA (FORJA_TORCH_CUDA, from cmake/ForjaTorch.cmake).
#if FORJA_TORCH_CUDA && defined(FORJA_HAS_KERNELS_nf4)
#define FORJA_NF4_OPS 1
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#else
#define FORJA_NF4_OPS 0
#endif

namespace forja {

namespace {

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

at::Tensor host_tensor_f32(const std::vector<float>& v) {
  at::Tensor t = at::empty({static_cast<int64_t>(v.size())}, at::kFloat);
  if (!v.empty()) std::memcpy(t.data_ptr(), v.data(), v.size() * sizeof(float));
  return t;
}

template <typename T>
std::vector<T> host_vector(const at::Tensor& t) {
  at::Tensor c = t.to(at::kCPU).contiguous();
  std::vector<T> out(static_cast<size_t>(c.numel()));
  if (!out.empty()) std::memcpy(out.data(), c.data_ptr(), out.size() * sizeof(T));
  return out;
}

// The 15 decision thresholds of quant::nf4_encode: fp32 midpoints of adjacent codes, computed in double and
// rounded once.
at::Tensor midpoints(at::Device device) {
  std::vector<float> m(15);
  for (size_t i = 0; i < m.size(); ++i)
    m[i] = static_cast<float>((static_cast<double>(quant::kNf4Codes[i]) + quant::kNf4Codes[i + 1]) / 2.0);
  return host_tensor_f32(m).to(device);
}

// Made once per CUDA device and kept: a decode step captured in a CUDA graph may not copy from the host.
// Never freed, so that no CUDA tensor outlives the driver at exit.
at::Tensor code_table(at::Device device) {
  auto make = [&] {
    return host_tensor_f32(std::vector<float>(quant::kNf4Codes.begin(), quant::kNf4Codes.end())).to(device);
  };
  if (!device.is_cuda()) return make();
  static std::mutex mutex;
  static auto* tables = new std::map<c10::DeviceIndex, at::Tensor>();
  const std::lock_guard<std::mutex> lock(mutex);
  at::Tensor& t = (*tables)[device.index()];
  if (!t.defined()) t = make();
  return t;
}

// A few values per layer (one per 64 weights): decoded on the host with core/quant's own fmaf, so that
// every path agrees bit for bit with the kernels and the CPU reference.
at::Tensor decode_absmax_on_host(const Nf4Weight& w) {
  std::vector<int8_t> q = host_vector<int8_t>(w.absmax_q);
  std::vector<float> scale = host_vector<float>(w.absmax_scale);
  std::vector<float> out(q.size());
  for (size_t b = 0; b < q.size(); ++b)
    out[b] = quant::double_dequantize_absmax(q[b], scale[b / static_cast<size_t>(w.dq_block_size)],
                                             w.absmax_offset);
  return host_tensor_f32(out).to(w.device());
}

}  // namespace

int64_t Nf4Weight::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

int64_t Nf4Weight::blocks() const {
  return ceil_div(numel(), block_size);
}

at::Tensor Nf4Weight::decoded_absmax() const {
  if (!double_quant) return absmax;
  // On a CUDA device the decoded values are kept (4 bytes per block): the host round trip below cannot run
  // inside a CUDA graph's capture, and the first (eager) step fills the cache before any capture.
  if (device().is_cuda()) {
    const std::lock_guard<std::mutex> lock(decoded_cache->mutex);
    DecodedCache& c = *decoded_cache;
    if (!c.absmax.defined() || c.made_from != absmax_q.data_ptr()) {
      c.absmax = decode_absmax_on_host(*this);
      c.made_from = absmax_q.data_ptr();
    }
    return c.absmax;
  }
  return decode_absmax_on_host(*this);
}

int64_t Nf4Weight::bytes() const {
  int64_t n = codes.numel();
  if (absmax.defined()) n += absmax.numel() * 4;
  if (absmax_q.defined()) n += absmax_q.numel() + absmax_scale.numel() * 4 + 4;
  return n;
}

Nf4Weight quantize_nf4_weight(const at::Tensor& weight, const quant::Nf4Options& options,
                              const std::string& what) {
  if (options.block_size < 2 || options.block_size % 2 != 0 || options.block_size > (int64_t(1) << 20))
    throw Error(what + ": NF4 block size " + std::to_string(options.block_size) +
                " is not an even number from 2 to " + std::to_string(int64_t(1) << 20));
  at::NoGradGuard no_grad;
  Nf4Weight out;
  out.shape = weight.sizes().vec();
  out.source_dtype = to_dtype(weight.scalar_type());
  out.block_size = options.block_size;
  out.double_quant = options.double_quant;
  out.dq_block_size = options.dq_block_size;
  const at::Device device = weight.device();
  const int64_t n = weight.numel(), bs = options.block_size, blocks = ceil_div(n, bs);

  at::Tensor w = weight.detach().to(at::kFloat).contiguous().view({-1});
  if (!at::isfinite(w).all().item<bool>())
    throw Error(what + ": the weight has a non-finite value, which NF4 cannot quantize",
                "The weights are damaged; check the checkpoint.");
  // Blocks as rows; a partial last block padded with zeros (which change neither its absmax nor its codes).
  at::Tensor padded = w;
  if (blocks * bs != n) padded = at::cat({w, at::zeros({blocks * bs - n}, w.options())});
  at::Tensor rows = padded.view({blocks, bs});
  at::Tensor absmax = rows.abs().amax(1);
  // w / absmax by division (as core/quant does, so that ±absmax lands exactly on ±1); an all-zero block
  // divides by 1 and gives zeros, which encode as code 7 (0.0) just as core/quant's special case does.
  at::Tensor safe = at::where(absmax > 0, absmax, at::ones_like(absmax));
  at::Tensor x = rows / safe.unsqueeze(1);
  // The code is the number of midpoints strictly below x (bucketize with right=false counts them).
  at::Tensor codes = at::bucketize(x.view({-1}).narrow(0, 0, n), midpoints(device), /*out_int32=*/true,
                                   /*right=*/false)
                         .to(at::kByte);
  if (n % 2 != 0) codes = at::cat({codes, at::zeros({1}, codes.options())});
  at::Tensor pairs = codes.view({-1, 2});
  out.codes = pairs.select(1, 0).bitwise_left_shift(4).bitwise_or(pairs.select(1, 1)).contiguous();

  if (options.double_quant) {
    // A few thousand values per layer: double-quantized on the host by core/quant itself.
    std::vector<float> host = host_vector<float>(absmax);
    quant::DoubleQuantized dq = quant::double_quantize_absmax(host, options.dq_block_size);
    at::Tensor q = at::empty({static_cast<int64_t>(dq.q.size())}, at::kChar);
    if (!dq.q.empty()) std::memcpy(q.data_ptr(), dq.q.data(), dq.q.size());
    out.absmax_q = q.to(device);
    out.absmax_scale = host_tensor_f32(dq.scale).to(device);
    out.absmax_offset = dq.offset;
  } else {
    out.absmax = absmax.contiguous();
  }
  return out;
}

Nf4Weight nf4_weight_from(const quant::Nf4Tensor& t, at::Device device) {
  if (std::string problem = quant::nf4_tensor_problem(t); !problem.empty())
    throw Error("NF4 tensor: " + problem);
  Nf4Weight w;
  w.shape = t.shape;
  w.source_dtype = t.dtype;
  w.block_size = t.block_size;
  w.double_quant = t.double_quant;
  w.dq_block_size = t.dq_block_size;
  at::Tensor codes = at::empty({static_cast<int64_t>(t.codes.size())}, at::kByte);
  if (!t.codes.empty()) std::memcpy(codes.data_ptr(), t.codes.data(), t.codes.size());
  w.codes = codes.to(device);
  if (t.double_quant) {
    at::Tensor q = at::empty({static_cast<int64_t>(t.absmax_q.size())}, at::kChar);
    if (!t.absmax_q.empty()) std::memcpy(q.data_ptr(), t.absmax_q.data(), t.absmax_q.size());
    w.absmax_q = q.to(device);
    w.absmax_scale = host_tensor_f32(t.absmax_scale).to(device);
    w.absmax_offset = t.absmax_offset;
  } else {
    w.absmax = host_tensor_f32(t.absmax).to(device);
  }
  return w;
}

quant::Nf4Tensor nf4_tensor_from(const Nf4Weight& w) {
  quant::Nf4Tensor t;
  t.shape = w.shape;
  t.dtype = w.source_dtype;
  t.block_size = w.block_size;
  t.double_quant = w.double_quant;
  t.dq_block_size = w.dq_block_size;
  t.codes = host_vector<uint8_t>(w.codes);
  if (w.double_quant) {
    t.absmax_q = host_vector<int8_t>(w.absmax_q);
    t.absmax_scale = host_vector<float>(w.absmax_scale);
    t.absmax_offset = w.absmax_offset;
  } else {
    t.absmax = host_vector<float>(w.absmax);
  }
  return t;
}

// ---- The kernels/nf4 switch
// ----------------------------------------------------------------------------------

bool nf4_kernels_compiled_in() {
  return FORJA_NF4_OPS;
}

bool nf4_kernels_active() {
  static const int mode = [] {
    const char* v = std::getenv("FORJA_KERNELS");
    const std::string s = v ? v : "";
    if (s == "off" || s == "0") return 0;
    if (s == "on" || s == "1") return 1;
    return -1;
  }();
  if (mode == 1 && !FORJA_NF4_OPS)
    throw Error(
        "FORJA_KERNELS=on: the NF4 CUDA kernels are not in this build (no nvcc, FORJA_CUDA_KERNELS=OFF, or a "
        "LibTorch without CUDA)",
        "Build with nvcc and a CUDA LibTorch (cmake --preset cuda), or unset FORJA_KERNELS.");
  return mode != 0 && FORJA_NF4_OPS;
}

namespace {

#if FORJA_NF4_OPS
ForjaNf4Weights kernel_weights(const Nf4Weight& w) {
  ForjaNf4Weights k{};
  k.codes = w.codes.data_ptr<uint8_t>();
  k.block_size = w.block_size;
  k.absmax = w.double_quant ? nullptr : w.absmax.data_ptr<float>();
  k.absmax_q = w.double_quant ? w.absmax_q.data_ptr<int8_t>() : nullptr;
  k.absmax_scale = w.double_quant ? w.absmax_scale.data_ptr<float>() : nullptr;
  k.absmax_offset = w.absmax_offset;
  k.dq_block_size = w.dq_block_size;
  return k;
}

void check_kernel(int rc, const char* err, const char* what) {
  TORCH_CHECK(rc == 0, "NF4 ", what, ": ", err ? err : "CUDA launch failed (error ", rc, ")");
}

bool kernel_applies(const Nf4Weight& w) {
  return w.device().is_cuda() && nf4_kernels_active() && w.codes.is_contiguous() &&
         (w.double_quant ? w.absmax_q.is_contiguous() && w.absmax_scale.is_contiguous()
                         : w.absmax.is_contiguous());
}
#endif

}  // namespace

at::Tensor dequantize_nf4_weight(const Nf4Weight& w, at::ScalarType dtype) {
  at::NoGradGuard no_grad;
  const int64_t n = w.numel();
#if FORJA_NF4_OPS
  if (dtype == at::kBFloat16 && kernel_applies(w)) {
    const c10::cuda::CUDAGuard guard(w.device());
    at::Tensor out = at::empty(w.shape, at::TensorOptions().dtype(at::kBFloat16).device(w.device()));
    ForjaNf4Dequantize p{};
    p.w = kernel_weights(w);
    p.n = n;
    p.out = out.data_ptr();
    check_kernel(forja_nf4_dequantize_bf16(&p, at::cuda::getCurrentCUDAStream().stream()),
                 forja_nf4_dequantize_check(&p), "dequantize");
    return out;
  }
#endif
  // Unpack the nibbles (high first), look the codes up, scale each block by its absmax: code * absmax in
  // fp32, then one rounding to `dtype`, which is what the reference and the kernel compute.
  at::Tensor pairs = at::stack({w.codes.bitwise_right_shift(4), w.codes.bitwise_and(15)}, 1).view({-1});
  at::Tensor values = code_table(w.device()).index_select(0, pairs.narrow(0, 0, n).to(at::kLong));
  const int64_t bs = w.block_size, blocks = w.blocks();
  if (blocks * bs != n) values = at::cat({values, at::zeros({blocks * bs - n}, values.options())});
  at::Tensor scaled =
      (values.view({blocks, bs}) * w.decoded_absmax().unsqueeze(1)).view({-1}).narrow(0, 0, n);
  return scaled.view(w.shape).to(dtype);
}

namespace {

struct Nf4Holder : torch::CustomClassHolder {
  Nf4Weight weight;
};

// y = x·W'ᵀ with only the 4-bit weight kept for backward: the dequantized W' is made again there (the point
// of QLoRA is that no bf16 copy of the base outlives one layer's matmul).
struct Nf4LinearFunction : torch::autograd::Function<Nf4LinearFunction> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& x,
                            c10::intrusive_ptr<Nf4Holder> holder) {
    ctx->saved_data["nf4"] = at::IValue::make_capsule(holder);
    return at::linear(x, dequantize_nf4_weight(holder->weight, x.scalar_type()));
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    auto holder = c10::static_intrusive_pointer_cast<Nf4Holder>(ctx->saved_data["nf4"].toCapsule());
    const at::Tensor& g = grads[0];
    at::Tensor w = dequantize_nf4_weight(holder->weight, g.scalar_type());
    return {at::matmul(g, w), at::Tensor()};
  }
};

}  // namespace

at::Tensor nf4_linear(const at::Tensor& x, const Nf4Weight& w, const at::Tensor& bias) {
  TORCH_CHECK(w.shape.size() == 2 && x.size(-1) == w.shape[1], "nf4_linear: x has ", x.size(-1),
              " features but the weight expects ", w.shape.size() == 2 ? w.shape[1] : -1);
  at::Tensor y;
  if (at::GradMode::is_enabled() && x.requires_grad()) {
    auto holder = c10::make_intrusive<Nf4Holder>();
    holder->weight = w;
    y = Nf4LinearFunction::apply(x, holder);
  } else {
    at::NoGradGuard no_grad;
    y = at::linear(x, dequantize_nf4_weight(w, x.scalar_type()));
  }
  return bias.defined() ? y + bias : y;
}

at::Tensor nf4_matmul(const at::Tensor& x, const Nf4Weight& w) {
  at::NoGradGuard no_grad;
#if FORJA_NF4_OPS
  if (x.dim() == 2 && x.size(0) == 1 && x.scalar_type() == at::kBFloat16 && x.is_cuda() &&
      kernel_applies(w)) {
    const c10::cuda::CUDAGuard guard(w.device());
    at::Tensor xc = x.contiguous();
    at::Tensor y = at::empty({1, w.shape[0]}, xc.options());
    ForjaNf4Gemv p{};
    p.w = kernel_weights(w);
    p.rows = w.shape[0];
    p.cols = w.shape[1];
    p.x = xc.data_ptr();
    p.y = y.data_ptr();
    check_kernel(forja_nf4_gemv_bf16(&p, at::cuda::getCurrentCUDAStream().stream()), forja_nf4_gemv_check(&p),
                 "GEMV");
    return y;
  }
#endif
  return at::mm(x, dequantize_nf4_weight(w, x.scalar_type()).t());
}

}  // namespace forja
