// forja-cli info <model-dir> [--json]: what a model folder is, without loading its weights.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "command.h"
#include "forja/model_info.h"

namespace {

std::string human_count(double n) {
  char buf[32];
  if (n >= 1e9)
    std::snprintf(buf, sizeof buf, "%.2fB", n / 1e9);
  else if (n >= 1e6)
    std::snprintf(buf, sizeof buf, "%.2fM", n / 1e6);
  else if (n >= 1e3)
    std::snprintf(buf, sizeof buf, "%.1fK", n / 1e3);
  else
    std::snprintf(buf, sizeof buf, "%.0f", n);
  return buf;
}

int run_info(forja::cli::Args& args) {
  args.reject_unknown({});
  const forja::ModelInfo m = forja::inspect_model(forja::cli::model_dir_arg(args, 0));
  if (args.flag("json")) {
    nlohmann::ordered_json j = {{"dir", m.dir.string()},
                                {"architecture", m.architecture},
                                {"family", m.family},
                                {"model_type", m.model_type},
                                {"parameters", m.parameters},
                                {"checkpoint_dtype", m.checkpoint_dtype},
                                {"checkpoint_bytes", m.checkpoint_bytes},
                                {"layers", m.layers},
                                {"hidden_size", m.hidden_size},
                                {"intermediate_size", m.intermediate_size},
                                {"heads", m.heads},
                                {"kv_heads", m.kv_heads},
                                {"head_dim", m.head_dim},
                                {"context_length", m.context_length},
                                {"vocab_size", m.vocab_size},
                                {"tied_embeddings", m.tied_embeddings},
                                {"rope", m.rope},
                                {"bf16_weight_bytes", m.bf16_weight_bytes},
                                {"weight_files", m.weight_files},
                                {"tokenizer_files", m.tokenizer_files}};
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  std::printf("Model         %s\n", m.dir.string().c_str());
  std::printf("Architecture  %s (%s)\n", m.architecture.c_str(), m.family.c_str());
  std::printf("Parameters    %s (%lld)\n", human_count(static_cast<double>(m.parameters)).c_str(),
              static_cast<long long>(m.parameters));
  std::printf("Dtype         %s, %s on disk in %zu file(s)\n", m.checkpoint_dtype.c_str(),
              forja::cli::human_bytes(static_cast<double>(m.checkpoint_bytes)).c_str(),
              m.weight_files.size());
  std::printf("Layers        %lld, hidden %lld, MLP %lld\n", static_cast<long long>(m.layers),
              static_cast<long long>(m.hidden_size), static_cast<long long>(m.intermediate_size));
  std::printf("Heads         %lld query, %lld key/value, head size %lld\n", static_cast<long long>(m.heads),
              static_cast<long long>(m.kv_heads), static_cast<long long>(m.head_dim));
  std::printf("Context       %lld tokens%s%s\n", static_cast<long long>(m.context_length),
              m.rope.empty() ? ", learned positions" : ", RoPE ", m.rope.c_str());
  std::printf("Vocabulary    %lld%s\n", static_cast<long long>(m.vocab_size),
              m.tied_embeddings ? " (head tied to the embedding)" : "");
  std::printf("Weights bf16  %s (GPU memory for the weights alone)\n",
              forja::cli::human_bytes(static_cast<double>(m.bf16_weight_bytes)).c_str());
  std::string tok;
  for (const auto& t : m.tokenizer_files) tok += (tok.empty() ? "" : ", ") + t;
  std::printf("Tokenizer     %s\n", tok.empty() ? "none found" : tok.c_str());
  return 0;
}

}  // namespace

FORJA_CLI_COMMAND(info, "Show what a Hugging Face model folder holds",
                  "info <model-dir|org/name> [--json] [--pull]", run_info, {"json", "pull"});
