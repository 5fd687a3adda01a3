// The train config (core/train/train_config.cpp): the input as JSON and as the YAML subset (yaml_subset.cpp).
// Both files are compiled into this target: they need no LibTorch.
#include "forja/train.h"

#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text = forja::fuzz::as_string(data, size);
  for (const char* source : {"config.json", "config.yaml"}) {
    forja::fuzz::guarded([&] {
      const auto config = forja::train_config_from_text(text, source);
      // What was accepted must write back and read again.
      (void)forja::train_config_from_json(forja::train_config_to_json(config), "round-trip.json");
    });
  }
  return 0;
}
