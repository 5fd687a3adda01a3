#include "forja/peft_config.h"

#include <nlohmann/json.hpp>

#include <cmath>

#include "forja/error.h"
#include "forja/file_util.h"
#include "util/json_number.h"

namespace forja {
namespace fs = std::filesystem;
using nlohmann::json;

PeftLoraConfig parse_peft_config(std::string_view text, const std::string& file) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw_file_error(file, std::string("is not valid JSON: ") + e.what());
  }
  auto unsupported = [&](const std::string& what) {
    throw_file_error(file, what + " is not supported by Forja's LoRA",
                     "Train the adapter with plain LoRA (no DoRA, no per-module ranks, bias \"none\").");
  };
  auto bad = [&](const std::string& key, const std::string& want) {
    throw_file_error(file, "\"" + key + "\" is " + j[key].dump() + ", not " + want);
  };
  if (!j.is_object()) throw_file_error(file, "is not a JSON object");
  // Typed reads that name the key (nlohmann's own type errors do not); null stands for "not set", as PEFT
  // writes it.
  auto set = [&](const char* key) { return j.contains(key) && !j[key].is_null(); };
  auto number = [&](const char* key, double fallback) {
    if (!set(key)) return fallback;
    if (!j[key].is_number()) bad(key, "a number");
    return j[key].get<double>();
  };
  auto flag = [&](const char* key) {
    if (!set(key)) return false;
    if (!j[key].is_boolean()) bad(key, "true or false");
    return j[key].get<bool>();
  };
  auto string = [&](const char* key, const char* fallback) {
    if (!set(key)) return std::string(fallback);
    if (!j[key].is_string()) bad(key, "a string");
    return j[key].get<std::string>();
  };
  PeftLoraConfig c;
  if (string("peft_type", "LORA") != "LORA") unsupported("peft_type " + j["peft_type"].dump());
  if (flag("use_dora")) unsupported("DoRA (use_dora)");
  for (const char* pattern : {"rank_pattern", "alpha_pattern"})
    if (set(pattern) && !j[pattern].empty()) unsupported(pattern);
  if (string("bias", "none") != "none") unsupported("bias " + j["bias"].dump());
  if (flag("lora_bias")) unsupported("a LoRA bias (lora_bias)");
  // Whole modules saved beside the adapter would be left out of every answer without a word.
  if (set("modules_to_save") && !j["modules_to_save"].empty()) unsupported("modules_to_save");
  if (!set("r")) throw_file_error(file, "has no \"r\" (the LoRA rank)");
  const auto rank = json_int(j["r"], 1, 1 << 16);
  if (!rank) bad("r", "a LoRA rank from 1 to 65536");
  c.rank = *rank;
  c.alpha = number("lora_alpha", 8.0);
  if (!std::isfinite(c.alpha) || c.alpha <= 0) bad("lora_alpha", "a positive number");
  c.dropout = number("lora_dropout", 0.0);
  if (!(c.dropout >= 0 && c.dropout < 1)) bad("lora_dropout", "a probability from 0 up to (not including) 1");
  c.use_rslora = flag("use_rslora");
  if (!set("target_modules")) throw_file_error(file, "has no \"target_modules\"");
  const json& t = j["target_modules"];
  if (t.is_string()) unsupported("a regular-expression target_modules");
  if (!t.is_array() || t.empty()) bad("target_modules", "a non-empty list of module names");
  for (const auto& m : t) {
    if (!m.is_string() || m.get<std::string>().empty()) bad("target_modules", "a list of module names");
    c.target_modules.push_back(m.get<std::string>());
  }
  return c;
}

PeftLoraConfig read_peft_config_file(const fs::path& dir) {
  const fs::path path = dir / "adapter_config.json";
  if (!fs::exists(path))
    throw_file_error(dir.string(), "has no adapter_config.json",
                     "Open the folder PEFT's save_pretrained wrote.");
  return parse_peft_config(read_text_file(path), path.string());
}

}  // namespace forja
