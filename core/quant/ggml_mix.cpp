// llama-quantize's choice of type per tensor (llama.cpp's src/llama-quant.cpp, llama_tensor_get_type), for
// the file types Forja writes and the dense architectures it exports: no experts, no importance matrix, no
// per-tensor overrides.
#include <algorithm>
#include <cctype>
#include <cstdio>

#include "forja/error.h"
#include "forja/ggml_quant.h"

namespace forja::quant {
namespace {

using io::GgufType;

bool contains(const std::string& s, const char* part) {
  return s.find(part) != std::string::npos;
}
bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// Norms, 1-D tensors, the position embeddings and the like keep their type.
bool quantizable(const MixTensor& t) {
  if (t.shape.size() < 2) return false;
  const std::string& n = t.name;
  return ends_with(n, "weight") && !contains(n, "_norm.weight") && !contains(n, "ffn_gate_inp.weight") &&
         n != "position_embd.weight" && n != "token_types.weight";
}

GgufType default_type(GgufFileType ft) {
  switch (ft) {
    case GgufFileType::Q4_0:
      return GgufType::Q4_0;
    case GgufFileType::Q8_0:
      return GgufType::Q8_0;
    case GgufFileType::Q4_K_M:
      return GgufType::Q4_K;
    case GgufFileType::Q5_K_M:
      return GgufType::Q5_K;
    case GgufFileType::Q6_K:
      return GgufType::Q6_K;
    case GgufFileType::F32:
      return GgufType::F32;
    case GgufFileType::F16:
      return GgufType::F16;
    case GgufFileType::BF16:
      return GgufType::BF16;
  }
  throw Error("unknown GGUF file type " + std::to_string(static_cast<uint32_t>(ft)));
}

// Layers at the ends and every third one between get more bits in the _M mixes.
bool use_more_bits(int64_t i, int64_t n) {
  return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

int64_t layer_of(const std::string& name) {
  int layer = -1;
  if (std::sscanf(name.c_str(), "blk.%d.", &layer) != 1) return -1;
  return layer;
}

// A row length the chosen type's blocks do not divide: the nearest 32-value type, or F16.
GgufType fallback(GgufType t, int64_t cols) {
  if (cols % io::gguf_block_values(t) == 0) return t;
  GgufType r = t;
  if (t == GgufType::Q4_K) r = GgufType::Q5_0;
  if (t == GgufType::Q5_K) r = GgufType::Q5_1;
  if (t == GgufType::Q6_K) r = GgufType::Q8_0;
  return cols % io::gguf_block_values(r) == 0 ? r : GgufType::F16;
}

}  // namespace

std::optional<GgufFileType> gguf_file_type_from_name(const std::string& name) {
  std::string n = name;
  std::transform(n.begin(), n.end(), n.begin(), [](unsigned char c) { return std::tolower(c); });
  if (n == "fp32" || n == "f32") return GgufFileType::F32;
  if (n == "fp16" || n == "f16") return GgufFileType::F16;
  if (n == "bf16") return GgufFileType::BF16;
  if (n == "q8_0") return GgufFileType::Q8_0;
  if (n == "q6_k") return GgufFileType::Q6_K;
  if (n == "q5_k_m") return GgufFileType::Q5_K_M;
  if (n == "q4_k_m") return GgufFileType::Q4_K_M;
  if (n == "q4_0") return GgufFileType::Q4_0;
  return std::nullopt;
}

std::string gguf_file_type_name(GgufFileType t) {
  switch (t) {
    case GgufFileType::F32:
      return "fp32";
    case GgufFileType::F16:
      return "fp16";
    case GgufFileType::BF16:
      return "bf16";
    case GgufFileType::Q4_0:
      return "q4_0";
    case GgufFileType::Q8_0:
      return "q8_0";
    case GgufFileType::Q4_K_M:
      return "q4_k_m";
    case GgufFileType::Q5_K_M:
      return "q5_k_m";
    case GgufFileType::Q6_K:
      return "q6_k";
  }
  return "?";
}

bool is_quantized_file_type(GgufFileType t) {
  return t != GgufFileType::F32 && t != GgufFileType::F16 && t != GgufFileType::BF16;
}

std::vector<GgufType> assign_quant_types(GgufFileType ft, const std::vector<MixTensor>& tensors,
                                         int64_t layers) {
  const GgufType def = default_type(ft);
  const bool tied = std::none_of(tensors.begin(), tensors.end(),
                                 [](const MixTensor& t) { return t.name == "output.weight"; });
  // attn_v-like tensors are counted in llama.cpp's order (by layer), which is their layer index here.
  int64_t n_attn_v = 0;
  for (const auto& t : tensors)
    if (contains(t.name, "attn_v.weight") || contains(t.name, "attn_qkv.weight")) ++n_attn_v;
  const bool m_mix = ft == GgufFileType::Q4_K_M || ft == GgufFileType::Q5_K_M;

  std::vector<GgufType> out;
  out.reserve(tensors.size());
  for (const auto& t : tensors) {
    if (!is_quantized_file_type(ft)) {
      out.push_back(t.shape.size() < 2 ? GgufType::F32 : def);
      continue;
    }
    if (!quantizable(t)) {  // as it comes: F32 (Forja quantizes from F32 values)
      out.push_back(GgufType::F32);
      continue;
    }
    const int64_t cols = t.shape.back();
    GgufType type = def;
    const bool output = t.name == "output.weight" || (tied && t.name == "token_embd.weight");
    if (output) {
      if (cols % io::gguf_block_values(type) != 0)
        type = GgufType::Q8_0;
      else if (type != GgufType::Q8_0)
        type = GgufType::Q6_K;
    } else if (t.name == "token_embd.weight") {
      // the default type
    } else if (contains(t.name, "attn_qkv.weight") || contains(t.name, "attn_v.weight")) {
      const int64_t layer = layer_of(t.name);
      if (m_mix && use_more_bits(layer, n_attn_v)) type = GgufType::Q6_K;
    } else if (contains(t.name, "ffn_down")) {
      const int64_t layer = layer_of(t.name);
      if (layer < 0 || layer >= layers)
        throw Error("GGUF quantization: tensor " + t.name + " is not in a layer 0.." +
                    std::to_string(layers - 1));
      if (m_mix && use_more_bits(layer, layers)) type = GgufType::Q6_K;
    }
    out.push_back(fallback(type, cols));
  }
  return out;
}

}  // namespace forja::quant
