// Rotary position embedding on q and k in one launch, in place or from a source buffer
// (forja_kernels/fused.h).
//
// One block per token: its threads walk the (head, pair-vector) items of all q heads then all k heads, so the
// token's cos/sin row is read from memory once and served from cache to every head. With head_dim / 2 a
// multiple of the vector (4 fp32 / 8 bf16) and 16-byte aligned buffers, each item is a 16-byte access to each
// half of the head; otherwise one element per item.
#include "common.cuh"

namespace forja_fused {
namespace {

template <typename T, int VEC>
__global__ void rope_kernel(ForjaRope p, float sign) {
  const int64_t t = blockIdx.x;
  const int half = static_cast<int>(p.head_dim / 2);
  const int pair_vecs = half / VEC;
  const int q_heads = static_cast<int>(p.q_heads), heads = static_cast<int>(p.q_heads + p.kv_heads);
  const int64_t row = p.positions ? p.positions[t] : t;
  const float* cos_row = p.cos + row * half;
  const float* sin_row = p.sin + row * half;
  for (int item = threadIdx.x; item < heads * pair_vecs; item += blockDim.x) {
    const int head = item / pair_vecs, i = item % pair_vecs;
    T* dst;
    const T* src;
    if (head < q_heads) {
      dst = static_cast<T*>(p.q) + (t * p.q_heads + head) * p.head_dim;
      src = p.q_src ? static_cast<const T*>(p.q_src) + (t * p.q_heads + head) * p.head_dim : dst;
    } else {
      const int64_t kh = head - q_heads;
      dst = static_cast<T*>(p.k) + (t * p.kv_heads + kh) * p.head_dim;
      src = p.k_src ? static_cast<const T*>(p.k_src) + (t * p.kv_heads + kh) * p.head_dim : dst;
    }
    float x1[VEC], x2[VEC], c[VEC], s[VEC], o1[VEC], o2[VEC];
    load<T, VEC>(src, i, x1);
    load<T, VEC>(src + half, i, x2);
    load_f32<VEC>(cos_row, i, c);
    load_f32<VEC>(sin_row, i, s);
#pragma unroll
    for (int j = 0; j < VEC; ++j) {
      const float sn = sign * s[j];
      o1[j] = x1[j] * c[j] - x2[j] * sn;
      o2[j] = x2[j] * c[j] + x1[j] * sn;
    }
    store<T, VEC>(dst, i, o1);
    store<T, VEC>(dst + half, i, o2);
  }
}

template <typename T, int VEC>
const char* launch(const ForjaRope& p, float sign, cudaStream_t stream) {
  const int64_t items = (p.q_heads + p.kv_heads) * (p.head_dim / 2 / VEC);
  const int threads = items >= 256 ? 256 : (items <= 32 ? 32 : round_up_32(items));
  rope_kernel<T, VEC><<<static_cast<unsigned>(p.tokens), threads, 0, stream>>>(p, sign);
  return launch_error();
}

template <typename T>
const char* dispatch(const ForjaRope& p, float sign, cudaStream_t stream) {
  constexpr int V = kVec<T>;
  const bool vector = (p.head_dim / 2) % V == 0 && aligned16(p.q) && aligned16(p.k) && aligned16(p.q_src) &&
                      aligned16(p.k_src) && aligned16(p.cos) && aligned16(p.sin);
  return vector ? launch<T, V>(p, sign, stream) : launch<T, 1>(p, sign, stream);
}

const char* rope(const ForjaRope* p, float sign, cudaStream_t stream) {
  if (const char* err = forja_fused_rope_check(p)) return err;
  if (p->tokens == 0 || p->q_heads + p->kv_heads == 0) return nullptr;
  if (p->tokens > 0x7fffffff) return "rope: more than 2^31 - 1 tokens";
  if ((p->q_heads + p->kv_heads) * (p->head_dim / 2) > 0x7fffffff) return "rope: too many heads";
  return p->dtype == FORJA_FUSED_F32 ? dispatch<float>(*p, sign, stream)
                                     : dispatch<__nv_bfloat16>(*p, sign, stream);
}

}  // namespace
}  // namespace forja_fused

extern "C" const char* forja_fused_rope_forward(const ForjaRope* p, cudaStream_t stream) {
  return forja_fused::rope(p, 1.0f, stream);
}

extern "C" const char* forja_fused_rope_backward(const ForjaRope* p, cudaStream_t stream) {
  return forja_fused::rope(p, -1.0f, stream);
}
