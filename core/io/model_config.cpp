#include "forja/model_config.h"

#include <nlohmann/json.hpp>

#include <cmath>

#include "forja/architecture.h"
#include "forja/error.h"
#include "forja/file_util.h"

namespace forja {
using nlohmann::json;

const char* family_name(Family f) {
  return architecture(f).name.data();
}

namespace {

// Field readers: every message names the file and the field.
class Fields {
 public:
  Fields(const json& j, std::string source) : j_(j), source_(std::move(source)) {}

  [[noreturn]] void fail(const std::string& problem, const std::string& hint = {}) const {
    throw_file_error(source_, problem, hint);
  }
  static std::string type_of(const json& v) {
    return v.is_string()         ? "a string"
           : v.is_boolean()      ? "a boolean"
           : v.is_number_float() ? "a number"
           : v.is_number()       ? "an integer"
           : v.is_null()         ? "null"
           : v.is_array()        ? "a list"
                                 : "an object";
  }
  bool has(const char* key) const { return j_.contains(key) && !j_[key].is_null(); }

  int64_t integer(const char* key) const {
    if (!has(key)) fail(std::string("field '") + key + "' is missing");
    return integer_value(key, j_[key]);
  }
  int64_t integer_or(const char* key, int64_t fallback) const {
    return has(key) ? integer_value(key, j_[key]) : fallback;
  }
  int64_t integer_value(const std::string& key, const json& v) const {
    if (!v.is_number_integer()) fail("field '" + key + "' must be an integer, found " + type_of(v));
    return v.get<int64_t>();
  }
  int64_t positive(const char* key) const {
    int64_t v = integer(key);
    if (v <= 0) fail(std::string("field '") + key + "' must be positive, found " + std::to_string(v));
    return v;
  }
  double number_or(const char* key, double fallback) const {
    return has(key) ? number_value(key, j_[key]) : fallback;
  }
  double number_value(const std::string& key, const json& v) const {
    if (!v.is_number()) fail("field '" + key + "' must be a number, found " + type_of(v));
    return v.get<double>();
  }
  bool boolean_or(const char* key, bool fallback) const {
    if (!has(key)) return fallback;
    if (!j_[key].is_boolean())
      fail(std::string("field '") + key + "' must be true or false, found " + type_of(j_[key]));
    return j_[key].get<bool>();
  }
  std::string string_or(const char* key, const std::string& fallback) const {
    if (!has(key)) return fallback;
    if (!j_[key].is_string())
      fail(std::string("field '") + key + "' must be a string, found " + type_of(j_[key]));
    return j_[key].get<std::string>();
  }
  const json& raw() const { return j_; }

