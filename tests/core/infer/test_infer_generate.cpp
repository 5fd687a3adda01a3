// The generation loop's stops and streaming on the llama fixture, whose greedy answer is known (the fixture's
// gen_output): stop tokens, EOS (from config.json), stop strings on streamed text, max tokens, a full
// context, cancel (callback and flag), and the adapter compare mode.
#include <QTemporaryDir>
#include <QtTest>

#include <cstring>
#include <limits>

#include "forja/error.h"
#include "forja/file_util.h"
#include "forja/safetensors.h"
#include "infer_test_support.h"
#include "qtest_util.h"
#include "stop_text.h"

using namespace forja;
using forja_test::expected_continuation;
using forja_test::fixture_generator;
using forja_test::ids_of;
namespace fs = std::filesystem;

namespace {

// A stand-in for the tokenizer: token id -> one letter. Letters repeat (320 ids, 26 letters), which gives the
// stop strings something to find.
std::string letter(int32_t id) {
  return std::string(1, static_cast<char>('a' + id % 26));
}
Detokenizer letters() {
  return {letter, {}};
}

std::vector<int32_t> prompt() {
  return ids_of(forja_test::expected("llama", "gen_prompt"));
}

GenerationConfig greedy(int64_t max_new) {
  GenerationConfig c;
  c.max_new_tokens = max_new;
  c.stop_at_eos = false;
  return c;
}

}  // namespace

