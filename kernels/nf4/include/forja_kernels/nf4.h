/* Forja's NF4 kernels (QLoRA): dequantize an NF4 weight to bf16, and the fused dequantize-GEMV of
 * batch-1 decode. The format is core/quant's (forja/nf4.h), restated here so that this folder stands alone:
 *
 *  - n elements, flat row-major, in blocks of `block_size` consecutive elements, each with an fp32 absmax;
 *  - element i is a 4-bit index into the 16 NF4 code values (forja_nf4_codes()); element 2k is the HIGH
 * nibble of byte k and element 2k+1 the low nibble (bitsandbytes' order);
 *  - w_i = code[index_i] * absmax[i / block_size], one fp32 multiply; in bf16, that fp32 rounded to nearest
 * even;
 *  - with double quantization the absmax of block b is fmaf((float)absmax_q[b], absmax_scale[b /
 * dq_block_size], absmax_offset): one fused multiply-add, so that the GPU and the CPU agree bit for bit.
 *
 * A plain C API: one param struct per kernel, raw pointers, a CUDA stream. Every launcher has a CPU reference
 * with the same struct on host pointers (kernels/nf4/reference.cpp, always built); the GPU tests compare
 * them. Launchers and references return 0 on success, FORJA_NF4_INVALID_ARGUMENT (the value of
 * cudaErrorInvalidValue) when the struct is unusable (forja_nf4_*_check says why), or the cudaError_t of the
 * launch. Launches are asynchronous on `stream`; nothing here synchronises.
 *
 * bf16 buffers hold the raw 16-bit pattern (__nv_bfloat16 on the device, uint16_t on the host). */
#ifndef FORJA_KERNELS_NF4_H
#define FORJA_KERNELS_NF4_H

/* The 16 NF4 code values, ascending: the QLoRA paper's NormalFloat4 (quantiles of N(0, 1) normalised to [-1,
 * 1], with an exact 0), as bitsandbytes ships them (csrc/kernels.cu, its NF4 lookup table). The one
 * definition that the CPU reference, the CUDA kernels and core/quant (forja/nf4.h) all initialise their
 * tables from. */
#define FORJA_NF4_CODE_VALUES                                                                         \
  -1.0f, -0.6961928009986877f, -0.5250730514526367f, -0.39491748809814453f, -0.28444138169288635f,    \
      -0.18477343022823334f, -0.09105003625154495f, 0.0f, 0.07958029955625534f, 0.16093020141124725f, \
      0.24611230194568634f, 0.33791524171829224f, 0.44070982933044434f, 0.5626170039176941f,          \
      0.7229568362236023f, 1.0f

#include <stdint.h>

#include "forja_kernels/bf16.h"

/* The same declaration as the CUDA runtime's, so this header needs no CUDA headers. */
typedef struct CUstream_st* cudaStream_t;

#ifdef __cplusplus
extern "C" {
#endif

enum { FORJA_NF4_OK = 0, FORJA_NF4_INVALID_ARGUMENT = 1 };

/* An NF4-quantized weight: the codes and the per-block absmax, plain or double-quantized. */
typedef struct ForjaNf4Weights {
  const uint8_t* codes;      /* ceil(n / 2) bytes */
  int64_t block_size;        /* elements per absmax, >= 1 (core/quant writes even sizes; 64 by default) */
  const float* absmax;       /* [ceil(n / block_size)], or NULL when double-quantized */
  const int8_t* absmax_q;    /* [ceil(n / block_size)] when absmax is NULL */
  const float* absmax_scale; /* [ceil(blocks / dq_block_size)] when absmax is NULL */
  float absmax_offset;       /* added to every decoded absmax */
  int64_t dq_block_size;     /* absmax values per scale, >= 1 (256) */
} ForjaNf4Weights;

/* ---- Dequantize to bf16 (before the training GEMMs) ----------------------------------------------------
 * out[i] = bf16(code[index_i] * absmax(i / block_size)) for i < n. */
typedef struct ForjaNf4Dequantize {
  ForjaNf4Weights w;
  int64_t n; /* elements, >= 0 */
  void* out; /* [n] bf16 out */
} ForjaNf4Dequantize;

/* ---- Fused dequantize-GEMV (batch-1 decode) ------------------------------------------------------------
 * y[r] = bf16( sum_c W[r, c] * x[c] ), W the [rows, cols] row-major NF4 weight (n = rows * cols), accumulated
 * in fp32. The GPU reads every 4-bit code once, 16 bytes at a time, when cols and block_size are multiples of
 * 32 and codes and x are 16-byte aligned (every Llama-sized layer); other shapes take a slower scalar path.
 */
typedef struct ForjaNf4Gemv {
  ForjaNf4Weights w;
  int64_t rows, cols; /* out and in features, >= 0 */
  const void* x;      /* [cols] bf16 */
  void* y;            /* [rows] bf16 out */
} ForjaNf4Gemv;

/* CUDA launchers (forja_kernels_nf4, built with FORJA_CUDA_KERNELS): device pointers. */
int forja_nf4_dequantize_bf16(const ForjaNf4Dequantize* p, cudaStream_t stream);
int forja_nf4_gemv_bf16(const ForjaNf4Gemv* p, cudaStream_t stream);

/* CPU references (forja_kernels_nf4_ref, always built): host pointers, the same structs. The GEMV reference
 * accumulates the fp32 products W[r, c] * x[c] in double and rounds once to bf16. */
int forja_nf4_dequantize_bf16_ref(const ForjaNf4Dequantize* p);
int forja_nf4_gemv_bf16_ref(const ForjaNf4Gemv* p);

/* Argument checks shared by the launchers and the references: NULL when the struct is usable, else a static
 * message naming the problem. */
const char* forja_nf4_dequantize_check(const ForjaNf4Dequantize* p);
const char* forja_nf4_gemv_check(const ForjaNf4Gemv* p);

/* The 16 NF4 code values, ascending (the QLoRA paper's table, as bitsandbytes ships it). */
const float* forja_nf4_codes(void);

#ifdef __cplusplus
}
#endif

#endif /* FORJA_KERNELS_NF4_H */
