// Reads the tokenizer reference fixtures made by tests/fixtures/make_tokenizer_fixtures.py (HF's outputs).
#pragma once

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

namespace forja::test {

inline std::string tokenizer_fixtures() {
  return std::string(FORJA_FIXTURES_DIR) + "/tokenizers";
}

inline nlohmann::json read_fixture_json(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("missing fixture " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return nlohmann::json::parse(ss.str());
}

}  // namespace forja::test
