// End to end on the fixture tokenizers (tests/fixtures/tokenizers, made by make_tokenizer_fixtures.py with HF
// transformers): a dataset file read, rendered with a chat template and tokenized must give exactly the ids
// apply_chat_template gave; with the {% generation %} chatml template the trained tokens must be exactly HF's
// assistant_masks, and with the model's own template (no generation marks) each trained run must be one
// assistant turn: its content and its end-of-turn token, with at most the template's whitespace around them.
#include <QTemporaryDir>
#include <QtTest>

#include <nlohmann/json.hpp>

#include <fstream>
#include <map>

#include "forja/dataset.h"
#include "forja/error.h"
#include "forja/file_util.h"
#include "forja/tokenizer.h"
#include "qtest_util.h"

using namespace forja;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const fs::path kTokenizers = fs::path(FORJA_FIXTURES_DIR) / "tokenizers";

json load_json(const fs::path& p) {
  return json::parse(read_text_file(p));
}

std::string trained_text(const Tokenizer& tok, const Example& e) {
  std::vector<TokenId> ids;
  for (size_t t = 1; t < e.ids.size(); ++t)
    if (e.train_mask[t]) ids.push_back(e.ids[t]);
  return tok.decode_bytes(ids);
}

Record fake_chat(const std::string& user, const std::string& assistant) {
  Record r;
  r.format = RecordFormat::Chat;
  r.messages = {{"user", user}, {"assistant", assistant}};
  r.file = "mem.jsonl";
  r.line = 1;
  return r;
}

// Trained tokens as runs of consecutive positions, decoded: one per assistant turn.
std::vector<std::string> trained_runs(const Tokenizer& tok, const Example& e) {
  std::vector<std::string> runs;
  std::vector<TokenId> run;
  for (size_t t = 1; t <= e.ids.size(); ++t) {
    if (t < e.ids.size() && e.train_mask[t]) {
      run.push_back(e.ids[t]);
    } else if (!run.empty()) {
      runs.push_back(tok.decode_bytes(run));
      run.clear();
    }
  }
  return runs;
}

// Whitespace the template writes around a turn may share a token with it, so compare without it.
std::string strip(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r\n"), e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

// The mask without its first entry, which never becomes a label (so its value does not matter).
std::vector<uint8_t> label_mask(std::vector<uint8_t> m) {
  if (!m.empty()) m[0] = 0;
  return m;
}

using TempFile = forja_test::TempFiles;

}  // namespace

class TestDataTokenizer : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void chatMatchesHuggingFace() {
    Tokenizer tok = Tokenizer::load((kTokenizers / "qwen2_bpe").string());
    json chat = load_json(kTokenizers / "chat/qwen2_bpe.json");
    const ChatTemplate generation(chat["templates"]["chatml_generation"].get<std::string>(),
                                  "chatml_generation", "", "<|im_end|>");
    // Every fixture conversation with an assistant turn (single_user has none; bad_order is refused by
    // design).
    const std::vector<std::string> names{"two_turn_pt", "system_multilingual", "system_ends_assistant",
                                         "special_inside", "whitespace"};
    std::string jsonl;
    for (const auto& n : names) jsonl += json{{"messages", chat["conversations"][n]}}.dump() + "\n";
    TempFile files;
    DatasetOptions o;
    o.train_files = {files.write("chat.jsonl", jsonl)};
    o.max_length = 4096;  // longer than any fixture conversation: nothing is cut
    PreparedDataset d = prepare_dataset(o, make_tokenizer_encoder(tok, &generation));
    PreparedDataset own = prepare_dataset(o, make_tokenizer_encoder(tok));
    QCOMPARE(d.train.size(), names.size());
    QCOMPARE(own.train.size(), names.size());

