// ChatSession end to end (needs the tokenizer area): a model folder made here from the llama fixture's config
// with random weights, its vocabulary sized to the qwen2_bpe fixture tokenizer (ChatML template, <|im_end|>),
// so that the template, the streaming text, the prefix reuse across turns, a restored conversation and the
// compare mode run on real tokenizer code.
#include <QTemporaryDir>
#include <QtTest>

#include <ATen/core/grad_mode.h>

#include "causal_lm.h"
#include "forja/error.h"
#include "forja/file_util.h"
#include "forja/generate.h"
#include "forja/model_config.h"
#include "forja/safetensors.h"
#include "forja/tokenizer.h"
#include "reference.h"
#include "weights.h"

using namespace forja;

class TestInferChat : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    const std::filesystem::path d = dir_.path().toStdString();
    const auto tok_dir = std::filesystem::path(FORJA_FIXTURES_DIR) / "tokenizers" / "qwen2_bpe";
    for (const auto& e : std::filesystem::directory_iterator(tok_dir))
      std::filesystem::copy(e.path(), d / e.path().filename());
    const int64_t vocab = static_cast<int64_t>(Tokenizer::load(d.string()).vocab_size());
    std::string cfg = read_text_file(forja_test::fixture_dir("llama") / "config.json");
    const std::string key = "\"vocab_size\": 320";  // the llama fixture's config.json
    QVERIFY(cfg.find(key) != std::string::npos);
    cfg.replace(cfg.find(key), key.size(), "\"vocab_size\": " + std::to_string(vocab));
    write_file_atomic(d / "config.json", cfg);
    ModelConfig config = parse_model_config(d / "config.json");
    RandomWeights w(3, at::kFloat, at::kCPU);
    at::NoGradGuard no_grad;
    auto model = make_causal_lm(config, w);
    std::vector<at::Tensor> keep;
    std::vector<io::TensorToWrite> tensors;
    for (const auto& p : model->named_parameters(true)) {
      keep.push_back(p.value().contiguous());
      const at::Tensor& t = keep.back();
      tensors.push_back({p.key(), io::DType::F32, t.sizes().vec(),
                         std::span<const uint8_t>(static_cast<const uint8_t*>(t.data_ptr()), t.nbytes())});
    }
    io::write_safetensors(d / "model.safetensors", tensors);
  }

  void twoTurns() {
    const std::string d = dir_.path().toStdString();
    ChatSession chat(d);
    Tokenizer tokenizer = Tokenizer::load(d);
    GenerationConfig cfg;
    cfg.max_new_tokens = 6;
    std::string streamed;
    auto first = chat.send("Hello there", cfg, [&](const TokenEvent& e) { return streamed += e.text, true; });
    QCOMPARE(streamed, first.text);
    // The text is the decoded answer without its end-of-turn token (special tokens are not shown).
    std::vector<TokenId> body = first.tokens;
    if (first.stop == StopReason::StopToken) body.pop_back();
    QCOMPARE(first.text, tokenizer.decode(body, /*skip_special_tokens=*/true));
    QCOMPARE(chat.history().size(), size_t{2});
    QCOMPARE(chat.history()[1].role, std::string("assistant"));
    QCOMPARE(chat.history()[1].content, first.text);

    // The second turn re-renders the conversation: its start is the cached first turn, only the rest is
    // prefilled.
    auto second = chat.send("And again?", cfg);
    QVERIFY(second.stats.reused_tokens > 0);
    QVERIFY(second.stats.reused_tokens < second.stats.prompt_tokens);
    QCOMPARE(chat.history().size(), size_t{4});
    chat.clear();
    QVERIFY(chat.history().empty());
  }

  void restoredHistoryAndCompare() {
    const std::string d = dir_.path().toStdString();
    GenerationConfig cfg;
    cfg.max_new_tokens = 6;
    // A conversation restored into a fresh session (a chat reopened from the journal) renders the same prompt
    // as the live one, so the next greedy answer is the same.
    ChatSession live(d);
    live.send("Hello there", cfg);
    const std::vector<ChatTurn> first_turn = live.history();
    auto live_next = live.send("And again?", cfg);
    ChatSession restored(d);
    restored.set_history(first_turn);
    auto restored_next = restored.send("And again?", cfg);
    QCOMPARE(restored_next.stats.prompt_tokens, live_next.stats.prompt_tokens);
    QCOMPARE(restored_next.tokens, live_next.tokens);

    // compare(): the base answer streams first, then the adapted one; each is scored under the other model;
    // neither joins the history. The llama fixture's trained adapter fits this model (same projections).
    QVERIFY_THROWS_EXCEPTION(Error, restored.compare("One more", cfg));
    restored.generator().load_adapter(
        (std::filesystem::path(FORJA_FIXTURES_DIR) / "train" / "llama" / "final").string());
    const size_t turns = restored.history().size();
    std::string streamed[2];
    bool base_after_adapted = false;
    auto c = restored.compare("One more", cfg, [&](bool adapted, const TokenEvent& e) {
      base_after_adapted = base_after_adapted || (!adapted && !streamed[1].empty());
      streamed[adapted ? 1 : 0] += e.text;
      return true;
    });
    QVERIFY(!base_after_adapted);
    QCOMPARE(streamed[0], c.base.text);
    QCOMPARE(streamed[1], c.adapted.text);
    QCOMPARE(c.base_under_adapter.size(), c.base.tokens.size());
    QCOMPARE(c.adapted_under_base.size(), c.adapted.tokens.size());
    QCOMPARE(restored.history().size(), turns);
    QVERIFY(restored.generator().adapter_enabled());
    // The base answer is what send() gives with the adapter off: the same prompt and the same stops.
    restored.generator().set_adapter_enabled(false);
    QCOMPARE(restored.send("One more", cfg).tokens, c.base.tokens);
  }

 private:
  QTemporaryDir dir_;
};

QTEST_GUILESS_MAIN(TestInferChat)
#include "test_infer_chat.moc"
