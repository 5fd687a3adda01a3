// The real RecordEncoder: chat-shaped records through the model's chat template (loss on the assistant
// turns), plain text through the tokenizer with its usual special tokens plus EOS (loss on everything). Also
// the pieces of the pipeline that need a tokenizer: the pad id and the UI's token preview.
#include <memory>

#include "forja/chat_template.h"
#include "forja/dataset.h"
#include "forja/tokenizer.h"

namespace forja {

RecordEncoder make_tokenizer_encoder(const Tokenizer& tokenizer, const ChatTemplate* chat_template) {
  // Made on first use: a text-only dataset must not require a chat template the model may not have.
  auto owned = std::make_shared<std::optional<ChatTemplate>>();
  return [&tokenizer, chat_template, owned](const Record& record) {
    EncodedExample out;
    if (record.format == RecordFormat::Text) {
      out.ids = tokenizer.encode(record.text, /*add_special_tokens=*/true);
      // A pretraining-style document ends with EOS so the model learns to stop; some tokenizers add it
      // already.
      const auto& eos = tokenizer.info().eos_id;
      if (eos && (out.ids.empty() || out.ids.back() != *eos)) out.ids.push_back(*eos);
      out.train_mask.assign(out.ids.size(), 1);
      return out;
    }
    const ChatTemplate* tmpl = chat_template;
    if (!tmpl) {
      if (!owned->has_value()) owned->emplace(ChatTemplate::for_tokenizer(tokenizer));
      tmpl = &**owned;
    }
    TokenizedChat chat = tokenize_chat(tokenizer, tmpl->render(record.messages));
    out.ids = std::move(chat.ids);
    out.train_mask = std::move(chat.train_mask);
    return out;
  };
}

TokenId default_pad_id(const Tokenizer& tokenizer) {
  const TokenizerInfo& info = tokenizer.info();
  if (info.pad_id) return *info.pad_id;
  if (info.eos_id) return *info.eos_id;
  return 0;
}

std::vector<PreviewToken> preview_example(const Tokenizer& tokenizer, const Example& example) {
  std::vector<PreviewToken> out;
  out.reserve(example.ids.size());
  for (size_t t = 0; t < example.ids.size(); ++t) {
    TokenId id = example.ids[t];
    out.push_back({id, tokenizer.id_to_piece(id), tokenizer.decode_bytes(std::span<const TokenId>(&id, 1)),
                   // The first token is never a label, whatever its mask says.
                   t >= 1 && t < example.train_mask.size() && example.train_mask[t] != 0});
  }
  return out;
}

}  // namespace forja
