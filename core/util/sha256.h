// SHA-256 (FIPS 180-4): checkpoint manifests (a torn or bit-flipped file must not pass as a checkpoint) and
// Hub downloads (an LFS file's ETag is the SHA-256 of its content).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace forja {

class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t size);
  std::string hex_digest();  // finishes; call once

 private:
  void block(const uint8_t* p);
  uint32_t h_[8];
  uint8_t buf_[64];
  size_t buffered_ = 0;
  uint64_t total_ = 0;
};

std::string sha256_hex(std::string_view data);
// Hashes a file by streaming it; throws forja::Error naming the file when it cannot be read.
std::string sha256_file(const std::filesystem::path& path);

}  // namespace forja
