// The YAML subset on its own (core/train/yaml_subset.cpp), without the config's key checks in front of it.
#include <nlohmann/json.hpp>

#include "fuzz_util.h"
#include "yaml_subset.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  forja::fuzz::guarded([&] {
    const auto j = forja::train::parse_yaml_subset(forja::fuzz::as_string(data, size), "config.yaml");
    (void)j.dump();
  });
  return 0;
}
