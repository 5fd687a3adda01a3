#include "forja/memory_estimate.h"

#include <algorithm>

#include "forja/architecture.h"

namespace forja {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

// Parameters of one decoder layer's projections: (in, out) per target name.
std::vector<std::pair<std::string, std::pair<int64_t, int64_t>>> projections(const ModelShape& s) {
  const int64_t q = s.heads * s.head_dim, kv = s.kv_heads * s.head_dim;
  if (s.block == Block::Gpt2)
    return {{"c_attn", {s.hidden, 3 * s.hidden}},
            {"c_proj", {s.hidden, s.hidden}},  // attention's output projection
            {"c_fc", {s.hidden, s.intermediate}},
            {"c_proj", {s.intermediate, s.hidden}}};  // the MLP's, also named c_proj
  if (s.fused)
    return {{"qkv_proj", {s.hidden, q + 2 * kv}},
            {"o_proj", {q, s.hidden}},
            {"gate_up_proj", {s.hidden, 2 * s.intermediate}},
            {"down_proj", {s.intermediate, s.hidden}}};
  return {{"q_proj", {s.hidden, q}},
          {"k_proj", {s.hidden, kv}},
          {"v_proj", {s.hidden, kv}},
          {"o_proj", {q, s.hidden}},
          {"gate_proj", {s.hidden, s.intermediate}},
          {"up_proj", {s.hidden, s.intermediate}},
          {"down_proj", {s.intermediate, s.hidden}}};
}

int64_t count_parameters(const ModelShape& s) {
  int64_t per_layer = 0;
  for (const auto& [name, io] : projections(s)) per_layer += io.first * io.second;
  per_layer += 2 * s.hidden;  // the two norms
  // + the final norm, the embedding and the head (untied; GPT-2's biases and positions are left out: the
  // panes count a real checkpoint's tensors instead).
  return s.layers * per_layer + s.hidden + 2 * s.vocab * s.hidden;
}

}  // namespace

ModelShape model_shape(const ModelInfo& info) {
  ModelShape s;
  for (const auto& a : architectures())
    if (a.name == info.family) s.block = a.block, s.fused = a.fused_projections, s.nf4_base = a.nf4_base;
  s.layers = info.layers;
  s.hidden = info.hidden_size;
  s.intermediate = info.intermediate_size;
  s.heads = info.heads;
  s.kv_heads = info.kv_heads;
  s.head_dim = info.head_dim;
  s.vocab = info.vocab_size;
  s.parameters = info.parameters;
  return s;
}

ModelShape model_shape(const ModelConfig& c) {
  ModelShape s;
  const Architecture& a = architecture(c.family);
  s.block = a.block;
  s.nf4_base = a.nf4_base;
  s.fused = c.fused_projections;
  s.layers = c.num_layers;
  s.hidden = c.hidden_size;
  s.intermediate = c.intermediate_size;
  s.heads = c.num_heads;
  s.kv_heads = c.num_kv_heads;
  s.head_dim = c.head_dim;
  s.vocab = c.vocab_size;
  s.parameters = count_parameters(s) - (c.tie_word_embeddings ? s.vocab * s.hidden : 0);
  return s;
}

int64_t lora_parameter_count(const ModelShape& shape, int64_t rank, const std::vector<std::string>& targets) {
  int64_t n = 0;
  for (const auto& [name, io] : projections(shape))
    if (std::find(targets.begin(), targets.end(), name) != targets.end()) n += rank * (io.first + io.second);
  return n * shape.layers;
}

static int64_t projection_parameters(const ModelShape& s) {
  int64_t n = 0;
  for (const auto& [name, io] : projections(s)) n += io.first * io.second;
  return n * s.layers;
}

int64_t base_weight_bytes(const ModelShape& s, bool nf4, bool double_quant) {
  const int64_t params = s.parameters > 0 ? s.parameters : count_parameters(s);
  if (!nf4) return 2 * params;
  const int64_t projection = projection_parameters(s), blocks = (projection + 63) / 64;
  const int64_t absmax = double_quant ? blocks + 4 * ((blocks + 255) / 256) : 4 * blocks;
  return 2 * (params - projection) + (projection + 1) / 2 + absmax;
}

MemoryEstimate estimate_train_memory(const ModelShape& s, const TrainShape& t) {
  MemoryEstimate m;
  m.weights = base_weight_bytes(s, t.nf4_base, t.nf4_double_quant);
  m.adapters = 16 * lora_parameter_count(s, t.lora_rank, t.target_modules);  // fp32 weight, grad, 2 moments
  const int64_t tokens = t.batch_size * t.seq_len;
  // bf16 values kept for backward, per token and layer: 6 hidden-wide (norm outputs, q/k/v/o, residuals,
  // attention output) and 10/3 intermediate-wide (gate, up, their product, minus what the fused kernels
  // drop): the two coefficients solved from the two measured peaks named in the header.
  int64_t per_token_layer = 2 * (6 * s.hidden + 10 * s.intermediate / 3);
  // Selective checkpointing no longer keeps the adapters' inputs: the two norm outputs, the attention
  // output's copy and the SwiGLU output (both H200 peaks, 9.5 GiB and 26.2 GiB at the same shapes, within
  // 3%).
  if (t.selective_checkpointing && !t.activation_checkpointing)
    per_token_layer -= 2 * (3 * s.hidden + s.intermediate);
  if (t.activation_checkpointing)
    // Each block's input kept, one block's activations live while it is recomputed.
    m.activations = tokens * (s.layers * 2 * s.hidden + per_token_layer);
  else
    m.activations = tokens * s.layers * per_token_layer;
  // The loss works through the logits 256 MiB of fp32 at a time (and their gradient).
  m.workspace = 2 * std::min<int64_t>(tokens * s.vocab * 4, 256 * kMiB);
  m.cuda_context = 600 * kMiB;
  return m;
}

MemoryEstimate estimate_chat_memory(const ModelShape& s, int64_t context, bool nf4_base) {
  MemoryEstimate m;
  m.weights = base_weight_bytes(s, nf4_base, true);
  if (nf4_base)  // the decoder's fp32 copy of every block's absmax
    m.weights += 4 * ((projection_parameters(s) + 63) / 64);
  const int64_t kv_width = s.block == Block::Gpt2 ? s.hidden : s.kv_heads * s.head_dim;
  m.activations = 2 * s.layers * kv_width * context * 2;  // K and V, bf16
  m.workspace = 4 * s.vocab;                              // fp32 logits of one token
  m.cuda_context = 600 * kMiB;
  return m;
}

}  // namespace forja
