// SwiGLU (Llama's MLP) and GELU-tanh (GPT-2's), forward and backward (forja_kernels/fused.h).
//
// All four are one element-wise kernel over a small functor: a grid-stride loop of 16-byte accesses (4 fp32 /
// 8 bf16) when every buffer is 16-byte aligned, then the last n % VEC elements one per thread; element-wise
// accesses otherwise. Each thread reads all inputs of its elements before writing, so an output may share its
// buffer with an input of the same element (as the header allows).
#include "common.cuh"

namespace forja_fused {
namespace {

template <int IN, int OUT>
struct Buffers {
  const void* in[IN];
  void* out[OUT];
  int64_t n;
};

__device__ __forceinline__ float sigmoid(float g) {
  return 1.0f / (1.0f + expf(-g));
}

// GELU-tanh's constants: sqrt(2 / pi) and the cubic coefficient of Hendrycks & Gimpel's approximation.
constexpr float kGeluScale = 0.7978845608028654f;
constexpr float kGeluCubic = 0.044715f;

struct SwigluForward {  // in: gate, up   out: silu(gate) * up
  static constexpr int kIn = 2, kOut = 1;
  __device__ static void apply(const float (&in)[2], float (&out)[1]) {
    out[0] = in[0] * sigmoid(in[0]) * in[1];
  }
};

struct SwigluBackward {  // in: dout, gate, up   out: dgate, dup
  static constexpr int kIn = 3, kOut = 2;
  __device__ static void apply(const float (&in)[3], float (&out)[2]) {
    const float dout = in[0], g = in[1], u = in[2], s = sigmoid(g);
    out[0] = dout * u * s * (1.0f + g * (1.0f - s));
    out[1] = dout * g * s;
  }
};

struct GeluForward {  // in: x   out: y
  static constexpr int kIn = 1, kOut = 1;
  __device__ static void apply(const float (&in)[1], float (&out)[1]) {
    const float x = in[0];
    out[0] = 0.5f * x * (1.0f + tanhf(kGeluScale * (x + kGeluCubic * x * x * x)));
  }
};

struct GeluBackward {  // in: dy, x   out: dx
  static constexpr int kIn = 2, kOut = 1;
  __device__ static void apply(const float (&in)[2], float (&out)[1]) {
    const float dy = in[0], x = in[1];
    const float t = tanhf(kGeluScale * (x + kGeluCubic * x * x * x));
    out[0] = dy * (0.5f * (1.0f + t) +
                   0.5f * x * (1.0f - t * t) * kGeluScale * (1.0f + 3.0f * kGeluCubic * x * x));
  }
};

template <typename T, int VEC, typename Op>
__device__ __forceinline__ void apply_vector(const Buffers<Op::kIn, Op::kOut>& b, int64_t v) {
  float in[Op::kIn][VEC], out[Op::kOut][VEC];
#pragma unroll
  for (int k = 0; k < Op::kIn; ++k) load<T, VEC>(static_cast<const T*>(b.in[k]), v, in[k]);
#pragma unroll
  for (int j = 0; j < VEC; ++j) {
    float ein[Op::kIn], eout[Op::kOut];
#pragma unroll
    for (int k = 0; k < Op::kIn; ++k) ein[k] = in[k][j];
    Op::apply(ein, eout);
#pragma unroll
    for (int k = 0; k < Op::kOut; ++k) out[k][j] = eout[k];
  }
#pragma unroll
  for (int k = 0; k < Op::kOut; ++k) store<T, VEC>(static_cast<T*>(b.out[k]), v, out[k]);
}

template <typename T, int VEC, typename Op>
__global__ void elementwise_kernel(Buffers<Op::kIn, Op::kOut> b) {
  const int64_t nvec = b.n / VEC;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t v = first; v < nvec; v += stride) apply_vector<T, VEC, Op>(b, v);
  if constexpr (VEC > 1) {
    const int64_t tail = nvec * VEC + first;  // fewer than VEC elements, one per thread
    if (tail < b.n) apply_vector<T, 1, Op>(b, tail);
  }
}

template <typename T, int VEC, typename Op>
const char* launch(const Buffers<Op::kIn, Op::kOut>& b, cudaStream_t stream) {
  constexpr int kThreads = 256;
  // Enough blocks to fill any supported GPU several times over; the grid-stride loop covers the rest.
  constexpr int64_t kMaxBlocks = 8192;
  const int64_t work = b.n / VEC > 0 ? b.n / VEC : 1;
  const int64_t blocks =
      (work + kThreads - 1) / kThreads < kMaxBlocks ? (work + kThreads - 1) / kThreads : kMaxBlocks;
  elementwise_kernel<T, VEC, Op><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(b);
  return launch_error();
}

template <typename Op>
const char* run(ForjaFusedDType dtype, const Buffers<Op::kIn, Op::kOut>& b, cudaStream_t stream) {
  if (b.n == 0) return nullptr;
  bool vector = true;
  for (int k = 0; k < Op::kIn; ++k) vector = vector && aligned16(b.in[k]);
  for (int k = 0; k < Op::kOut; ++k) vector = vector && aligned16(b.out[k]);
  if (dtype == FORJA_FUSED_F32)
    return vector ? launch<float, kVec<float>, Op>(b, stream) : launch<float, 1, Op>(b, stream);
  return vector ? launch<__nv_bfloat16, kVec<__nv_bfloat16>, Op>(b, stream)
                : launch<__nv_bfloat16, 1, Op>(b, stream);
}

}  // namespace
}  // namespace forja_fused

using forja_fused::Buffers;

extern "C" const char* forja_fused_swiglu_forward(const ForjaSwigluForward* p, cudaStream_t stream) {
  if (const char* err = forja_fused_swiglu_forward_check(p)) return err;
  return forja_fused::run<forja_fused::SwigluForward>(
      p->dtype, Buffers<2, 1>{{p->gate, p->up}, {p->out}, p->n}, stream);
}

extern "C" const char* forja_fused_swiglu_backward(const ForjaSwigluBackward* p, cudaStream_t stream) {
  if (const char* err = forja_fused_swiglu_backward_check(p)) return err;
  return forja_fused::run<forja_fused::SwigluBackward>(
      p->dtype, Buffers<3, 2>{{p->dout, p->gate, p->up}, {p->dgate, p->dup}, p->n}, stream);
}

extern "C" const char* forja_fused_gelu_tanh_forward(const ForjaGeluForward* p, cudaStream_t stream) {
  if (const char* err = forja_fused_gelu_forward_check(p)) return err;
  return forja_fused::run<forja_fused::GeluForward>(p->dtype, Buffers<1, 1>{{p->x}, {p->y}, p->n}, stream);
}

extern "C" const char* forja_fused_gelu_tanh_backward(const ForjaGeluBackward* p, cudaStream_t stream) {
  if (const char* err = forja_fused_gelu_backward_check(p)) return err;
  return forja_fused::run<forja_fused::GeluBackward>(p->dtype, Buffers<2, 1>{{p->dy, p->x}, {p->dx}, p->n},
                                                     stream);
}
