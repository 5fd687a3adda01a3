#include "gguf_lora.h"

#include <cmath>
#include <cstring>
#include <map>
#include <regex>
#include <vector>

#include "forja/architecture.h"
#include "forja/error.h"
#include "forja/gguf.h"
#include "forja/model_config.h"
#include "forja/nf4.h"
#include "forja/peft_config.h"
#include "forja/safetensors.h"

namespace forja::exporter {
namespace {
namespace fs = std::filesystem;

// The fp32 values of a safetensors tensor (F32, F16 or BF16).
std::vector<float> floats(const io::SafetensorsFile& f, const io::TensorInfo& t) {
  const auto bytes = f.bytes(t);
  std::vector<float> v(static_cast<size_t>(t.numel()));
  if (t.dtype == io::DType::F32) {
    std::memcpy(v.data(), bytes.data(), v.size() * 4);
    return v;
  }
  if (t.dtype != io::DType::F16 && t.dtype != io::DType::BF16)
    throw Error(f.path().string() + ": " + t.name + " is " + std::string(io::dtype_name(t.dtype)) +
                "; an adapter's weights are F32, F16 or BF16");
  for (size_t i = 0; i < v.size(); ++i) {
    uint16_t h;
    std::memcpy(&h, bytes.data() + 2 * i, 2);
    v[i] = t.dtype == io::DType::F16 ? quant::f16_to_float(h) : quant::bf16_to_float(h);
  }
  return v;
}

// llama.cpp's name of a decoder projection ("self_attn.q_proj" -> "attn_q").
const std::map<std::string, std::string>& projection_names() {
  static const std::map<std::string, std::string> m = {
      {"self_attn.q_proj", "attn_q"},      {"self_attn.k_proj", "attn_k"}, {"self_attn.v_proj", "attn_v"},
      {"self_attn.o_proj", "attn_output"}, {"mlp.gate_proj", "ffn_gate"},  {"mlp.up_proj", "ffn_up"},
      {"mlp.down_proj", "ffn_down"}};
  return m;
}

// HF's q/k rows are [heads, 2, d/2] halves; llama.cpp's "llama" RoPE wants [heads, d/2, 2] (as the base
// file).
std::vector<float> interleave_rope_rows(const std::vector<float>& w, int64_t rows, int64_t cols,
                                        int64_t heads) {
  const int64_t d = rows / heads;
  std::vector<float> out(w.size());
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t j = 0; j < d / 2; ++j)
      for (int64_t t = 0; t < 2; ++t)
        std::memcpy(&out[static_cast<size_t>((h * d + 2 * j + t) * cols)],
                    &w[static_cast<size_t>((h * d + t * d / 2 + j) * cols)], static_cast<size_t>(cols) * 4);
  return out;
}

}  // namespace

