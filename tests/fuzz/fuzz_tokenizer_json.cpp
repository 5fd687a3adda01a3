// A tokenizer.json on its own (core/tokenizer/hf_json_tokenizer.cpp), then a short encode/decode round so that
// what the loader accepted is also used.
#include "forja/tokenizer.h"

#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto path = forja::fuzz::write_scratch("tokenizer.json", data, size);
  forja::fuzz::guarded([&] {
    const auto tok = forja::Tokenizer::from_tokenizer_json(path.string());
    const auto ids = tok.encode("Hello, world! 123 <s> caf\xc3\xa9 \xe4\xb8\xad\n\tend");
    (void)tok.decode(ids);
    (void)tok.decode(ids, true);
    const size_t n = tok.vocab_size();
    for (size_t i = 0; i < n && i < 64; ++i) (void)tok.id_to_piece(static_cast<forja::TokenId>(i));
  });
  return 0;
}
