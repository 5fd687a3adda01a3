// The safetensors header and its validation (core/io/safetensors.cpp), then every tensor's bytes.
#include "forja/safetensors.h"

#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto path = forja::fuzz::write_scratch("model.safetensors", data, size);
  forja::fuzz::guarded([&] {
    const auto file = forja::io::SafetensorsFile::open(path);
    volatile uint8_t sink = 0;
    for (const auto& t : file.tensors()) {
      (void)t.numel();
      const auto bytes = file.bytes(t);
      // The first and last byte: the validation promised they are inside the mapping.
      if (!bytes.empty()) sink = sink ^ bytes.front() ^ bytes.back();
    }
    for (const auto& [k, v] : file.metadata()) sink = sink ^ static_cast<uint8_t>(k.size() + v.size());
    (void)sink;
  });
  return 0;
}
