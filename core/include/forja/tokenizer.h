// forja::Tokenizer: text <-> token ids exactly as Hugging Face tokenizes a model folder. A folder with
// tokenizer.json uses Forja's own implementation of the HF fast-tokenizer pipeline; a folder with only
// tokenizer.model goes through libsentencepiece with HF's conventions (BOS/EOS, legacy leading space, special
// tokens matched first).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace forja {

using TokenId = int32_t;

// A token's place in the input text: byte offsets [begin, end) into the string that was encoded.
struct TokenSpan {
  size_t begin = 0;
  size_t end = 0;
};

struct Encoding {
  std::vector<TokenId> ids;
  std::vector<TokenSpan> spans;  // one per id; special tokens added by the post-processor get an empty span
};

// What tokenizer_config.json / special_tokens_map.json say about the model's conventions.
struct TokenizerInfo {
  std::string model_dir;
  std::string backend;  // "tokenizer.json" or "sentencepiece"
  std::optional<std::string> bos_token, eos_token, unk_token, pad_token;
  std::optional<TokenId> bos_id, eos_id, unk_id, pad_id;
  // The raw chat templates: "default" plus any named ones (list form of chat_template, chat_template.jinja).
  std::optional<std::string> chat_template;
  bool clean_up_tokenization_spaces = false;
};

class Tokenizer {
 public:
  class Impl;

  // Loads a model folder. Throws forja::Error naming the file and the problem.
  static Tokenizer load(const std::string& model_dir);
  // A tokenizer.json on its own (no config): special tokens come from the file's added_tokens.
  static Tokenizer from_tokenizer_json(const std::string& path);

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  // add_special_tokens: what HF does by default (post-processor / add_bos_token / add_eos_token).
  std::vector<TokenId> encode(std::string_view text, bool add_special_tokens = true) const;
  Encoding encode_with_spans(std::string_view text, bool add_special_tokens = true) const;
  // threads: 0 uses every hardware thread (as HF's encode_batch does); 1 encodes on the calling thread.
  std::vector<std::vector<TokenId>> encode_batch(const std::vector<std::string>& texts,
                                                 bool add_special_tokens = true, unsigned threads = 0) const;

  // Invalid UTF-8 in the decoded bytes becomes U+FFFD, as in HF.
  std::string decode(std::span<const TokenId> ids, bool skip_special_tokens = false) const;
  // Raw decoded bytes (may end in the middle of a UTF-8 character); no clean-up of tokenization spaces.
  std::string decode_bytes(std::span<const TokenId> ids, bool skip_special_tokens = false) const;

  // HF's convert_ids_to_tokens / convert_tokens_to_ids.
  std::string id_to_piece(TokenId id) const;
  std::optional<TokenId> piece_to_id(std::string_view piece) const;
  size_t vocab_size() const;  // len(tokenizer) in HF: model vocab plus added tokens
  bool is_special(TokenId id) const;

  const TokenizerInfo& info() const;

 private:
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// bytes as printable UTF-8: each byte that is not part of a whole, valid UTF-8 character becomes <0xNN> (as
// SentencePiece writes byte pieces), so that a piece or a span that cuts a character can be printed or put in
// JSON.
std::string printable_bytes(std::string_view bytes);

// Turns a stream of ids into text pieces that are always whole UTF-8 characters, and whose concatenation
// equals decode() of all ids seen so far (prefix-window decoding, so SentencePiece's leading-space rule holds
// too).
class StreamingDecoder {
 public:
  explicit StreamingDecoder(const Tokenizer& tokenizer, bool skip_special_tokens = false);

  // Returns the new text that is now certain (possibly empty while a character is incomplete).
  std::string push(TokenId id);
  // End of stream: whatever is held back, with incomplete bytes as U+FFFD.
  std::string finish();

 private:
  const Tokenizer& tokenizer_;
  bool skip_special_;
  std::vector<TokenId> ids_;
  size_t prefix_ = 0;  // ids before this index are no longer re-decoded
  size_t read_ = 0;    // ids before this index have had their text returned
};

}  // namespace forja
