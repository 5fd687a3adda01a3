// The language-model loss without the [tokens, vocab] logits: the head matmul, log-sum-exp and the gradient
// with respect to the hidden states are computed chunk by chunk in forward, so peak memory holds one chunk of
// logits (in fp32) instead of all of them plus their softmax for backward. On CUDA with the fused kernels
// (core/model/fused_ops.h) the chunk's logits stay in the head's dtype and one kernel turns them into their
// gradient in place. The head is frozen in LoRA, so normally only the hidden states' gradient is computed; a
// head that requires grad gets its gradient too (summed over chunks in fp32).
#pragma once

#include <ATen/ATen.h>

#include <cstdint>

namespace forja::train {

// Sum over rows with label != -100 of cross_entropy(hidden[i] · headᵀ, label[i]), computed in fp32 whatever
// the dtype of hidden and head. hidden [N, H], head [V, H], labels [N] int64. Differentiable with respect to
// hidden (and head, when it requires grad). `chunk_rows` bounds the logits alive at once (chunk_rows × V).
// `softcap` > 0 caps the logits first, cap·tanh(logits / cap) (Gemma 2's final soft-capping).
at::Tensor linear_cross_entropy_sum(const at::Tensor& hidden, const at::Tensor& head,
                                    const at::Tensor& labels, int64_t chunk_rows, double softcap = 0);

// A chunk size that keeps one chunk of fp32 logits near `budget_bytes`.
// 256 MiB: at 32k vocab, 2048 rows, still large enough matmuls to run at full speed, and the transient logits
// at the end of forward (when every activation is alive) stay small.
int64_t loss_chunk_rows(int64_t vocab, int64_t budget_bytes = int64_t{256} << 20);

}  // namespace forja::train
