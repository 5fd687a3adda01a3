// kernels/decode (batch-1 decode: GEMV with the RMSNorm / SwiGLU / GeGLU before it, RoPE + KV-cache write,
// split-K attention) on at::Tensors, for the Llama decoder's single-token step on CUDA in bf16. The decoder
// asks applies() and otherwise runs its stock LibTorch step, which stays the fallback and the reference.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>

#include "nf4_weight.h"

namespace forja::infer::decode_kernels {

// Whether this build has the kernels (nvcc and a CUDA LibTorch).
bool compiled_in();
// compiled_in() and our kernels not switched off (FORJA_KERNELS=off, or fused::set_enabled(false)).
bool active();

// What act() is: x itself, the Llama RMSNorm, SwiGLU of [gate | up], Gemma's RMSNorm (scaling by 1 + w in
// fp32), GeGLU (tanh GELU) of [gate | up].
enum class Prologue { Plain, RmsNorm, SwiGlu, RmsNormUnitOffset, GeGlu };

// y = act(x)·Wᵀ (+ bias) (+ residual) for one token; x [1, k] ([1, 2k] gated), w [n, k], all bf16 on
// one CUDA device, contiguous. `act_out` ([1, k], or undefined) receives act(x) (the LoRA branch's input).
at::Tensor gemv(const at::Tensor& w, const at::Tensor& x, Prologue prologue, const at::Tensor& norm_weight,
                double eps, const at::Tensor& bias, const at::Tensor& residual,
                const at::Tensor& act_out = {});

// The same result through LibTorch's stock operators: the RMSNorm or SwiGLU as its own launch, then cuBLAS
// (with the residual in its epilogue). cuBLAS reads the large matrices faster than gemv() does; gemv() wins
// on the small ones, where its fused prologue saves a launch.
at::Tensor gemv_stock(const at::Tensor& w, const at::Tensor& x, Prologue prologue,
                      const at::Tensor& norm_weight, double eps, const at::Tensor& bias,
                      const at::Tensor& residual, const at::Tensor& act_out = {});

// gemv() or gemv_stock(), whichever ran faster for this weight's shape, prologue and residual on this device
// (measured once per shape and process, on the weight itself, at the first call outside a graph capture),
// provided gemv()'s result agrees with gemv_stock()'s there; a kernel that disagrees is not used (and a line
// on stderr says so).
at::Tensor gemv_fastest(const at::Tensor& w, const at::Tensor& x, Prologue prologue,
                        const at::Tensor& norm_weight, double eps, const at::Tensor& bias,
                        const at::Tensor& residual, const at::Tensor& act_out = {});

// The same three over a 4-bit weight (QLoRA's base, [n, k]): gemv_nf4() reads the 4-bit codes in one launch
// with the prologue fused; gemv_nf4_stock() runs the prologue as its own launch and then kernels/nf4's
// dequantize-GEMV; gemv_nf4_fastest() chooses between them as gemv_fastest() does. gemv_nf4_fits() says
// whether the fused kernel takes the weight (plain fp32 absmax, k and the block size multiples of 32, whole
// blocks per row, on CUDA).
bool gemv_nf4_fits(const Nf4Weight& w);
at::Tensor gemv_nf4(const Nf4Weight& w, const at::Tensor& x, Prologue prologue, const at::Tensor& norm_weight,
                    double eps, const at::Tensor& bias, const at::Tensor& residual,
                    const at::Tensor& act_out = {});
at::Tensor gemv_nf4_stock(const Nf4Weight& w, const at::Tensor& x, Prologue prologue,
                          const at::Tensor& norm_weight, double eps, const at::Tensor& bias,
                          const at::Tensor& residual, const at::Tensor& act_out = {});
at::Tensor gemv_nf4_fastest(const Nf4Weight& w, const at::Tensor& x, Prologue prologue,
                            const at::Tensor& norm_weight, double eps, const at::Tensor& bias,
                            const at::Tensor& residual, const at::Tensor& act_out = {});

// Rotates q and k of the token's qkv row [1, (heads + 2·kv)·d] in place at the position held by `position`
// ([1] int64 on the device) and writes k and v to the layer's cache [2, kv, capacity, d].
void rope_kv(at::Tensor& qkv, at::Tensor& layer_cache, const at::Tensor& cos, const at::Tensor& sin,
             const at::Tensor& position, int64_t heads);

// out = RMSNorm of each row of x (rows of weight.numel() values; Gemma's (1 + w) form with unit_offset),
// plus `residual` when defined. x, residual and out contiguous bf16 of one shape; out may be x or residual.
void rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps, bool unit_offset,
              const at::Tensor& residual, const at::Tensor& out);

// Attention of the token's query heads (the first heads·d values of qkv) over the cache slots up to the
// position (within `window` of it when > 0), the scores scaled by `scale` (then soft-capped when softcap >
// 0), split over the first `max_keys` slots. Returns [1, heads·d]. `scratch` is reused between calls
// (allocated on first use when undefined; a graph capture sizes it first with attention_scratch_floats).
at::Tensor attention(const at::Tensor& qkv, const at::Tensor& layer_cache, const at::Tensor& position,
                     int64_t heads, int64_t max_keys, int64_t window, double scale, double softcap,
                     at::Tensor& scratch);

// The scratch attention() needs for any number of keys (the split never makes more than 64 chunks), so a
// caller can allocate it once before capturing graphs.
int64_t attention_scratch_floats(int64_t heads, int64_t head_dim);

}  // namespace forja::infer::decode_kernels
