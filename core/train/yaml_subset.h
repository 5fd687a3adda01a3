// The part of YAML that a training config uses, read into JSON (then checked like a JSON config): mappings by
// indentation, `key: value` scalars (plain, "double" or 'single' quoted; numbers, true/false, null), lists as
// `[a, b]` or as `- item` lines, and # comments. Anchors, multi-line strings, tags and documents are refused
// with file:line and what is not supported, never guessed.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace forja::train {

// Throws forja::Error "<source>:<line>: <problem>".
nlohmann::json parse_yaml_subset(const std::string& text, const std::string& source);

}  // namespace forja::train