uint64_t write_gguf_lora(const fs::path& model_dir, const fs::path& adapter_dir, const fs::path& out_file,
                         const std::string& name) {
  const ModelConfig c = parse_model_config(model_dir / "config.json");
  const Architecture& spec = architecture(c.family);
  if (!spec.gguf_lora) {
    std::string families;
    for (const auto& each : architectures())
      if (each.gguf_lora) families += std::string(families.empty() ? "" : ", ") + std::string(each.name);
    throw Error(model_dir.string() + ": a GGUF LoRA adapter is written for " + families +
                    " models only, not " + std::string(spec.name),
                spec.gguf_arch.empty() ? "Export a Hugging Face folder (--format hf) instead."
                                       : "Export the merged model instead (--merge --format gguf).");
  }
  const std::string arch(spec.gguf_arch);

  const PeftLoraConfig cfg = read_peft_config_file(adapter_dir);
  // llama.cpp scales by alpha / rank; rsLoRA by alpha / sqrt(rank).
  const double alpha = cfg.use_rslora ? cfg.alpha * std::sqrt(static_cast<double>(cfg.rank)) : cfg.alpha;

  const fs::path weights = adapter_dir / "adapter_model.safetensors";
  if (!fs::exists(weights)) throw Error(adapter_dir.string() + ": no adapter_model.safetensors");
  const auto st = io::SafetensorsFile::open(weights);

  io::GgufWriter w;
  w.set("general.architecture", arch);
  w.set("general.type", std::string("adapter"));
  w.set("general.name", name);
  w.set("adapter.type", std::string("lora"));
  w.set("adapter.lora.alpha", static_cast<float>(alpha));

  // base_model.model.model.layers.<i>.<projection>.lora_<A|B>.weight (the adapter name "default" may sit
  // before .weight in older files).
  static const std::regex pattern(
      R"(^base_model\.model\.model\.layers\.(\d+)\.(self_attn\.[qkvo]_proj|mlp\.(?:gate|up|down)_proj)\.lora_([AB])(?:\.default)?\.weight$)");
  struct Pair {
    const io::TensorInfo* a = nullptr;
    const io::TensorInfo* b = nullptr;
    std::string projection;
  };
  std::map<std::pair<int64_t, std::string>, Pair> pairs;
  for (const auto& t : st.tensors()) {
    std::smatch m;
    if (!std::regex_match(t.name, m, pattern))
      throw Error(
          weights.string() + ": " + t.name + " is not a LoRA A/B matrix of a decoder projection",
          "llama.cpp's adapters adapt the attention and MLP projections only; export the merged model "
          "instead (--merge --format gguf).");
    const int64_t layer = std::stoll(m[1].str());
    if (layer >= c.num_layers) throw Error(weights.string() + ": " + t.name + " is past the model's layers");
    Pair& p = pairs[{layer, m[2].str()}];
    p.projection = m[2].str();
    (m[3].str() == "A" ? p.a : p.b) = &t;
  }
  if (pairs.empty()) throw Error(weights.string() + ": no LoRA matrices");
  // Layer by layer, as the base file lists its tensors.
  for (const auto& [key, p] : pairs) {
    const std::string gname =
        "blk." + std::to_string(key.first) + "." + projection_names().at(p.projection) + ".weight";
    if (p.a == nullptr || p.b == nullptr)
      throw Error(weights.string() + ": " + gname + " has only one of its LoRA matrices");
    if (p.a->shape.size() != 2 || p.b->shape.size() != 2 || p.a->shape[0] != p.b->shape[1])
      throw Error(weights.string() + ": the LoRA matrices of " + p.projection + " in layer " +
                  std::to_string(key.first) + " do not multiply (A " + std::to_string(p.a->shape[0]) +
                  " rows, B " + std::to_string(p.b->shape.back()) + " columns)");
    const bool rope = spec.gguf_interleaved_rope &&
                      (p.projection == "self_attn.q_proj" || p.projection == "self_attn.k_proj");
    const int64_t heads = p.projection == "self_attn.q_proj" ? c.num_heads : c.num_kv_heads;
    const io::TensorInfo* a = p.a;
    const io::TensorInfo* b = p.b;
    if (rope && (heads <= 0 || b->shape[0] % (2 * heads) != 0))
      throw Error(weights.string() + ": " + b->name + " has " + std::to_string(b->shape[0]) +
                  " rows, not whole heads of the model's");
    const io::SafetensorsFile* file = &st;
    w.add_tensor({gname + ".lora_a", a->shape, io::GgufType::F32, [file, a] {
                    const std::vector<float> v = floats(*file, *a);
                    return std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4);
                  }});
    w.add_tensor({gname + ".lora_b", b->shape, io::GgufType::F32, [file, b, rope, heads] {
                    std::vector<float> v = floats(*file, *b);
                    if (rope) v = interleave_rope_rows(v, b->shape[0], b->shape[1], heads);
                    return std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4);
                  }});
  }
  w.write(out_file);
  return fs::file_size(out_file);
}

}  // namespace forja::exporter
