// PEFT's adapter_config.json (core/io/peft_config.cpp): what a downloaded or hand-edited adapter folder
// holds.
#include "forja/peft_config.h"

#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  forja::fuzz::guarded([&] {
    const auto config = forja::parse_peft_config(forja::fuzz::as_string(data, size), "adapter_config.json");
    (void)config;
  });
  return 0;
}