 private:
  const json& j_;
  std::string source_;
};

// One RoPE setting: `p` is rope_parameters (5.x), rope_scaling (4.x) or one layer type's entry of
// rope_parameters (Gemma 3), `theta` the value it falls back to, `label` its name in messages.
RopeConfig parse_rope_params(const Fields& f, const json* params, double theta, const std::string& label) {
  RopeConfig r;
  r.theta = theta;
  if (!params) return r;
  const json& p = *params;
  auto num = [&](const char* key, double fallback) {
    return p.contains(key) && !p[key].is_null() ? f.number_value(label + "." + key, p[key]) : fallback;
  };
  r.theta = num("rope_theta", r.theta);
  if (p.contains("rope_type") && p["rope_type"].is_string())
    r.type = p["rope_type"].get<std::string>();
  else if (p.contains("type") && p["type"].is_string())
    r.type = p["type"].get<std::string>();
  r.factor = num("factor", 1.0);
  if (r.type == "default") return r;
  if (r.type == "linear") {
    if (r.factor <= 0) f.fail(label + ": the scaling factor must be positive");
    return r;
  }
  if (r.type == "llama3") {
    r.low_freq_factor = num("low_freq_factor", 1.0);
    r.high_freq_factor = num("high_freq_factor", 4.0);
    if (!p.contains("original_max_position_embeddings"))
      f.fail(label + ": rope type llama3 needs 'original_max_position_embeddings'");
    r.original_max_position_embeddings =
        f.integer_value(label + ".original_max_position_embeddings", p["original_max_position_embeddings"]);
    if (r.factor <= 0 || r.high_freq_factor <= r.low_freq_factor || r.original_max_position_embeddings <= 0)
      f.fail(
          label +
          ": rope type llama3 needs factor > 0, high_freq_factor > low_freq_factor and a positive original "
          "length");
    return r;
  }
  if (r.type == "longrope" || r.type == "su") {  // "su": Phi-3's first configs
    r.type = "longrope";
    const json& top = f.raw();
    const json* original =
        p.contains("original_max_position_embeddings")     ? &p["original_max_position_embeddings"]
        : top.contains("original_max_position_embeddings") ? &top["original_max_position_embeddings"]
                                                           : nullptr;
    if (!original || original->is_null())
      f.fail(label + ": rope type longrope needs 'original_max_position_embeddings'");
    r.original_max_position_embeddings = f.integer_value("original_max_position_embeddings", *original);
    if (r.original_max_position_embeddings <= 0)
      f.fail("'original_max_position_embeddings' must be positive");
    for (auto [key, out] :
         {std::pair{"short_factor", &r.short_factor}, std::pair{"long_factor", &r.long_factor}}) {
      if (!p.contains(key) || !p[key].is_array() || p[key].empty())
        f.fail(label + ": rope type longrope needs the list '" + key + "'");
      for (const auto& v : p[key]) {
        const double x = f.number_value(label + "." + key, v);
        if (!std::isfinite(x) || x <= 0)
          f.fail(label + "." + key + " holds " + v.dump() + ", not a positive number");
        out->push_back(x);
      }
    }
    // transformers' default: the ratio of the extended context to the original sets the attention factor.
    const double extension = static_cast<double>(f.integer_or("max_position_embeddings", 0)) /
                             static_cast<double>(r.original_max_position_embeddings);
    r.attention_factor =
        num("attention_factor",
            extension <= 1.0
                ? 1.0
                : std::sqrt(1.0 + std::log(extension) /
                                      std::log(static_cast<double>(r.original_max_position_embeddings))));
    return r;
  }
  f.fail(label + ": RoPE scaling type '" + r.type + "' is not supported yet",
         "Supported: default, linear, llama3, longrope.");
}

// 5.x: everything in rope_parameters; 4.x: rope_theta at the top, scaling (or null) in rope_scaling.
const json* rope_section(const json& j) {
  if (j.contains("rope_parameters") && j["rope_parameters"].is_object()) return &j["rope_parameters"];
  if (j.contains("rope_scaling") && j["rope_scaling"].is_object()) return &j["rope_scaling"];
  return nullptr;
}

RopeConfig parse_rope(const Fields& f) {
  return parse_rope_params(f, rope_section(f.raw()), f.number_or("rope_theta", 10000.0), "rope");
}

// Gemma 2 / 3: which layers are local (sliding window), their RoPE, the attention scale and the soft-caps.
void parse_gemma(const Fields& f, ModelConfig& c) {
  const json& j = f.raw();
  c.gemma_norms = true;
  c.hidden_act = f.string_or("hidden_activation", f.string_or("hidden_act", "gelu_pytorch_tanh"));
  if (c.hidden_act != "gelu_pytorch_tanh")
    f.fail("hidden_activation '" + c.hidden_act + "' is not supported (expected gelu_pytorch_tanh)");
  const double scalar = f.number_or("query_pre_attn_scalar", 256.0);
  if (!std::isfinite(scalar) || scalar <= 0) f.fail("field 'query_pre_attn_scalar' must be positive");
  c.attn_scale = 1.0 / std::sqrt(scalar);
  c.attn_softcap = f.number_or("attn_logit_softcapping", 0.0);
  c.final_softcap = f.number_or("final_logit_softcapping", 0.0);
  if (c.attn_softcap < 0 || c.final_softcap < 0) f.fail("soft-capping values must not be negative");
  if (f.has("sliding_window")) {
    c.sliding_window = f.integer("sliding_window");
    if (*c.sliding_window <= 0) f.fail("field 'sliding_window' must be positive");
  }
  // layer_types when given; else the families' fixed patterns: Gemma 2 alternates starting with a local
  // layer, Gemma 3 has one global layer in every sliding_window_pattern (6).
  const bool gemma3 = c.family == Family::Gemma3;
  const int64_t pattern =
      gemma3 ? f.integer_or("sliding_window_pattern", f.integer_or("_sliding_window_pattern", 6)) : 2;
  if (pattern <= 0) f.fail("field 'sliding_window_pattern' must be positive");
  if (f.has("layer_types")) {
    if (!j["layer_types"].is_array() || static_cast<int64_t>(j["layer_types"].size()) != c.num_layers)
      f.fail("field 'layer_types' must list one type per layer (" + std::to_string(c.num_layers) + ")");
    for (const auto& t : j["layer_types"]) {
      const std::string type = t.is_string() ? t.get<std::string>() : "";
      if (type != "sliding_attention" && type != "full_attention")
        f.fail("field 'layer_types' holds '" + t.dump() + "'",
               "Each entry is \"sliding_attention\" or \"full_attention\".");
      c.sliding_layers.push_back(type == "sliding_attention");
    }
  } else {
    for (int64_t i = 0; i < c.num_layers; ++i) c.sliding_layers.push_back((i + 1) % pattern != 0);
  }
  if (!gemma3) return;
  // 5.x: rope_parameters keyed by layer type; 4.x: the global RoPE at the top (with rope_scaling) and the
  // local layers' base in rope_local_base_freq, unscaled.
  const json* params = rope_section(j);
  if (params && params->contains("full_attention")) {
    for (const char* key : {"full_attention", "sliding_attention"})
      if (!params->contains(key) || !(*params)[key].is_object())
        f.fail(std::string("field 'rope_parameters.") + key + "' is missing");
    c.rope = parse_rope_params(f, &(*params)["full_attention"], 10000.0, "rope_parameters.full_attention");
    c.rope_local =
        parse_rope_params(f, &(*params)["sliding_attention"], 10000.0, "rope_parameters.sliding_attention");
  } else {
    RopeConfig local;
    local.theta = f.number_or("rope_local_base_freq", 10000.0);
    c.rope_local = local;
  }
  if (!std::isfinite(c.rope_local->theta) || c.rope_local->theta <= 0)
    f.fail("the local layers' rope_theta must be a positive finite number");
}

std::vector<int64_t> token_ids(const Fields& f, const char* key) {
  const json& j = f.raw();
  std::vector<int64_t> out;
  if (!f.has(key)) return out;
  if (j[key].is_array()) {
    for (const auto& v : j[key]) out.push_back(f.integer_value(key, v));
  } else {
    out.push_back(f.integer_value(key, j[key]));
  }
  return out;
}

}  // namespace

ModelConfig parse_model_config_text(const std::string& text, const std::string& source) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw_file_error(source, std::string("is not valid JSON: ") + e.what());
  }
  if (!j.is_object()) throw_file_error(source, "is not a JSON object");
  Fields f(j, source);
  ModelConfig c;
  c.path = source;
  c.model_type = f.string_or("model_type", "");
  if (c.model_type.empty())
    f.fail("field 'model_type' is missing", "A Hugging Face config.json names its model_type.");
  if (j.contains("architectures") && j["architectures"].is_array() && !j["architectures"].empty() &&
      j["architectures"][0].is_string())
    c.architecture = j["architectures"][0].get<std::string>();
  c.torch_dtype = f.string_or("dtype", f.string_or("torch_dtype", ""));
  c.vocab_size = f.positive("vocab_size");
  auto bos = token_ids(f, "bos_token_id");
  if (!bos.empty()) c.bos_token_id = bos[0];
  c.eos_token_ids = token_ids(f, "eos_token_id");

  if (c.model_type == "gpt2") {
    c.family = Family::Gpt2;
    if (c.architecture.empty()) c.architecture = "GPT2LMHeadModel";
    c.hidden_size = f.positive("n_embd");
    c.num_layers = f.positive("n_layer");
    c.num_heads = f.positive("n_head");
    c.num_kv_heads = c.num_heads;
    c.max_position_embeddings = f.positive("n_positions");
    c.intermediate_size = f.integer_or("n_inner", 4 * c.hidden_size);
    c.norm_eps = f.number_or("layer_norm_epsilon", 1e-5);
    c.hidden_act = f.string_or("activation_function", "gelu_new");
    if (c.hidden_act != "gelu_new" && c.hidden_act != "gelu_pytorch_tanh" && c.hidden_act != "gelu")
      f.fail("activation_function '" + c.hidden_act + "' is not supported", "Supported: gelu_new, gelu.");
    c.tie_word_embeddings = f.boolean_or("tie_word_embeddings", true);
    c.qkv_bias = c.o_bias = c.mlp_bias = true;
    if (f.boolean_or("scale_attn_by_inverse_layer_idx", false) ||
        f.boolean_or("reorder_and_upcast_attn", false))
      f.fail("scale_attn_by_inverse_layer_idx / reorder_and_upcast_attn are not supported");
    if (!f.boolean_or("scale_attn_weights", true)) f.fail("scale_attn_weights=false is not supported");
  } else if (const Architecture* arch = find_architecture(c.model_type)) {
    c.family = arch->family;
    c.qk_norm = arch->qk_norm;
    c.fused_projections = arch->fused_projections;
    c.hidden_size = f.positive("hidden_size");
    c.intermediate_size = f.positive("intermediate_size");
    c.num_layers = f.positive("num_hidden_layers");
    c.num_heads = f.positive("num_attention_heads");
    c.num_kv_heads = f.integer_or("num_key_value_heads", c.num_heads);
    c.max_position_embeddings = f.integer_or("max_position_embeddings", 2048);
    c.norm_eps = f.number_or("rms_norm_eps", 1e-6);
    c.hidden_act = f.string_or("hidden_act", "silu");
    const bool gemma = c.family == Family::Gemma2 || c.family == Family::Gemma3;
    if (c.hidden_act != "silu" && !gemma)
      f.fail("hidden_act '" + c.hidden_act + "' is not supported (expected silu)");
    c.tie_word_embeddings = f.boolean_or("tie_word_embeddings", false);
    c.head_dim = f.integer_or("head_dim", 0);
    c.rope = parse_rope(f);
    if (c.family == Family::Qwen2 || c.family == Family::Qwen3) {
      // Qwen2 always has q/k/v biases and no o_proj bias; Qwen3 has attention_bias (false as shipped).
      c.qkv_bias = c.family == Family::Qwen2 || f.boolean_or("attention_bias", false);
      c.o_bias = c.family == Family::Qwen3 && c.qkv_bias;
      if (f.boolean_or("use_sliding_window", false))
        f.fail("use_sliding_window=true (Qwen's per-layer sliding window) is not supported yet");
    } else {
      c.qkv_bias = c.o_bias = f.boolean_or("attention_bias", false);
      c.mlp_bias = f.boolean_or("mlp_bias", false);
    }
    const json* rope_params = rope_section(j);
    const double partial = rope_params && rope_params->contains("partial_rotary_factor") &&
                                   (*rope_params)["partial_rotary_factor"].is_number()
                               ? (*rope_params)["partial_rotary_factor"].get<double>()
                               : f.number_or("partial_rotary_factor", 1.0);
    if (c.family == Family::Phi3 && partial != 1.0)
      f.fail("partial_rotary_factor below 1 (RoPE on part of each head) is not supported yet");
    if ((c.family == Family::Mistral || c.family == Family::Phi3) && f.has("sliding_window")) {
      c.sliding_window = f.integer("sliding_window");
      if (*c.sliding_window <= 0) f.fail("field 'sliding_window' must be positive");
    }
    if (gemma) parse_gemma(f, c);
  } else {
    std::string covered;
    for (const auto& a : architectures())
      covered +=
          std::string(covered.empty() ? "" : "; ") + std::string(a.model_type) + ": " + std::string(a.models);
    if (c.model_type == "gemma3")
      f.fail("model_type 'gemma3' (Gemma 3 with its vision tower) is not supported",
             "Forja loads Gemma 3's text-only checkpoints (model_type gemma3_text, as Gemma 3 1B ships).");
    f.fail("model_type '" + c.model_type + "' is not supported",
           "Forja supports the model types " + supported_model_types() + " (" + covered + ").");
  }
  // A bad value here becomes a NaN, a division by zero or a giant allocation deep in the model, so refuse it
  // with the key's name before anything is built.
  const auto need_positive = [&](const char* key, double v) {
    if (!std::isfinite(v) || v <= 0)
      f.fail(std::string("field '") + key + "' must be a positive finite number, found " + std::to_string(v));
  };
  const bool gpt2 = c.family == Family::Gpt2;
  need_positive(gpt2 ? "layer_norm_epsilon" : "rms_norm_eps", c.norm_eps);
  if (!gpt2) need_positive("rope_theta", c.rope.theta);
  if (c.max_position_embeddings <= 0)
    f.fail(std::string("field '") + (gpt2 ? "n_positions" : "max_position_embeddings") +
           "' must be positive, found " + std::to_string(c.max_position_embeddings));
  if (c.intermediate_size <= 0)
    f.fail(std::string("field '") + (gpt2 ? "n_inner" : "intermediate_size") + "' must be positive, found " +
           std::to_string(c.intermediate_size));
  if (c.head_dim < 0) f.fail("field 'head_dim' must be positive, found " + std::to_string(c.head_dim));
  if (c.head_dim == 0 && !gpt2 && f.has("head_dim"))
    f.fail("field 'head_dim' must be positive, found 0",
           "Leave head_dim out to use hidden_size / num_attention_heads.");
  if (c.head_dim == 0) {
    if (c.hidden_size % c.num_heads != 0)
      f.fail("hidden size " + std::to_string(c.hidden_size) + " is not divisible by " +
             std::to_string(c.num_heads) + " heads and no head_dim is given");
    c.head_dim = c.hidden_size / c.num_heads;
  }
  if (c.num_kv_heads <= 0 || c.num_heads % c.num_kv_heads != 0)
    f.fail("field 'num_key_value_heads' must be positive and divide num_attention_heads " +
           std::to_string(c.num_heads) + ": num_key_value_heads " + std::to_string(c.num_kv_heads));
  if (c.head_dim % 2 != 0 && c.family != Family::Gpt2) f.fail("head_dim must be even for rotary embeddings");
  if (c.rope.type == "longrope")
    for (const auto* factors : {&c.rope.short_factor, &c.rope.long_factor})
      if (static_cast<int64_t>(factors->size()) != c.head_dim / 2)
        f.fail("the longrope factor lists need head_dim / 2 = " + std::to_string(c.head_dim / 2) +
               " entries, found " + std::to_string(factors->size()));
  return c;
}

bool ModelConfig::local_layer(int64_t layer) const {
  const auto i = static_cast<size_t>(layer);
  return i < sliding_layers.size() && sliding_layers[i];
}

int64_t ModelConfig::layer_window(int64_t layer) const {
  if (!sliding_window) return 0;
  return sliding_layers.empty() || local_layer(layer) ? *sliding_window : 0;
}

const RopeConfig& ModelConfig::layer_rope(int64_t layer) const {
  return rope_local && local_layer(layer) ? *rope_local : rope;
}

ModelConfig parse_model_config(const std::filesystem::path& config_json) {
  return parse_model_config_text(read_text_file(config_json), config_json.string());
}

}  // namespace forja
