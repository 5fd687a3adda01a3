// RMSNorm with the residual add fused in, forward and backward (forja_kernels/fused.h).
//
// One block per row. The forward reads x (and the residual) once, writes h and accumulates sum(h^2), then
// reads the row again (h, just written by the same thread, or x; both are cache hits) to write y. The
// backward makes two passes over dy and h the same way: the first for the row's dot product sum(g * n), the
// second for dh. The weight gradient is summed per block into a partial row (in shared memory, or in the
// workspace for very wide rows), and the partial rows are added column-wise in block order by a second
// kernel, so it is reproducible bit for bit. Rows whose width is a multiple of the vector (4 fp32 / 8 bf16)
// with 16-byte aligned buffers take 16-byte accesses; anything else takes the element-wise path.
#include "common.cuh"
#include "fused_internal.h"

namespace forja_fused {
namespace {

template <typename T, int VEC>
__global__ void rmsnorm_forward_kernel(ForjaRmsNormForward p) {
  __shared__ float scratch[32];
  const int64_t row = blockIdx.x;
  const int64_t nvec = p.cols / VEC;
  const T* x = static_cast<const T*>(p.x) + row * p.cols;
  const T* residual = p.residual ? static_cast<const T*>(p.residual) + row * p.cols : nullptr;
  T* h = p.h ? static_cast<T*>(p.h) + row * p.cols : nullptr;
  const T* w = static_cast<const T*>(p.weight);
  T* y = static_cast<T*>(p.y) + row * p.cols;

  float sum_sq = 0.0f;
  for (int64_t v = threadIdx.x; v < nvec; v += blockDim.x) {
    float hv[VEC];
    load<T, VEC>(x, v, hv);
    if (residual) {
      float rv[VEC];
      load<T, VEC>(residual, v, rv);
#pragma unroll
      for (int j = 0; j < VEC; ++j) hv[j] = to_float(from_float<T>(hv[j] + rv[j]));  // the stored value
      store<T, VEC>(h, v, hv);
    }
#pragma unroll
    for (int j = 0; j < VEC; ++j) sum_sq += hv[j] * hv[j];
  }
  sum_sq = block_sum(sum_sq, scratch);
  const float rstd = 1.0f / sqrtf(sum_sq / static_cast<float>(p.cols) + p.eps);
  if (p.rstd && threadIdx.x == 0) p.rstd[row] = rstd;

  const T* normed_input = residual ? h : x;
  for (int64_t v = threadIdx.x; v < nvec; v += blockDim.x) {
    float hv[VEC], wv[VEC], yv[VEC];
    load<T, VEC>(normed_input, v, hv);
    load<T, VEC>(w, v, wv);
#pragma unroll
    for (int j = 0; j < VEC; ++j) yv[j] = hv[j] * rstd * wv[j];
    store<T, VEC>(y, v, yv);
  }
}

// `acc` (DWEIGHT only): this block's partial weight-gradient row, in dynamic shared memory or, for rows too
// wide for it, the block's row of the workspace. Each thread only ever touches its own columns of it.
template <typename T, int VEC, bool DWEIGHT>
__global__ void rmsnorm_backward_kernel(ForjaRmsNormBackward p, bool acc_in_shared) {
  __shared__ float scratch[32];
  extern __shared__ float shared_acc[];
  const int64_t nvec = p.cols / VEC;
  const T* w = static_cast<const T*>(p.weight);
  float* partial = DWEIGHT ? static_cast<float*>(p.workspace) + blockIdx.x * p.cols : nullptr;
  float* acc = acc_in_shared ? shared_acc : partial;
  // Where column v * VEC + j of the partial row lives in `acc`. In shared memory the j-th elements of all
  // vectors are contiguous, so a warp's 32 threads (consecutive v, same j) hit 32 different banks; the plain
  // layout (v * VEC + j) would put them VEC-way on the same banks. The workspace keeps the plain layout.
  auto slot = [acc_in_shared, nvec](int64_t v, int j) { return acc_in_shared ? j * nvec + v : v * VEC + j; };
  if constexpr (DWEIGHT) {
    for (int64_t v = threadIdx.x; v < nvec; v += blockDim.x) {
#pragma unroll
      for (int j = 0; j < VEC; ++j) acc[slot(v, j)] = 0.0f;
    }
  }

  for (int64_t row = blockIdx.x; row < p.rows; row += gridDim.x) {
    const T* dy = static_cast<const T*>(p.dy) + row * p.cols;
    const T* h = static_cast<const T*>(p.h) + row * p.cols;
    const T* dh_in = p.dh_in ? static_cast<const T*>(p.dh_in) + row * p.cols : nullptr;
    T* dh = static_cast<T*>(p.dh) + row * p.cols;
    const float rstd = p.rstd[row];

    float dot = 0.0f;  // sum of g * n over the row
    for (int64_t v = threadIdx.x; v < nvec; v += blockDim.x) {
      float dyv[VEC], hv[VEC], wv[VEC];
      load<T, VEC>(dy, v, dyv);
      load<T, VEC>(h, v, hv);
      load<T, VEC>(w, v, wv);
#pragma unroll
      for (int j = 0; j < VEC; ++j) dot += dyv[j] * wv[j] * (hv[j] * rstd);
    }
    const float mean = block_sum(dot, scratch) / static_cast<float>(p.cols);

    for (int64_t v = threadIdx.x; v < nvec; v += blockDim.x) {
      float dyv[VEC], hv[VEC], wv[VEC], out[VEC];
      load<T, VEC>(dy, v, dyv);
      load<T, VEC>(h, v, hv);
      load<T, VEC>(w, v, wv);
      if (dh_in) load<T, VEC>(dh_in, v, out);
#pragma unroll
      for (int j = 0; j < VEC; ++j) {
        const float n = hv[j] * rstd;
        const float grad = rstd * (dyv[j] * wv[j] - n * mean);
        out[j] = dh_in ? out[j] + grad : grad;
        if constexpr (DWEIGHT) acc[slot(v, j)] += dyv[j] * n;
      }
      store<T, VEC>(dh, v, out);
    }
  }

  if constexpr (DWEIGHT) {
    if (acc_in_shared) {
      for (int64_t v = threadIdx.x; v < nvec; v += blockDim.x) {
#pragma unroll
        for (int j = 0; j < VEC; ++j) partial[v * VEC + j] = acc[slot(v, j)];
      }
    }
  }
}

// dweight[c] = sum over blocks b (in order) of partials[b][c]. A 32 x 8 block: 32 columns, 8 lanes that each
// sum every 8th partial row in order, then lane 0 adds the 8 lane sums in order.
__global__ void dweight_reduce_kernel(const float* partials, int64_t blocks, int64_t cols, float* dweight) {
  __shared__ float lane_sums[8][33];
  const int64_t c = static_cast<int64_t>(blockIdx.x) * 32 + threadIdx.x;
  float s = 0.0f;
  if (c < cols)
    for (int64_t b = threadIdx.y; b < blocks; b += 8) s += partials[b * cols + c];
  lane_sums[threadIdx.y][threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.y == 0 && c < cols) {
    float total = 0.0f;
    for (int l = 0; l < 8; ++l) total += lane_sums[l][threadIdx.x];
    dweight[c] = total;
  }
}

// Threads per row: one per vector up to 512 (in whole warps), so narrow rows do not leave most of a block
// idle.
int threads_for(int64_t nvec) {
  const int t = round_up_32(nvec);
  return t < 32 ? 32 : (t > 512 ? 512 : t);
}

template <typename T, int VEC>
const char* forward_launch(const ForjaRmsNormForward& p, cudaStream_t stream) {
  rmsnorm_forward_kernel<T, VEC><<<static_cast<unsigned>(p.rows), threads_for(p.cols / VEC), 0, stream>>>(p);
  return launch_error();
}

template <typename T>
const char* forward_dispatch(const ForjaRmsNormForward& p, cudaStream_t stream) {
  constexpr int V = kVec<T>;
  const bool vector = p.cols % V == 0 && aligned16(p.x) && aligned16(p.residual) && aligned16(p.weight) &&
                      aligned16(p.h) && aligned16(p.y);
  return vector ? forward_launch<T, V>(p, stream) : forward_launch<T, 1>(p, stream);
}

template <typename T, int VEC>
const char* backward_launch(const ForjaRmsNormBackward& p, cudaStream_t stream) {
  const int threads = threads_for(p.cols / VEC);
  if (!p.dweight) {
    const int64_t grid = p.rows < (int64_t{1} << 30) ? p.rows : (int64_t{1} << 30);
    rmsnorm_backward_kernel<T, VEC, false><<<static_cast<unsigned>(grid), threads, 0, stream>>>(p, false);
    return launch_error();
  }
  const int64_t blocks = rmsnorm_backward_blocks(p.rows);
  // The partial row lives in shared memory when it fits what every supported architecture (sm_80..90) can
  // give a block: 96 KiB, above the default 48 KiB only after opting in.
  const size_t shared = static_cast<size_t>(p.cols) * sizeof(float);
  const bool in_shared = shared <= 96 * 1024;
  if (in_shared && shared > 48 * 1024) {
    const cudaError_t e =
        cudaFuncSetAttribute(rmsnorm_backward_kernel<T, VEC, true>,
                             cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shared));
    if (e != cudaSuccess) return cudaGetErrorString(e);
  }
  rmsnorm_backward_kernel<T, VEC, true>
      <<<static_cast<unsigned>(blocks), threads, in_shared ? shared : 0, stream>>>(p, in_shared);
  if (const char* err = launch_error()) return err;
  const dim3 reduce_block(32, 8);
  dweight_reduce_kernel<<<static_cast<unsigned>((p.cols + 31) / 32), reduce_block, 0, stream>>>(
      static_cast<const float*>(p.workspace), blocks, p.cols, p.dweight);
  return launch_error();
}

template <typename T>
const char* backward_dispatch(const ForjaRmsNormBackward& p, cudaStream_t stream) {
  constexpr int V = kVec<T>;
  const bool vector = p.cols % V == 0 && aligned16(p.dy) && aligned16(p.dh_in) && aligned16(p.h) &&
                      aligned16(p.weight) && aligned16(p.dh) && aligned16(p.workspace);
  return vector ? backward_launch<T, V>(p, stream) : backward_launch<T, 1>(p, stream);
}

}  // namespace
}  // namespace forja_fused