    for (size_t i = 0; i < names.size(); ++i) {
      const std::string key = names[i] + "|nogen";
      const json& want = chat["renders"]["chatml_generation"][key];
      QCOMPARE(d.train[i].ids, want["ids"].get<std::vector<TokenId>>());
      QCOMPARE(label_mask(d.train[i].train_mask),
               label_mask(want["assistant_masks"].get<std::vector<uint8_t>>()));

      // The tokenizer's own template (chatml without generation marks) renders the same text.
      QCOMPARE(own.train[i].ids, chat["renders"]["own"][key]["ids"].get<std::vector<TokenId>>());
      std::vector<std::string> runs = trained_runs(tok, own.train[i]);
      std::vector<std::string> turns;
      for (const auto& m : chat["conversations"][names[i]])
        if (m["role"] == "assistant") turns.push_back(m["content"].get<std::string>() + "<|im_end|>");
      QCOMPARE(runs.size(), turns.size());
      for (size_t k = 0; k < runs.size(); ++k) QCOMPARE(strip(runs[k]), strip(turns[k]));
    }
    // And in words, for the one that ends with the assistant: "4" and the end of its turn.
    QCOMPARE(trained_text(tok, d.train[2]), std::string("4<|im_end|>"));
  }

  void alpacaAndShareGptRenderLikeChat() {
    Tokenizer tok = Tokenizer::load((kTokenizers / "qwen2_bpe").string());
    json chat = load_json(kTokenizers / "chat/qwen2_bpe.json");
    const ChatTemplate generation(chat["templates"]["chatml_generation"].get<std::string>(),
                                  "chatml_generation", "", "<|im_end|>");
    // system_ends_assistant written in the two other shapes.
    TempFile files;
    DatasetOptions o;
    json alpaca = {{"instruction", "2+2?"}, {"output", "4"}, {"system", " Be terse. "}};
    json sharegpt = {{"conversations",
                      {{{"from", "system"}, {"value", " Be terse. "}},
                       {{"from", "human"}, {"value", "2+2?"}},
                       {{"from", "gpt"}, {"value", "4"}}}}};
    o.train_files = {files.write("mixed.jsonl", alpaca.dump() + "\n" + sharegpt.dump() + "\n")};
    PreparedDataset d = prepare_dataset(o, make_tokenizer_encoder(tok, &generation));
    const json& want = chat["renders"]["chatml_generation"]["system_ends_assistant|nogen"];
    QCOMPARE(d.train.size(), size_t(2));
    for (const Example& e : d.train) {
      QCOMPARE(e.ids, want["ids"].get<std::vector<TokenId>>());
      QCOMPARE(label_mask(e.train_mask), label_mask(want["assistant_masks"].get<std::vector<uint8_t>>()));
    }
    QCOMPARE(d.stats.alpaca, size_t(1));
    QCOMPARE(d.stats.sharegpt, size_t(1));

    o.train_on_prompt = true;
    PreparedDataset all = prepare_dataset(o, make_tokenizer_encoder(tok, &generation));
    QCOMPARE(all.train[0].trained_tokens(), static_cast<int64_t>(all.train[0].ids.size()) - 1);
  }

  void llama3TemplateAndText() {
    Tokenizer tok = Tokenizer::load((kTokenizers / "llama3_bpe").string());
    json chat = load_json(kTokenizers / "chat/llama3_bpe.json");
    json expected = load_json(kTokenizers / "expected/llama3_bpe.json");
    json corpus = load_json(kTokenizers / "corpus.json");
    const TokenId eos = expected["meta"]["eos_token_id"].get<TokenId>();
    const std::string text = corpus[18].get<std::string>();  // "Olá, tudo bem?"

    TempFile files;
    DatasetOptions o;
    o.train_files = {
        files.write("l3.jsonl", json{{"messages", chat["conversations"]["system_ends_assistant"]}}.dump() +
                                    "\n" + json{{"text", text}}.dump() + "\n")};
    PreparedDataset d = prepare_dataset(o, make_tokenizer_encoder(tok));
    QCOMPARE(d.train.size(), size_t(2));
    // The template writes <|begin_of_text|> itself; tokenize_chat must not add a second one.
    QCOMPARE(d.train[0].ids,
             chat["renders"]["own"]["system_ends_assistant|nogen"]["ids"].get<std::vector<TokenId>>());
    QCOMPARE(trained_text(tok, d.train[0]), std::string("4<|eot_id|>"));

    // Plain text: HF's ids with the default special tokens (BOS for this tokenizer), then EOS; all trained.
    std::vector<TokenId> want = expected["ids"][18].get<std::vector<TokenId>>();
    QCOMPARE(want.front(), expected["meta"]["bos_token_id"].get<TokenId>());
    want.push_back(eos);
    QCOMPARE(d.train[1].ids, want);
    QCOMPARE(d.train[1].trained_tokens(), static_cast<int64_t>(want.size()) - 1);
  }

  void padAndPreview() {
    Tokenizer qwen = Tokenizer::load((kTokenizers / "qwen2_bpe").string());
    Tokenizer llama3 = Tokenizer::load((kTokenizers / "llama3_bpe").string());
    // qwen2_bpe's tokenizer_config.json names <|endoftext|> (id 1600 in its tokenizer.json) as pad;
    // llama3_bpe has no pad token, so its EOS <|eot_id|> (1809 in expected/llama3_bpe.json's meta) pads.
    QCOMPARE(default_pad_id(qwen), TokenId(1600));
    QCOMPARE(default_pad_id(llama3), TokenId(1809));

    std::vector<Record> records{
        parse_record(R"({"instruction":"2+2?","output":"4"})", RecordFormat::Auto, "m", 1)};
    PreparedDataset d = prepare_records(records, {}, DatasetOptions{}, make_tokenizer_encoder(qwen));
    std::vector<PreviewToken> p = preview_example(qwen, d.train[0]);
    QCOMPARE(p.size(), d.train[0].ids.size());
    std::string all, trained;
    for (const auto& t : p) {
      all += t.text;
      if (t.trained) trained += t.text;
    }
    QCOMPARE(all, std::string("<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n4<|im_end|>\n"));
    QCOMPARE(strip(trained), std::string("4<|im_end|>"));
    QCOMPARE(p[0].piece, std::string("<|im_start|>"));
  }

  // An answer that starts with a character byte-level BPE splits over two tokens ("É" is 0xC3 0x89): both
  // tokens are the answer's and must be trained. encode_with_spans gives both the character's offsets, as HF
  // does; an empty span on the first one (a bug once) would leave it untrained.
  void splitCharacterAtTurnStart() {
    Tokenizer tok = Tokenizer::load((kTokenizers / "qwen2_bpe").string());
    std::vector<Record> records{fake_chat("q", "\xC3\x89 somar")};
    PreparedDataset d = prepare_records(records, {}, DatasetOptions{}, make_tokenizer_encoder(tok));
    std::vector<std::string> runs = trained_runs(tok, d.train[0]);
    QCOMPARE(runs.size(), size_t(1));
    QCOMPARE(strip(runs[0]), std::string("\xC3\x89 somar<|im_end|>"));
  }

  void demoDatasetEndToEnd() {
    Tokenizer tok = Tokenizer::load((kTokenizers / "qwen2_bpe").string());
    DatasetOptions o;
    o.train_files = {FORJA_DEMO_DATASET};
    o.eval_fraction = 0.1;
    o.max_length = 4096;
    PreparedDataset d = prepare_dataset(o, make_tokenizer_encoder(tok));
    ReadResult raw = read_dataset_file(FORJA_DEMO_DATASET);
    QCOMPARE(d.train.size() + d.eval.size(), raw.records.size());
    QCOMPARE(d.stats.train.dropped_no_trained + d.stats.train.truncated, size_t(0));
    // Each example trains on its answer and the end of turn, nothing else.
    std::map<std::string, std::string> answer_of;
    for (const Record& r : raw.records) answer_of[r.where()] = r.messages.back().content;
    for (const auto* split : {&d.train, &d.eval})
      for (const Example& e : *split) {
        std::vector<std::string> runs = trained_runs(tok, e);
        QCOMPARE(runs.size(), size_t(1));
        QCOMPARE(strip(runs[0]), answer_of.at(e.source) + "<|im_end|>");
      }

    BatchStream s(d.train,
                  {.rows = 2, .seq_len = 512, .packing = true, .seed = 1, .pad_id = default_pad_id(tok)});
    int64_t loss = 0;
    for (int64_t i = s.batches_in_epoch(0); i > 0; --i) loss += s.next().loss_tokens;
    QCOMPARE(loss, d.stats.train.trained_tokens);
  }
};

QTEST_GUILESS_MAIN(TestDataTokenizer)
#include "test_data_tokenizer.moc"
