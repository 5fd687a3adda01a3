// adapter_config.json as PEFT writes it for a LoRA adapter, read without LibTorch: what the loaders, the
// exporters and the fuzzer share.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace forja {

struct PeftLoraConfig {
  int64_t rank = 0;
  double alpha = 0;
  double dropout = 0;
  bool use_rslora = false;
  std::vector<std::string> target_modules;  // never empty
};

// Parses `text`, the contents of `file` (named in errors). Throws forja::Error naming the file for a
// malformed config and for anything Forja's LoRA cannot reproduce (DoRA, a rank or alpha pattern, LoRA
// biases, another PEFT type, a regular-expression target_modules).
PeftLoraConfig parse_peft_config(std::string_view text, const std::string& file);

// Reads <adapter_dir>/adapter_config.json.
PeftLoraConfig read_peft_config_file(const std::filesystem::path& adapter_dir);

}  // namespace forja