class TestInferGenerate : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void maxTokensAndStream() {
    Generator gen = fixture_generator("llama");
    const auto want = expected_continuation("llama");
    std::vector<TokenEvent> events;
    auto r = gen.generate(
        prompt(), greedy(5), [&](const TokenEvent& e) { return events.push_back(e), true; }, letters());
    QCOMPARE(r.tokens, std::vector<int32_t>(want.begin(), want.begin() + 5));
    QCOMPARE(r.stop, StopReason::MaxTokens);
    QCOMPARE(events.size(), size_t{5});
    std::string text;
    for (size_t i = 0; i < events.size(); ++i) {
      QCOMPARE(events[i].id, r.tokens[i]);
      QCOMPARE(events[i].index, static_cast<int64_t>(i));
      QCOMPARE(events[i].logprob, r.logprobs[i]);
      text += events[i].text;
    }
    std::string letters_of_answer;
    for (int32_t id : r.tokens) letters_of_answer += letter(id);
    QCOMPARE(text, letters_of_answer);
    QCOMPARE(r.text, letters_of_answer);
    QCOMPARE(r.stats.new_tokens, int64_t{5});
    QCOMPARE(r.stats.prompt_tokens, static_cast<int64_t>(prompt().size()));
  }

  void stopToken() {
    // Stop at the 4th token of the known answer (its first occurrence): 4 tokens, the stop token included.
    Generator gen = fixture_generator("llama");
    const auto want = expected_continuation("llama");
    const int32_t stop = want[3];
    const auto first = std::find(want.begin(), want.end(), stop) - want.begin();
    GenerationConfig cfg = greedy(12);
    cfg.stop_token_ids = {stop};
    std::string streamed;
    auto r = gen.generate(
        prompt(), cfg, [&](const TokenEvent& e) { return streamed += e.text, true; }, letters());
    QCOMPARE(r.stop, StopReason::StopToken);
    QCOMPARE(r.tokens, std::vector<int32_t>(want.begin(), want.begin() + first + 1));
    // The stop token itself has no text.
    QCOMPARE(static_cast<int64_t>(r.text.size()), static_cast<int64_t>(first));
    QCOMPARE(streamed, r.text);
  }

  void endOfSequenceFromConfig() {
    // A copy of the fixture whose config.json names the 3rd answer token as EOS: generation ends there.
    const auto want = expected_continuation("llama");
    const int32_t eos = want[2];
    QTemporaryDir dir;
    const std::filesystem::path d = dir.path().toStdString();
    for (const auto& e : std::filesystem::directory_iterator(forja_test::fixture_dir("llama")))
      std::filesystem::copy(e.path(), d / e.path().filename());
    std::string cfg_text = read_text_file(d / "config.json");
    const std::string key = "\"eos_token_id\": 2";  // the fixture's config.json
    QVERIFY(cfg_text.find(key) != std::string::npos);
    cfg_text.replace(cfg_text.find(key), key.size(), "\"eos_token_id\": " + std::to_string(eos));
    write_file_atomic(d / "config.json", cfg_text);
    auto lm = load_causal_lm(d, {at::kFloat, at::kCPU});
    Generator gen(std::make_unique<Generator::Impl>(lm, EngineOptions{}, d.string()));
    GenerationConfig cfg = greedy(12);
    cfg.stop_at_eos = true;
    auto r = gen.generate(prompt(), cfg);
    QCOMPARE(r.stop, StopReason::EndOfSequence);
    QCOMPARE(r.tokens.back(), eos);
    QCOMPARE(r.tokens.size(),
             static_cast<size_t>(std::find(want.begin(), want.end(), eos) - want.begin() + 1));
    // min_new_tokens keeps EOS from being chosen until that many tokens are out; the token that replaces it
    // is the runner-up, whose log-prob is reported under the unmodified distribution.
    const size_t at = r.tokens.size() - 1;
    cfg.min_new_tokens = static_cast<int64_t>(at) + 2;
    auto held = gen.generate(prompt(), cfg);
    QVERIFY(held.tokens.size() >= at + 2);
    QVERIFY(std::find(held.tokens.begin(), held.tokens.begin() + static_cast<int64_t>(at) + 2, eos) ==
            held.tokens.begin() + static_cast<int64_t>(at) + 2);
    QVERIFY(held.tokens[at] != eos);
    QVERIFY(std::equal(r.tokens.begin(), r.tokens.begin() + static_cast<int64_t>(at), held.tokens.begin()));
    QVERIFY(held.logprobs[at] < r.logprobs[at]);
    cfg.min_new_tokens = -1;
    QVERIFY_THROWS_EXCEPTION(Error, gen.generate(prompt(), cfg));
  }

  void stopString() {
    // The stop string is the text of answer tokens 4..5; generation stops at the first token that completes
    // its first occurrence, the result text ends before it, and the stream never showed any of it.
    Generator gen = fixture_generator("llama");
    const auto want = expected_continuation("llama");
    std::string full;
    for (int32_t id : want) full += letter(id);
    const std::string stop = full.substr(4, 2);
    const size_t at = full.find(stop);
    GenerationConfig cfg = greedy(12);
    cfg.stop_strings = {stop, "this never occurs"};
    std::string streamed;
    auto r = gen.generate(
        prompt(), cfg, [&](const TokenEvent& e) { return streamed += e.text, true; }, letters());
    QCOMPARE(r.stop, StopReason::StopString);
    QCOMPARE(r.text, full.substr(0, at));
    QCOMPARE(streamed, r.text);
    QCOMPARE(r.tokens.size(), at + stop.size());  // one letter per token
    // Stop strings need text.
    QVERIFY_THROWS_EXCEPTION(Error, gen.generate(prompt(), cfg));
  }

  void stopStringHeldBack() {
    // Text that could begin a stop string is held back, then released when the next piece rules it out.
    infer::StopText stops({"END", "</s>"});
    std::string out;
    QVERIFY(!stops.add("ab", out));
    QCOMPARE(out, std::string("ab"));
    QVERIFY(!stops.add("cE", out));
    QCOMPARE(out, std::string("c"));  // "E" might start "END"
    QVERIFY(!stops.add("N", out));
    QCOMPARE(out, std::string(""));
    QVERIFY(!stops.add("x<", out));
    QCOMPARE(out, std::string("ENx"));  // ruled out; "<" might start "</s>"
    QVERIFY(stops.add("/s>tail", out));
    QCOMPARE(out, std::string(""));  // the stop string and what follows it are never shown
    infer::StopText open({"END"});
    QVERIFY(!open.add("xEN", out));
    QCOMPARE(open.flush(), std::string("EN"));  // end of stream: the held text is released
  }

  void cancel() {
    Generator gen = fixture_generator("llama");
    int seen = 0;
    auto r = gen.generate(prompt(), greedy(12), [&](const TokenEvent&) { return ++seen < 3; });
    QCOMPARE(r.stop, StopReason::Cancelled);
    QCOMPARE(r.tokens.size(), size_t{3});
    std::atomic<bool> flag{false};
    auto f = gen.generate(
        prompt(), greedy(12), [&](const TokenEvent& e) { return flag.store(e.index == 1), true; }, {}, &flag);
    QCOMPARE(f.stop, StopReason::Cancelled);
    QCOMPARE(f.tokens.size(), size_t{2});
  }

  void contextFull() {
    // 10 cache slots, a 6-token prompt: tokens 1-4 are fed into slots 6-9, the 5th cannot be.
    Generator gen = fixture_generator("llama", 10);
    auto r = gen.generate(prompt(), greedy(12));
    QCOMPARE(r.stop, StopReason::ContextFull);
    QCOMPARE(r.tokens.size(), size_t{5});
  }

  void contextBeyondTheModelIsRefused() {
    // The llama fixture has 128 positions; a context past them is an error before any cache is allocated.
    forja_test::expect_error([] { fixture_generator("llama", 100000000000); },
                             {"100000000000", "128", "max_position_embeddings"});
    QCOMPARE(fixture_generator("llama", 128).facts().max_context, int64_t(128));
  }

  void nonFiniteLogitsAreAnError() {
    // smollm with a NaN in its final norm: every logit is NaN, which generate and score must refuse.
    QTemporaryDir tmp;
    const fs::path dir = fs::path(tmp.path().toStdString()) / "nan";
    fs::create_directories(dir);
    const fs::path src = fs::path(FORJA_FIXTURES_DIR) / "models" / "smollm";
    fs::copy_file(src / "config.json", dir / "config.json");
    auto file = io::SafetensorsFile::open(src / "model.safetensors");
    std::vector<std::vector<float>> storage;
    std::vector<io::TensorToWrite> out;
    for (const auto& t : file.tensors()) {
      auto bytes = file.bytes(t);
      std::vector<float> v(bytes.size() / sizeof(float));
      std::memcpy(v.data(), bytes.data(), bytes.size());
      if (t.name == "model.norm.weight") v[0] = std::numeric_limits<float>::quiet_NaN();
      storage.push_back(std::move(v));
      out.push_back({t.name,
                     t.dtype,
                     t.shape,
                     {reinterpret_cast<const uint8_t*>(storage.back().data()), storage.back().size() * 4}});
    }
    io::write_safetensors(dir / "model.safetensors", out);
    auto lm = load_causal_lm(dir, {at::kFloat, at::kCPU});
    Generator gen(std::make_unique<Generator::Impl>(lm, EngineOptions{}, dir.string()));
    forja_test::expect_error([&] { gen.generate({1, 2, 3}, greedy(4)); }, {"non-finite", "NaN"});
    forja_test::expect_error([&] { gen.score({1, 2, 3}, {4, 5}, false); }, {"non-finite", "NaN"});
  }

  void compareMode() {
    Generator gen = fixture_generator("llama");
    QVERIFY_THROWS_EXCEPTION(Error, gen.compare(prompt(), greedy(8)));
    gen.load_adapter(forja_test::train_adapter_dir("llama"));
    int base_events = 0, adapted_events = 0;
    auto c = gen.compare(prompt(), greedy(8), [&](bool adapted, const TokenEvent&) {
      ++(adapted ? adapted_events : base_events);
      return true;
    });
    QCOMPARE(base_events, 8);
    QCOMPARE(adapted_events, 8);
    QVERIFY(gen.adapter_enabled());  // restored
    // The base answer is the fixture's greedy answer; the adapted one is what generation with the adapter
    // gives.
    const auto want = expected_continuation("llama");
    QCOMPARE(c.base.tokens, std::vector<int32_t>(want.begin(), want.begin() + 8));
    QCOMPARE(c.adapted.tokens, gen.generate(prompt(), greedy(8)).tokens);
    QVERIFY(c.adapted.tokens !=
            c.base.tokens);  // 20 steps of training on this random model changed its answer
    QCOMPARE(c.base_under_adapter.size(), size_t{8});
    QCOMPARE(c.adapted_under_base.size(), size_t{8});
    // Scores under each answer's own model equal the generation's log-probs; under the other model they
    // differ.
    auto own_base = gen.score(prompt(), c.base.tokens, false);
    auto own_adapted = gen.score(prompt(), c.adapted.tokens, true);
    double diff = 0;
    for (size_t i = 0; i < 8; ++i) {
      QVERIFY(std::abs(own_base[i] - c.base.logprobs[i]) < 1e-4);
      QVERIFY(std::abs(own_adapted[i] - c.adapted.logprobs[i]) < 1e-4);
      diff += std::abs(c.base_under_adapter[i] - c.base.logprobs[i]);
    }
    QVERIFY(diff > 1e-3);
  }
};

QTEST_GUILESS_MAIN(TestInferGenerate)
#include "test_infer_generate.moc"
