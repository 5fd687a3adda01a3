// What SHA-1 and SHA-256 share (FIPS 180-4, 5.1.1 and 6.x): the message cut into 64-byte blocks, padded with
// 0x80, zeros and its length in bits (big-endian), and a state of 32-bit words printed big-endian. A hash
// derives from this with its initial state and its block function.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace forja {

template <class Hash, size_t kWords>
class MerkleDamgard {
 public:
  void update(const void* data, size_t size) {
    const auto* p = static_cast<const uint8_t*>(data);
    total_ += size;
    if (buffered_) {
      const size_t take = std::min(size, kBlock - buffered_);
      std::memcpy(buf_ + buffered_, p, take);
      buffered_ += take, p += take, size -= take;
      if (buffered_ < kBlock) return;
      static_cast<Hash*>(this)->block(buf_);
      buffered_ = 0;
    }
    for (; size >= kBlock; p += kBlock, size -= kBlock) static_cast<Hash*>(this)->block(p);
    std::memcpy(buf_, p, size);
    buffered_ = size;
  }

  // Finishes; call once.
  std::string hex_digest() {
    const uint64_t bits = total_ * 8;
    const uint8_t one = 0x80, zero = 0;
    update(&one, 1);
    while (buffered_ != kBlock - 8) update(&zero, 1);
    uint8_t len[8];
    for (int i = 0; i < 8; ++i) len[i] = uint8_t(bits >> (56 - 8 * i));
    update(len, 8);
    static const char* hex = "0123456789abcdef";
    std::string out;
    for (uint32_t v : h_)
      for (int s = 28; s >= 0; s -= 4) out += hex[(v >> s) & 0xf];
    return out;
  }

 protected:
  static constexpr size_t kBlock = 64;

  explicit MerkleDamgard(const std::array<uint32_t, kWords>& initial) : h_(initial) {}

  static uint32_t big_endian_word(const uint8_t* p) {
    return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3];
  }

  std::array<uint32_t, kWords> h_;

 private:
  uint8_t buf_[kBlock];
  size_t buffered_ = 0;
  uint64_t total_ = 0;
};

}  // namespace forja
