// Whole numbers read from JSON: nlohmann's get<int64_t>() on a float such as 9e127, or on an unsigned value
// above the target type, converts out of range (undefined behaviour), so integer fields of files we read go
// through here.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>

#include <nlohmann/json.hpp>

namespace forja {

// The value if it is a JSON integer within [lo, hi]; nullopt for a float, a string, or anything out of range.
inline std::optional<int64_t> json_int(const nlohmann::json& v,
                                       int64_t lo = std::numeric_limits<int64_t>::min(),
                                       int64_t hi = std::numeric_limits<int64_t>::max()) {
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (hi < 0 || u > static_cast<uint64_t>(hi) || static_cast<int64_t>(u) < lo) return std::nullopt;
    return static_cast<int64_t>(u);
  }
  if (!v.is_number_integer()) return std::nullopt;
  const int64_t x = v.get<int64_t>();
  if (x < lo || x > hi) return std::nullopt;
  return x;
}

// The value if it is a non-negative JSON integer (the whole uint64 range).
inline std::optional<uint64_t> json_uint(const nlohmann::json& v) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer() && v.get<int64_t>() >= 0) return static_cast<uint64_t>(v.get<int64_t>());
  return std::nullopt;
}

}  // namespace forja
