// SHA-1 (FIPS 180-4), only for git object ids: the Hub names a small (non-LFS) file by its git blob id, and a
// download is verified against it. Not for anything that needs collision resistance.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace forja {

class Sha1 {
 public:
  Sha1();
  void update(const void* data, size_t size);
  std::string hex_digest();  // finishes; call once

 private:
  void block(const uint8_t* p);
  uint32_t h_[5];
  uint8_t buf_[64];
  size_t buffered_ = 0;
  uint64_t total_ = 0;
};

std::string sha1_hex(std::string_view data);

// git's object id of a blob: SHA-1 over "blob <size>\0" followed by the content. The caller feeds the content
// to the returned hasher (files are streamed, not held in memory).
Sha1 git_blob_hasher(uint64_t size);

}  // namespace forja
