#include "util/sha1.h"

namespace forja {
namespace {

constexpr uint32_t rotl(uint32_t x, int n) {
  return (x << n) | (x >> (32 - n));
}

}  // namespace

Sha1::Sha1() : MerkleDamgard({0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0}) {}

void Sha1::block(const uint8_t* p) {
  uint32_t w[80];
  for (int i = 0; i < 16; ++i) w[i] = big_endian_word(p + 4 * i);
  for (int i = 16; i < 80; ++i) w[i] = rotl(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
  uint32_t a = h_[0], b = h_[1], c = h_[2], d = h_[3], e = h_[4];
  for (int i = 0; i < 80; ++i) {
    uint32_t f, k;
    if (i < 20) {
      f = (b & c) | (~b & d), k = 0x5a827999;
    } else if (i < 40) {
      f = b ^ c ^ d, k = 0x6ed9eba1;
    } else if (i < 60) {
      f = (b & c) | (b & d) | (c & d), k = 0x8f1bbcdc;
    } else {
      f = b ^ c ^ d, k = 0xca62c1d6;
    }
    const uint32_t t = rotl(a, 5) + f + e + k + w[i];
    e = d, d = c, c = rotl(b, 30), b = a, a = t;
  }
  h_[0] += a, h_[1] += b, h_[2] += c, h_[3] += d, h_[4] += e;
}

std::string sha1_hex(std::string_view data) {
  Sha1 h;
  h.update(data.data(), data.size());
  return h.hex_digest();
}

Sha1 git_blob_hasher(uint64_t size) {
  Sha1 h;
  const std::string header = "blob " + std::to_string(size);
  h.update(header.data(), header.size() + 1);  // with the terminating NUL, as git hashes it
  return h;
}

}  // namespace forja
