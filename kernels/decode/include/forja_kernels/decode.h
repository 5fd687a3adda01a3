/* Forja's batch-1 decode kernels: the single-token step of a Llama-family layer in few launches,
 * each reading its weights once at close to the memory bandwidth.
 *
 *  - forja_decode_gemv_bf16: y = act(x)·Wᵀ (+ bias) (+ residual) for one token, where act is nothing, the
 *    layer's RMSNorm, or SwiGLU of a fused [gate | up] vector, computed by every block into shared memory
 *    (the projection and the operation before it in one launch);
 *  - forja_decode_gemv_nf4: the same over a 4-bit NF4 weight (QLoRA's base, kernels/nf4's format), every
 *    4-bit code read once, the activation shared by two rows per warp;
 *  - forja_decode_rope_kv_bf16: rotary embedding of the token's q and k heads at the position read from
 *    device memory, q in place, k and v written into the KV cache slot;
 *  - forja_decode_rms_norm_bf16: the RMSNorm of each row of a small matrix (q/k heads, one hidden vector),
 *    with a residual add after it;
 *  - forja_decode_attention_bf16: attention of the token's query heads over the cache positions up to the
 *    token's own (read from device memory, so a captured CUDA graph replays it at every position), split
 *    over the keys (flash-decoding) and combined in a second launch; GQA without repeating the cache.
 *
 * A plain C API: one param struct per kernel, raw pointers, a CUDA stream. Each launcher has a CPU reference
 * on host pointers with the same struct (kernels/decode/reference.cpp, always built). Launchers and
 * references return 0 on success, FORJA_DECODE_INVALID_ARGUMENT when the struct is unusable
 * (forja_decode_*_check says why), or the cudaError_t of the launch. Launches are asynchronous on `stream`.
 *
 * bf16 buffers hold the raw 16-bit pattern (__nv_bfloat16 on the device, uint16_t on the host). Rounding
 * follows the stock LibTorch / transformers formulation the decoder runs otherwise, step by step:
 *  - RMSNorm:  r = rsqrt(mean(x²) + eps) in fp32; act = bf16(bf16(x·r) · weight)   (LlamaRMSNorm)
 *  - Gemma's:  act = bf16(x·r·(1 + weight)), all in fp32                          (GemmaRMSNorm)
 *  - SwiGLU:   act = bf16(bf16(silu(gate)) · up)                                  (silu, then mul)
 *  - GeGLU:    act = bf16(bf16(gelu_tanh(gate)) · up)                             (gelu, then mul)
 *  - GEMV:     y = bf16(Σ act·w + bias + residual), the sum in fp32, rounded once  (addmm's epilogue)
 *  - RoPE:     out = bf16(bf16(x·cos) + swap(x)·sin), swap(x) = [x₂, x₁], sin with rotate_half's sign folded
 *              in ([-sin₁, sin₂], the decoder's table)                             (mul, then addcmul)
 *  - attention: scores, softmax and the weighted sum in fp32, rounded once to bf16. */
#ifndef FORJA_KERNELS_DECODE_H
#define FORJA_KERNELS_DECODE_H

#include <stdint.h>

#include "forja_kernels/bf16.h"

typedef struct CUstream_st* cudaStream_t;

