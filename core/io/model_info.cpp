#include "forja/model_info.h"

#include "forja/architecture.h"

#include <cstdio>
#include <map>

#include "forja/checkpoint.h"
#include "forja/error.h"
#include "forja/model_config.h"

namespace forja {
namespace fs = std::filesystem;

namespace {
std::string format_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}
}  // namespace

ModelInfo inspect_model(const fs::path& dir) {
  if (!fs::is_directory(dir)) throw_file_error(dir.string(), "is not a folder");
  const fs::path config_path = dir / "config.json";
  if (!fs::exists(config_path))
    throw_file_error(dir.string(), "has no config.json",
                     "Open the folder that holds config.json and the weights.");
  ModelConfig c = parse_model_config(config_path);
  io::Checkpoint ckpt = io::Checkpoint::open(dir);

  ModelInfo info;
  info.dir = dir;
  info.architecture = c.architecture;
  info.family = family_name(c.family);
  info.lora_targets = architecture(c.family).projections;
  info.model_type = c.model_type;
  info.layers = c.num_layers;
  info.hidden_size = c.hidden_size;
  info.intermediate_size = c.intermediate_size;
  info.heads = c.num_heads;
  info.kv_heads = c.num_kv_heads;
  info.head_dim = c.head_dim;
  info.context_length = c.max_position_embeddings;
  info.vocab_size = c.vocab_size;
  info.tied_embeddings = c.tie_word_embeddings;
  if (architecture(c.family).block == Block::Llama) {  // GPT-2's positions are learned
    info.rope =
        c.rope.type == "default" ? "theta " + format_number(c.rope.theta)
        : c.rope.type == "longrope"
            ? "longrope from " + std::to_string(c.rope.original_max_position_embeddings) + " tokens, theta " +
                  format_number(c.rope.theta)
            : c.rope.type + " ×" + format_number(c.rope.factor) + ", theta " + format_number(c.rope.theta);
    if (c.rope_local) info.rope += "; local layers theta " + format_number(c.rope_local->theta);
  }
  std::map<std::string, int64_t> bytes_by_dtype;
  for (const auto& f : ckpt.files()) {
    for (const auto& t : f->tensors()) {
      // Tied checkpoints may still carry lm_head.weight; count the tied matrix once.
      if (c.tie_word_embeddings && t.name == "lm_head.weight") continue;
      info.parameters += t.numel();
      info.checkpoint_bytes += static_cast<int64_t>(t.nbytes());
      bytes_by_dtype[std::string(io::dtype_name(t.dtype))] += static_cast<int64_t>(t.nbytes());
    }
  }
  int64_t most = -1;
  for (const auto& [d, n] : bytes_by_dtype)
    if (n > most) info.checkpoint_dtype = d, most = n;
  info.bf16_weight_bytes = info.parameters * 2;
  info.weight_files = ckpt.file_names();
  for (const char* name : {"tokenizer.json", "tokenizer.model", "tokenizer_config.json"})
    if (fs::exists(dir / name)) info.tokenizer_files.push_back(name);
  return info;
}

}  // namespace forja
