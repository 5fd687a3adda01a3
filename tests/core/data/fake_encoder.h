// A tokenizer-free RecordEncoder for the pipeline tests: one token per byte, so expected ids and masks can be
// written down by hand. A chat renders each turn as "<role>" + content + "\n"; the assistant's content and
// its
// "\n" (standing in for an end-of-turn token) are trained. Plain text is BOS + bytes + EOS, all trained.
#pragma once

#include <string>

#include "forja/dataset.h"
#include "forja/error.h"

namespace fake {

inline constexpr forja::TokenId kPad = 0, kBos = 1, kEos = 2;
inline forja::TokenId byte_id(char c) {
  return static_cast<forja::TokenId>(static_cast<unsigned char>(c)) + 3;
}

inline forja::EncodedExample encode(const forja::Record& r) {
  forja::EncodedExample out;
  auto add = [&](const std::string& s, bool trained) {
    for (char c : s) {
      out.ids.push_back(byte_id(c));
      out.train_mask.push_back(trained ? 1 : 0);
    }
  };
  if (r.format == forja::RecordFormat::Text) {
    out.ids.push_back(kBos);
    out.train_mask.push_back(1);
    add(r.text, true);
    out.ids.push_back(kEos);
    out.train_mask.push_back(1);
    return out;
  }
  for (const auto& m : r.messages) {
    // Like a chat template's raise_exception(): a refusal the pipeline must attribute to the record.
    if (m.content == "REFUSE") throw forja::Error("template error: refused", "template hint");
    add("<" + m.role + ">", false);
    add(m.content + "\n", m.role == "assistant");
  }
  return out;
}

inline forja::Record chat(const std::string& user, const std::string& assistant, size_t line = 1) {
  forja::Record r;
  r.format = forja::RecordFormat::Chat;
  r.messages = {{"user", user}, {"assistant", assistant}};
  r.file = "mem.jsonl";
  r.line = line;
  return r;
}

inline forja::Record text(const std::string& t, size_t line = 1) {
  forja::Record r;
  r.format = forja::RecordFormat::Text;
  r.text = t;
  r.file = "mem.jsonl";
  r.line = line;
  return r;
}

}  // namespace fake