extern "C" const char* forja_fused_rmsnorm_forward(const ForjaRmsNormForward* p, cudaStream_t stream) {
  using namespace forja_fused;
  if (const char* err = forja_fused_rmsnorm_forward_check(p)) return err;
  if (p->rows == 0) return nullptr;
  if (p->rows > 0x7fffffff) return "rmsnorm forward: more than 2^31 - 1 rows";
  return p->dtype == FORJA_FUSED_F32 ? forward_dispatch<float>(*p, stream)
                                     : forward_dispatch<__nv_bfloat16>(*p, stream);
}

extern "C" const char* forja_fused_rmsnorm_backward(const ForjaRmsNormBackward* p, cudaStream_t stream) {
  using namespace forja_fused;
  if (const char* err = forja_fused_rmsnorm_backward_check(p)) return err;
  if (p->dweight && !p->workspace) return "rmsnorm backward: dweight needs the workspace";
  if (p->rows == 0) {
    if (!p->dweight) return nullptr;
    const cudaError_t e =
        cudaMemsetAsync(p->dweight, 0, static_cast<size_t>(p->cols) * sizeof(float), stream);
    return e == cudaSuccess ? nullptr : cudaGetErrorString(e);
  }
  return p->dtype == FORJA_FUSED_F32 ? backward_dispatch<float>(*p, stream)
                                     : backward_dispatch<__nv_bfloat16>(*p, stream);
}
