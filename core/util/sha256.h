// SHA-256 (FIPS 180-4): checkpoint manifests (a torn or bit-flipped file must not pass as a checkpoint) and
// Hub downloads (an LFS file's ETag is the SHA-256 of its content).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "util/merkle_damgard.h"

namespace forja {

class Sha256 : public MerkleDamgard<Sha256, 8> {
 public:
  Sha256();

 private:
  friend class MerkleDamgard<Sha256, 8>;
  void block(const uint8_t* p);
};

std::string sha256_hex(std::string_view data);
// Hashes a file by streaming it; throws forja::Error naming the file when it cannot be read.
std::string sha256_file(const std::filesystem::path& path);

}  // namespace forja
