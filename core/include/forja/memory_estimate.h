// How much GPU memory chatting with or LoRA-training a model takes, before anything is loaded: plain C++ for
// the Model and Train panes. Training activations follow a per-token, per-layer formula calibrated on Forja's
// own peak-memory measurements on the H200 (bench/RESULTS.md, LibTorch's allocator peak): TinyLlama-1.1B at 8
// × 1024 (12.9 GiB) and Mistral-7B at 4 × 1024 (31.8 GiB) are both reproduced within 5%.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "forja/architecture.h"
#include "forja/model_config.h"
#include "forja/model_info.h"

namespace forja {

struct ModelShape {
  Block block = Block::Llama;
  bool fused = false;    // one qkv_proj and one gate_up_proj per layer (Phi-3): LoRA adapts them whole
  bool nf4_base = true;  // a 4-bit base (QLoRA) is possible
  int64_t layers = 0, hidden = 0, intermediate = 0, heads = 0, kv_heads = 0, head_dim = 0, vocab = 0;
  int64_t parameters = 0;  // 0: counted from the shape
};
ModelShape model_shape(const ModelInfo& info);
ModelShape model_shape(const ModelConfig& config);  // parameters counted from the shape

struct MemoryEstimate {
  int64_t weights = 0;       // the frozen base in bf16
  int64_t adapters = 0;      // LoRA weights in fp32 + their gradients + AdamW's two moments
  int64_t activations = 0;   // what backward keeps (training) or the KV cache (chat)
  int64_t workspace = 0;     // the loss's logits chunks (training) or one token's logits (chat)
  int64_t cuda_context = 0;  // the CUDA context and libraries: in nvidia-smi, not in LibTorch's allocator
  int64_t total() const { return weights + adapters + activations + workspace + cuda_context; }
};

struct TrainShape {
  int64_t batch_size = 4;
  int64_t seq_len = 1024;
  int64_t lora_rank = 16;
  std::vector<std::string> target_modules = {"q_proj",    "k_proj",  "v_proj",   "o_proj",
                                             "gate_proj", "up_proj", "down_proj"};
  bool activation_checkpointing = false;
  // The adapters' inputs remade in backward (TrainConfig's selective_checkpointing); ignored with
  // activation_checkpointing, which recomputes whole blocks.
  bool selective_checkpointing = false;
  // QLoRA: the decoder layers' projections held in 4 bits (TrainConfig's base_quant = nf4): half a byte per
  // weight plus the absmax of every 64 (fp32, or 8 bits with double quantization).
  bool nf4_base = false;
  bool nf4_double_quant = true;
};

// LoRA parameters for `targets` (Llama names, or GPT-2's c_attn / c_proj / c_fc) at rank `rank`.
int64_t lora_parameter_count(const ModelShape& shape, int64_t rank, const std::vector<std::string>& targets);

// Bytes of the frozen base: bf16 throughout, or with its projections in NF4 (block 64; absmax fp32, or int8
// plus one fp32 scale per 256 blocks with double quantization).
int64_t base_weight_bytes(const ModelShape& shape, bool nf4, bool double_quant = true);

MemoryEstimate estimate_train_memory(const ModelShape& shape, const TrainShape& train);
// Batch-1 chat with a KV cache of `context` tokens, bf16; `nf4_base`: the projections in 4 bits (the decoder
// also keeps every block's absmax in fp32 for its GEMV).
MemoryEstimate estimate_chat_memory(const ModelShape& shape, int64_t context, bool nf4_base = false);

}  // namespace forja
