// Which tensors of a Hugging Face checkpoint QLoRA stores in NF4: the linear projections of the decoder
// layers, which hold nearly all the parameters. Embeddings, norms, biases and lm_head stay in their dtype
// (the paper keeps them in 16 bits; they are small, and lm_head and the embeddings are sensitive).
#include <algorithm>
#include <string_view>
#include <vector>

#include "forja/architecture.h"
#include "forja/nf4.h"

namespace forja::quant {

namespace {

// Any supported architecture's projection name, from the architecture table.
bool is_projection(std::string_view module) {
  for (const auto& a : architectures())
    if (std::find(a.projections.begin(), a.projections.end(), module) != a.projections.end()) return true;
  return false;
}

std::vector<std::string_view> split(std::string_view s) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    const size_t dot = s.find('.', start);
    parts.push_back(s.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start));
    if (dot == std::string_view::npos) return parts;
    start = dot + 1;
  }
}

bool is_index(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

bool should_quantize_nf4(std::string_view hf_name) {
  // "<prefix>.layers.<i>.<block>.<module>.weight" (Llama, Mistral, Qwen2) or "<prefix>.h.<i>.<block>.<module>
  // .weight" (GPT-2; "transformer." may be absent). Any projection name is accepted under either container,
  // since a few families mix them (StarCoder2 has mlp.c_fc under model.layers).
  const std::vector<std::string_view> p = split(hf_name);
  if (p.size() < 5 || p.back() != "weight") return false;
  const std::string_view module = p[p.size() - 2];
  const std::string_view index = p[p.size() - 4];
  const std::string_view container = p[p.size() - 5];
  if (!is_index(index) || (container != "layers" && container != "h")) return false;
  return is_projection(module);
}

}  // namespace forja::quant
