/* Forja's fused Llama/GPT-2 layer kernels: RMSNorm with the residual add, rotary embedding, SwiGLU
 * and GELU-tanh, forward and backward, and the softmax / cross-entropy half of the fused LM-head loss, in
 * fp32 and bf16 with fp32 arithmetic inside.
 *
 * A plain C API: one param struct per kernel, raw pointers to contiguous row-major buffers, and a CUDA
 * stream. Every CUDA launcher has a CPU reference with the same struct and host pointers
 * (kernels/fused/reference.cpp, always built) that computes in double and rounds once to the storage dtype;
 * the GPU tests compare the two.
 *
 * Launchers and references return NULL on success, or a static message naming what is wrong (a bad argument,
 * or the CUDA error of the launch). Launches are asynchronous on `stream`; nothing here synchronises.
 *
 * bf16 buffers hold the raw 16-bit pattern (__nv_bfloat16 on the device, uint16_t on the host). */
#ifndef FORJA_KERNELS_FUSED_H
#define FORJA_KERNELS_FUSED_H

#include <stddef.h>
#include <stdint.h>

#include "forja_kernels/bf16.h"

/* The same declaration as the CUDA runtime's, so this header needs no CUDA headers (the CPU reference and its
 * tests build where there is no toolkit). */
typedef struct CUstream_st* cudaStream_t;

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ForjaFusedDType { FORJA_FUSED_F32 = 0, FORJA_FUSED_BF16 = 1 } ForjaFusedDType;

/* ---- RMSNorm with the residual add fused in
 * -------------------------------------------------------------------- h = x + residual (or h = x without a
 * residual), y = h * rsqrt(mean(h^2) + eps) * weight, per row. In bf16, h is rounded to bf16 before the
 * statistics, so y and the backward see exactly the stored h. */
typedef struct ForjaRmsNormForward {
  ForjaFusedDType dtype; /* of x, residual, weight, h and y */
  int64_t rows, cols;    /* tokens, hidden size (any cols >= 1) */
  float eps;
  const void* x;        /* [rows, cols] */
  const void* residual; /* [rows, cols], or NULL */
  const void* weight;   /* [cols] */
  void* h;              /* [rows, cols] out: x + residual (the next residual); NULL when residual is NULL */
  void* y;              /* [rows, cols] out */
  float* rstd;          /* [rows] out: 1 / sqrt(mean(h^2) + eps), kept for backward; may be NULL */
} ForjaRmsNormForward;

/* dh = dh_in + rstd * (g - n * mean(g * n)) with g = dy * weight and n = h * rstd; dh is the gradient of both
 * x and the residual. dweight = sum over rows of dy * n, reduced in a fixed order (bitwise reproducible):
 * per-block partials in `workspace`, then a column-wise sum. */
typedef struct ForjaRmsNormBackward {
  ForjaFusedDType dtype; /* of dy, dh_in, h, weight and dh */
  int64_t rows, cols;
  const void* dy;     /* [rows, cols] gradient of y */
  const void* dh_in;  /* [rows, cols] gradient of h arriving from the residual stream, or NULL */
  const void* h;      /* [rows, cols] the h of the forward (x when there was no residual) */
  const void* weight; /* [cols] */
  const float* rstd;  /* [rows] from the forward */
  void* dh;           /* [rows, cols] out; may be the same buffer as dh_in */
  float* dweight;     /* [cols] out (fp32), or NULL to skip the weight gradient */
  void* workspace; /* forja_fused_rmsnorm_backward_workspace_bytes(rows, cols) bytes when dweight != NULL */
} ForjaRmsNormBackward;

/* Bytes of scratch the backward needs for the weight gradient's partial sums (0 for rows or cols <= 0). */
size_t forja_fused_rmsnorm_backward_workspace_bytes(int64_t rows, int64_t cols);

/* ---- Rotary position embedding, in place
 * ------------------------------------------------------------------------ Hugging Face's rotate_half layout:
 * within each head, element i pairs with i + head_dim/2 at angle theta_i, out[i] = x[i] cos - x[i + half]
 * sin,   out[i + half] = x[i + half] cos + x[i] sin. The angles come as tables (fp32, one row per position,
 * head_dim/2 columns: cos(pos * inv_freq[i]) with whatever scaling the model applied), so every rope_scaling
 * variant works unchanged. The backward rotates the gradients by -theta (the transpose of the rotation). */
typedef struct ForjaRope {
  ForjaFusedDType dtype;             /* of q and k */
  int64_t tokens, q_heads, kv_heads; /* kv_heads may differ from q_heads (GQA) */
  int64_t head_dim;                  /* even */
  void* q;                           /* [tokens, q_heads, head_dim], rotated in place (out) */
  void* k;                           /* [tokens, kv_heads, head_dim], rotated in place (out) */
  const void* q_src;                 /* NULL: rotate q in place; else read from here and write q */
  const void* k_src;                 /* likewise for k */
  const float* cos;                  /* [table rows, head_dim / 2] */
  const float* sin;                  /* [table rows, head_dim / 2] */
  const int64_t* positions;          /* [tokens] table row of each token, or NULL: row = token index */
} ForjaRope;

/* ---- SwiGLU (Llama's MLP) and GELU-tanh (GPT-2's)
 * --------------------------------------------------------------- Element-wise over n elements (any n >= 1).
 */