#ifdef __cplusplus
extern "C" {
#endif

enum { FORJA_DECODE_OK = 0, FORJA_DECODE_INVALID_ARGUMENT = 1 };

/* What happens to x before the product. */
typedef enum ForjaDecodePrologue {
  FORJA_DECODE_PLAIN = 0,               /* act = x, x [k] */
  FORJA_DECODE_RMSNORM = 1,             /* act = rmsnorm(x) · norm_weight, x [k] */
  FORJA_DECODE_SWIGLU = 2,              /* act = silu(x[0:k]) · x[k:2k], x [2k] (gate then up) */
  FORJA_DECODE_RMSNORM_UNIT_OFFSET = 3, /* act = rmsnorm(x) · (1 + norm_weight), x [k] (Gemma) */
  FORJA_DECODE_GEGLU = 4                /* act = gelu_tanh(x[0:k]) · x[k:2k], x [2k] (Gemma) */
} ForjaDecodePrologue;

/* y[r] = Σ_c act[c] · w[r, c] (+ bias[r]) (+ residual[r]) for r < n; w [n, k] row-major bf16. */
typedef struct ForjaDecodeGemv {
  int64_t n, k;  /* out and in features, >= 1; k <= 32768 (act lives in shared memory) */
  const void* w; /* [n, k] bf16 */
  const void* x; /* [k] bf16, or [2k] with SWIGLU / GEGLU */
  ForjaDecodePrologue prologue;
  const void* norm_weight; /* [k] bf16, the RMSNORMs only */
  float eps;               /* the RMSNORMs only */
  const void* bias;        /* [n] bf16 or NULL */
  const void* residual;    /* [n] bf16 or NULL (may equal y: read before written, element by element) */
  void* y;                 /* [n] bf16 out */
  void* act_out;           /* [k] bf16 or NULL: act written out too (the LoRA branch's input) */
} ForjaDecodeGemv;

/* The same product over an NF4 weight: w[r, c] = code[index(r·k + c)] · absmax[(r·k + c) / block_size] in
 * fp32 (forja_kernels/nf4.h: element 2i in the high nibble of byte i, the QLoRA paper's 16 code values), with
 * plain fp32 absmax (a double-quantized weight's absmax decoded first). y = bf16(Σ act·w + bias + residual),
 * the sum in fp32, rounded once. Shapes: k a multiple of 32 and of block_size, block_size a power of two
 * >= 32 (a 16-byte group of codes lies in one block and a row in whole blocks), codes 16-byte aligned: every
 * Llama-sized layer quantized with core/quant's block sizes. */
typedef struct ForjaDecodeGemvNf4 {
  int64_t n, k;         /* out and in features, >= 1; k <= 32768 */
  const uint8_t* codes; /* [n·k / 2] */
  const float* absmax;  /* [n·k / block_size] */
  int64_t block_size;   /* elements per absmax */
  const void* x;        /* [k] bf16, or [2k] with SWIGLU / GEGLU */
  ForjaDecodePrologue prologue;
  const void* norm_weight; /* [k] bf16, the RMSNORMs only */
  float eps;               /* the RMSNORMs only */
  const void* bias;        /* [n] bf16 or NULL */
  const void* residual;    /* [n] bf16 or NULL (may equal y) */
  void* y;                 /* [n] bf16 out */
  void* act_out;           /* [k] bf16 or NULL */
} ForjaDecodeGemvNf4;

/* The token's qkv row [(heads + 2·kv_heads) · head_dim] bf16 (q heads, then k, then v): q and k rotated,
 * q in place; rotated k and v written to cache[0][h][pos] and cache[1][h][pos]. */
typedef struct ForjaDecodeRopeKv {
  int64_t heads, kv_heads, head_dim; /* head_dim even */
  int64_t capacity;                  /* cache slots per head */
  void* qkv;                         /* bf16, modified: the q part is rotated in place (k too) */
  void* cache;                       /* [2, kv_heads, capacity, head_dim] bf16 */
  const void* cos;                   /* [capacity, head_dim] bf16 */
  const void* sin;                   /* [capacity, head_dim] bf16, rotate_half's sign folded in */
  const int64_t* position;           /* one value, in [0, capacity) */
} ForjaDecodeRopeKv;

/* out[h] = Σ_j softmax_j(scale · q_h·k_j) · v_j over the slots j in [lo, pos], lo = max(0, pos - window + 1)
 * with a window (0: none), pos read from `position`; query head h reads kv head h / (heads / kv_heads). The
 * keys are split in chunks of `chunk` slots over the first `max_keys` slots (pos < max_keys); each chunk's
 * partial result goes to `scratch`, which must hold forja_decode_attention_scratch_floats() floats. */
typedef struct ForjaDecodeAttention {
  int64_t heads, kv_heads, head_dim; /* head_dim in {64, 128, 256}; heads a multiple of kv_heads, heads/kv
                                        <= 16 (<= 8 at head_dim 256) */
  int64_t capacity;
  int64_t max_keys; /* 1 .. capacity */
  int64_t chunk;    /* keys per split, >= 1 (the launcher's choice: forja_decode_attention_chunk) */
  int64_t window;   /* 0: none */
  float scale;
  float softcap;     /* > 0: each score s (scaled) becomes softcap · tanh(s / softcap), Gemma 2's; 0: none */
  const void* q;     /* [heads, head_dim] bf16 (may be the qkv row) */
  const void* cache; /* [2, kv_heads, capacity, head_dim] bf16 */
  const int64_t* position;
  float* scratch;
  void* out; /* [heads, head_dim] bf16 */
} ForjaDecodeAttention;

/* out[r] = norm(x[r]) (+ residual[r]) for each of `rows` rows of d values: the RMSNorm of each row, Llama's
 * (bf16(bf16(x·r) · weight)) or Gemma's (bf16(x·r·(1 + weight)), unit_offset), rounded to bf16, then added
 * to the residual and rounded again: the per-head q/k norms, Gemma's norms after attention and the MLP with
 * the residual add that follows them, the final norm. One block per row. */
typedef struct ForjaDecodeRmsNorm {
  int64_t rows, d;      /* >= 1; d <= 32768 */
  const void* x;        /* [rows, d] bf16 */
  const void* weight;   /* [d] bf16 */
  float eps;            /* >= 0 */
  int unit_offset;      /* 0: Llama's RMSNorm; 1: Gemma's */
  const void* residual; /* [rows, d] bf16 or NULL */
  void* out;            /* [rows, d] bf16; may equal x or residual (each element read before written) */
} ForjaDecodeRmsNorm;

int forja_decode_gemv_bf16(const ForjaDecodeGemv* p, cudaStream_t stream);
int forja_decode_rms_norm_bf16(const ForjaDecodeRmsNorm* p, cudaStream_t stream);
int forja_decode_gemv_nf4(const ForjaDecodeGemvNf4* p, cudaStream_t stream);
int forja_decode_rope_kv_bf16(const ForjaDecodeRopeKv* p, cudaStream_t stream);
int forja_decode_attention_bf16(const ForjaDecodeAttention* p, cudaStream_t stream);

/* The split the launcher uses for `max_keys` (a multiple of 32), and the scratch it needs. */
int64_t forja_decode_attention_chunk(int64_t max_keys);
int64_t forja_decode_attention_scratch_floats(int64_t heads, int64_t head_dim, int64_t max_keys,
                                              int64_t chunk);

/* CPU references: host pointers (position too), the same structs; sums in double, intermediate roundings as
 * above. The attention reference ignores `chunk` and `scratch`. */
int forja_decode_gemv_bf16_ref(const ForjaDecodeGemv* p);
int forja_decode_gemv_nf4_ref(const ForjaDecodeGemvNf4* p);
int forja_decode_rope_kv_bf16_ref(const ForjaDecodeRopeKv* p);
int forja_decode_attention_bf16_ref(const ForjaDecodeAttention* p);
int forja_decode_rms_norm_bf16_ref(const ForjaDecodeRmsNorm* p);

/* NULL when the struct is usable, else a static message naming the problem (the device pointers are only
 * checked for NULL; the position is not read). */
const char* forja_decode_gemv_check(const ForjaDecodeGemv* p);
const char* forja_decode_gemv_nf4_check(const ForjaDecodeGemvNf4* p);
const char* forja_decode_rope_kv_check(const ForjaDecodeRopeKv* p);
const char* forja_decode_attention_check(const ForjaDecodeAttention* p);
const char* forja_decode_rms_norm_check(const ForjaDecodeRmsNorm* p);

#ifdef __cplusplus
}
#endif

#endif /* FORJA_KERNELS_DECODE_H */
