// A GGUF file's header, metadata and tensor table (core/io/gguf.cpp).
#include "forja/gguf.h"

#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto path = forja::fuzz::write_scratch("model.gguf", data, size);
  forja::fuzz::guarded([&] {
    const auto file = forja::io::read_gguf(path);
    (void)file;
  });
  return 0;
}