typedef struct ForjaSwigluForward {
  ForjaFusedDType dtype;
  int64_t n;
  const void* gate;
  const void* up;
  void* out; /* out = silu(gate) * up */
} ForjaSwigluForward;

typedef struct ForjaSwigluBackward {
  ForjaFusedDType dtype;
  int64_t n;
  const void* dout;
  const void* gate;
  const void* up;
  void* dgate; /* dout * up * sigmoid(gate) * (1 + gate * (1 - sigmoid(gate))); may be the same buffer as gate
                */
  void* dup;   /* dout * silu(gate); may be the same buffer as up */
} ForjaSwigluBackward;

typedef struct ForjaGeluForward {
  ForjaFusedDType dtype;
  int64_t n;
  const void* x;
  void* y; /* 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
} ForjaGeluForward;

typedef struct ForjaGeluBackward {
  ForjaFusedDType dtype;
  int64_t n;
  const void* dy;
  const void* x;
  void* dx; /* may be the same buffer as dy */
} ForjaGeluBackward;

/* ---- Cross-entropy over one chunk of logits, with its gradient written in place
 * ------------------------------------------------------------------------------------------------ The
 * softmax half of a fused linear + cross-entropy: the caller computes logits = hidden_chunk · Wᵀ (a GEMM),
 * this computes, per row, lse = logsumexp(logits), loss = lse - logits[label] (0 where label ==
 * ignore_index), and, when write_grad, overwrites the logits with d_logits = (softmax - onehot(label)) *
 * grad_scale (zeros on ignored rows), ready for grad_hidden_chunk = d_logits · W. So no [rows, vocab] fp32
 * tensor ever exists. A label outside [0, vocab) that is not ignore_index gives a NaN loss (and a NaN
 * gradient row). */
typedef struct ForjaCrossEntropy {
  ForjaFusedDType dtype; /* of logits */
  int64_t rows, vocab;   /* any rows >= 0, vocab >= 1 */
  int64_t ignore_index;  /* -100 in Hugging Face's convention */
  float grad_scale;      /* multiplies the gradient (e.g. 1 / non-ignored rows for a mean) */
  int write_grad;        /* nonzero: overwrite logits with d_logits; zero: logits are only read */
  void* logits;          /* [rows, vocab] contiguous, in (and out when write_grad) */
  const int64_t* labels; /* [rows] */
  float* loss;           /* [rows] out: per-row loss, 0 on ignored rows */
  float* lse;            /* [rows] out: the row's logsumexp, or NULL */
} ForjaCrossEntropy;

/* CUDA launchers (forja_kernels_fused, built with FORJA_CUDA_KERNELS): device pointers. */
const char* forja_fused_rmsnorm_forward(const ForjaRmsNormForward* p, cudaStream_t stream);
const char* forja_fused_rmsnorm_backward(const ForjaRmsNormBackward* p, cudaStream_t stream);
const char* forja_fused_rope_forward(const ForjaRope* p, cudaStream_t stream);
const char* forja_fused_rope_backward(const ForjaRope* p, cudaStream_t stream); /* q, k hold gradients */
const char* forja_fused_swiglu_forward(const ForjaSwigluForward* p, cudaStream_t stream);
const char* forja_fused_swiglu_backward(const ForjaSwigluBackward* p, cudaStream_t stream);
const char* forja_fused_gelu_tanh_forward(const ForjaGeluForward* p, cudaStream_t stream);
const char* forja_fused_gelu_tanh_backward(const ForjaGeluBackward* p, cudaStream_t stream);
const char* forja_fused_cross_entropy(const ForjaCrossEntropy* p, cudaStream_t stream);

/* CPU references (forja_kernels_fused_ref, always built): host pointers, the same structs. */
const char* forja_fused_rmsnorm_forward_ref(const ForjaRmsNormForward* p);
const char* forja_fused_rmsnorm_backward_ref(const ForjaRmsNormBackward* p); /* ignores workspace */
const char* forja_fused_rope_forward_ref(const ForjaRope* p);
const char* forja_fused_rope_backward_ref(const ForjaRope* p);
const char* forja_fused_swiglu_forward_ref(const ForjaSwigluForward* p);
const char* forja_fused_swiglu_backward_ref(const ForjaSwigluBackward* p);
const char* forja_fused_gelu_tanh_forward_ref(const ForjaGeluForward* p);
const char* forja_fused_gelu_tanh_backward_ref(const ForjaGeluBackward* p);
const char* forja_fused_cross_entropy_ref(const ForjaCrossEntropy* p);

/* Argument checks shared by the launchers and the references (NULL when the struct is usable). */
const char* forja_fused_rmsnorm_forward_check(const ForjaRmsNormForward* p);
const char* forja_fused_rmsnorm_backward_check(const ForjaRmsNormBackward* p);
const char* forja_fused_rope_check(const ForjaRope* p);
const char* forja_fused_swiglu_forward_check(const ForjaSwigluForward* p);
const char* forja_fused_swiglu_backward_check(const ForjaSwigluBackward* p);
const char* forja_fused_gelu_forward_check(const ForjaGeluForward* p);
const char* forja_fused_gelu_backward_check(const ForjaGeluBackward* p);
const char* forja_fused_cross_entropy_check(const ForjaCrossEntropy* p);

#ifdef __cplusplus
}
#endif

#endif /* FORJA_KERNELS_FUSED_H */
