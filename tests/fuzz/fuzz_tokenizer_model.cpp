// A folder with only tokenizer.model: Forja's SentencePiece loading path (core/tokenizer/sentencepiece_tokenizer.cpp
// and the shim module it loads), then a short encode/decode round.
#include "forja/tokenizer.h"

#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  forja::fuzz::write_scratch("sp/tokenizer.model", data, size);
  forja::fuzz::guarded([&] {
    const auto tok = forja::Tokenizer::load((forja::fuzz::scratch_dir() / "sp").string());
    const auto ids = tok.encode("Hello, world! 123 caf\xc3\xa9 \xe4\xb8\xad\n\tend");
    (void)tok.decode(ids);
    const size_t n = tok.vocab_size();
    for (size_t i = 0; i < n && i < 64; ++i) (void)tok.id_to_piece(static_cast<forja::TokenId>(i));
  });
  return 0;
}
