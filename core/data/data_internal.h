// Helpers shared by the files of core/data; not part of the public API.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>

#include "forja/dataset.h"
#include "forja/error.h"

namespace forja {

inline constexpr const char* kFixRecordHint =
    "Fix the line in the file, or choose to skip bad records (they are then counted and listed).";

// A problem with one record: a forja::Error whose message is "file:line: problem", keeping the parts apart so
// that skip-and-count can list them without re-parsing the message.
class RecordError : public Error {
 public:
  RecordError(DataProblem p, std::string hint = kFixRecordHint)
      : Error(p.where() + ": " + p.message, std::move(hint)), problem(std::move(p)) {}
  DataProblem problem;
};

// Parses JSON text that begins on line `line` of `file`. A syntax error throws forja::Error naming the exact
// line
// ("file:line: not valid JSON (column C): ...").
nlohmann::json parse_json_at(std::string_view text, const std::string& file, size_t line);

Record parse_record_json(const nlohmann::json& value, RecordFormat format, const std::string& file,
                         size_t line);

// SplitMix64: spreads (seed, stream) into well-mixed 64-bit seeds, so that nearby seeds give unrelated
// orders.
inline uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// The random choices derived from one user seed, each from its own stream so that the eval split and the
// epoch orders are not correlated.
enum class RngStream : uint64_t { EvalSplit = 1, EpochOrder = 2 };

}  // namespace forja
