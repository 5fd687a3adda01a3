// model.safetensors.index.json (core/io/checkpoint.cpp) beside one valid shard, "shard.safetensors", so that an
// index naming it gets as far as matching tensor names.
#include "forja/checkpoint.h"

#include <array>

#include "forja/file_util.h"
#include "fuzz_util.h"

namespace {

void write_shard_once() {
  static const bool done = [] {
    std::filesystem::create_directories(forja::fuzz::scratch_dir() / "model");
    const std::array<uint8_t, 8> bytes{};
    forja::io::write_safetensors(forja::fuzz::scratch_dir() / "model" / "shard.safetensors",
                                 {{"w", forja::io::DType::F32, {2}, bytes}, {"b", forja::io::DType::U8, {0}, {}}});
    return true;
  }();
  (void)done;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  write_shard_once();
  forja::fuzz::write_scratch("model/model.safetensors.index.json", data, size);
  forja::fuzz::guarded([&] {
    const auto ckpt = forja::io::Checkpoint::open(forja::fuzz::scratch_dir() / "model");
    for (const auto& name : ckpt.names()) {
      const auto ref = ckpt.at(name);
      (void)ref.file->bytes(*ref.info);
    }
    (void)ckpt.file_names();
  });
  return 0;
}
