// Chat templates against transformers' apply_chat_template (tests/fixtures/tokenizers/chat/*.json): the
// rendered text byte for byte, the ids, errors where HF raised, and the assistant mask (HF's own where the
// template has
// {% generation %}, else the assistant content must lie inside the spans).
#include <QtTest>

#include "fixture_util.h"
#include "forja/chat_template.h"
#include "forja/error.h"

using json = nlohmann::json;

namespace {

std::vector<forja::ChatMessage> to_messages(const json& conv) {
  std::vector<forja::ChatMessage> out;
  for (const auto& m : conv) out.push_back({m["role"].get<std::string>(), m["content"].get<std::string>()});
  return out;
}

const char* kNames[] = {"gpt2_bpe",   "llama3_bpe",      "qwen2_bpe", "smollm_bpe",   "sp_bpe",
                        "sp_unigram", "deepseek_v3_bpe", "gemma_bpe", "phi3_sp_json", "mistral_v3_sp_json"};

}  // namespace

class TestChatTemplate : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void renders_like_transformers_data() {
    QTest::addColumn<QString>("name");
    for (const char* n : kNames) QTest::newRow(n) << QString(n);
  }

  void renders_like_transformers() {
    QFETCH(QString, name);
    const std::string root = forja::test::tokenizer_fixtures();
    const json rec = forja::test::read_fixture_json(root + "/chat/" + name.toStdString() + ".json");
    const forja::Tokenizer tok = forja::Tokenizer::load(root + "/" + name.toStdString());
    const std::string bos = tok.info().bos_token.value_or(""), eos = tok.info().eos_token.value_or("");
    size_t checked = 0, refused = 0, masks = 0, entries = 0;
    for (auto t = rec["renders"].begin(); t != rec["renders"].end(); ++t) {
      const std::string tname = t.key();
      const json& src = rec["templates"][tname];
      // Variables the recording passed to apply_chat_template for this template (enable_thinking).
      const std::string variables =
          rec.contains("variables") && rec["variables"].contains(tname) ? rec["variables"][tname].dump() : "";
      const forja::ChatTemplate tpl = src.is_null()
                                          ? forja::ChatTemplate::for_tokenizer(tok)
                                          : forja::ChatTemplate(src.get<std::string>(), tname, bos, eos);
      for (auto c = t.value().begin(); c != t.value().end(); ++c) {
        const std::string key = c.key();
        const std::string conv_name = key.substr(0, key.find('|'));
        const bool gen = key.substr(key.find('|') + 1) == "gen";
        const auto messages = to_messages(rec["conversations"][conv_name]);
        const json& want = c.value();
        ++entries;
        const std::string where = name.toStdString() + " / " + tname + " / " + key;
        forja::ChatRenderOptions opt;
        opt.add_generation_prompt = gen;
        opt.extra_variables_json = variables;
        if (want.contains("error")) {
          bool threw = false;
          try {
            tpl.render(messages, opt);
          } catch (const forja::Error&) {
            threw = true;
          }
          QVERIFY2(
              threw,
              (where + ": HF raised \"" + want["error"].get<std::string>() + "\", Forja did not").c_str());
          ++refused;
          continue;
        }
        const forja::RenderedChat r = tpl.render(messages, opt);
        QVERIFY2(r.text == want["text"].get<std::string>(),
                 (where + ":\n--- ours\n" + r.text + "\n--- HF\n" + want["text"].get<std::string>()).c_str());
        const forja::TokenizedChat tc = forja::tokenize_chat(tok, r);
        QCOMPARE(tc.train_mask.size(), tc.ids.size());
        // sp_unigram: transformers 5 tokenizes a unigram tokenizer.model with a BPE conversion, not as
        // sentencepiece does (see test_tokenizer_reference), so only its texts and spans are compared here.
        const bool ids_comparable = name != "sp_unigram";
        if (ids_comparable)
          QVERIFY2(tc.ids == want["ids"].get<std::vector<forja::TokenId>>(),
                   (where + ": ids differ").c_str());
        if (ids_comparable && want.contains("assistant_masks")) {
          const auto hf_mask = want["assistant_masks"].get<std::vector<int>>();
          QCOMPARE(tc.train_mask.size(), hf_mask.size());
          for (size_t k = 0; k < hf_mask.size(); ++k)
            QVERIFY2(tc.train_mask[k] == hf_mask[k],
                     (where + ": mask differs at token " + std::to_string(k)).c_str());
          ++masks;
        }
        // Every assistant turn's (trimmed) words must be inside a span, and no user text may be.
        size_t span_i = 0;
        for (const auto& m : messages) {
          if (m.role != "assistant") continue;
          QVERIFY2(span_i < r.assistant_spans.size(), (where + ": an assistant turn has no span").c_str());
          const auto [b, e] = r.assistant_spans[span_i++];
          const size_t fb = m.content.find_first_not_of(" \t\n"), fe = m.content.find_last_not_of(" \t\n");
          if (fb == std::string::npos) continue;
          std::string words = m.content.substr(fb, fe - fb + 1);
          // A reasoning template may drop an earlier turn's <think> block; the answer after it always stays.
          if (const size_t think_end = words.rfind("</think>"); think_end != std::string::npos) {
            words = words.substr(think_end + 8);
            words = words.substr(words.find_first_not_of(" \t\n"));
            words = words.substr(0, words.find_last_not_of(" \t\n") + 1);
          }
          QVERIFY2(r.text.substr(b, e - b).find(words) != std::string::npos,
                   (where + ": span \"" + r.text.substr(b, e - b) + "\" misses \"" + words + "\"").c_str());
        }
        QCOMPARE(span_i, r.assistant_spans.size());
        ++checked;
      }
    }
    // Every entry was either rendered and compared or refused as HF refused it; the file has every template x
    // every conversation x 2 generation settings (make_tokenizer_fixtures.py), the built-in ones among them.
    QCOMPARE(checked + refused, entries);
    QCOMPARE(entries, rec["templates"].size() * rec["conversations"].size() * 2);
    for (const auto& builtin : forja::ChatTemplate::builtin_names()) {
      QVERIFY2(rec["templates"].contains(builtin), ("no recording of built-in " + builtin).c_str());
      // The recording is of the template as shipped.
      QVERIFY2(
          rec["templates"][builtin].get<std::string>() == forja::ChatTemplate::builtin_source(builtin),
          ("built-in " + builtin + " changed since the recording; rerun make_tokenizer_fixtures.py").c_str());
    }
    QVERIFY(checked > 0);
    // chatml_generation: HF gave a mask for every conversation.
    if (name != "sp_unigram") QCOMPARE(masks, rec["conversations"].size() * 2);
  }
};

QTEST_GUILESS_MAIN(TestChatTemplate)
#include "test_chat_template.moc"
