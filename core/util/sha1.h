// SHA-1 (FIPS 180-4), only for git object ids: the Hub names a small (non-LFS) file by its git blob id, and a
// download is verified against it. Not for anything that needs collision resistance.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "util/merkle_damgard.h"

namespace forja {

class Sha1 : public MerkleDamgard<Sha1, 5> {
 public:
  Sha1();

 private:
  friend class MerkleDamgard<Sha1, 5>;
  void block(const uint8_t* p);
};

std::string sha1_hex(std::string_view data);

// git's object id of a blob: SHA-1 over "blob <size>\0" followed by the content. The caller feeds the content
// to the returned hasher (files are streamed, not held in memory).
Sha1 git_blob_hasher(uint64_t size);

}  // namespace forja
