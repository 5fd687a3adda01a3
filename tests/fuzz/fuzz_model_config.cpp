// A Hugging Face config.json (core/io/model_config.cpp).
#include "forja/model_config.h"

#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  forja::fuzz::guarded([&] {
    const auto config = forja::parse_model_config_text(forja::fuzz::as_string(data, size), "config.json");
    (void)config;
  });
  return 0;
}
