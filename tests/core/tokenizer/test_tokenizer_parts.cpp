// Unit tests of the tokenizer.json pipeline's parts on hand-made files: BPE merges in both forms and by rank,
// ignore_merges, unknown and byte-fallback tokens, HF's split behaviours, added tokens with lstrip/rstrip,
// normalizers, Metaspace, TemplateProcessing, decoders, streaming decode, and the errors for broken files.
// Expected values follow the rules in the HF tokenizers documentation, worked by hand for these tiny
// vocabularies.
#include <QTemporaryDir>
#include <QtTest>

#include <fstream>
#include <nlohmann/json.hpp>

#include "added_vocab.h"
#include "fixture_util.h"
#include "forja/chat_template.h"
#include "forja/error.h"
#include "forja/tokenizer.h"
#include "pipeline.h"
#include "unicode_norm.h"
#include "utf8.h"

using forja::TokenId;
using json = nlohmann::json;
using Ids = std::vector<TokenId>;

namespace {

// vocab: a b c ab abc bc <unk> " " and the three bytes of "€" as byte-fallback tokens.
json toy(json merges) {
  json j;
  j["version"] = "1.0";
  j["normalizer"] = nullptr;
  j["pre_tokenizer"] = nullptr;
  j["post_processor"] = nullptr;
  j["decoder"] = nullptr;
  j["added_tokens"] = json::array();
  j["model"] = {{"type", "BPE"},
                {"unk_token", "<unk>"},
                {"vocab",
                 {{"a", 0},
                  {"b", 1},
                  {"c", 2},
                  {"ab", 3},
                  {"abc", 4},
                  {"bc", 5},
                  {"<unk>", 6},
                  {" ", 7},
                  {"<0xE2>", 8},
                  {"<0x82>", 9},
                  {"<0xAC>", 10}}},
                {"merges", merges}};
  return j;
}

class Files {
 public:
  std::string write(const std::string& name, const std::string& text) {
    const std::string path = dir_.path().toStdString() + "/" + name;
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }
  forja::Tokenizer load(const json& j) {
    return forja::Tokenizer::from_tokenizer_json(write("tokenizer.json", j.dump()));
  }

 private:
  QTemporaryDir dir_;
};

std::string error_of(Files& f, const std::string& text) {
  try {
    forja::Tokenizer::from_tokenizer_json(f.write("broken.json", text));
  } catch (const forja::Error& e) {
    return e.message();
  }
  return {};
}

std::vector<std::string> texts(const std::vector<forja::Piece>& pieces) {
  std::vector<std::string> out;
  for (const auto& p : pieces) out.push_back(p.text);
  return out;
}

}  // namespace

class TestTokenizerParts : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void merges_in_string_and_pair_form_agree() {
    Files f;
    const auto str = f.load(toy(json::array({"a b", "ab c"})));
    const auto pair = f.load(toy(json::array({json::array({"a", "b"}), json::array({"ab", "c"})})));
    // a b c a b -> (a,b) rank 0 twice -> ab c ab -> (ab,c) rank 1 -> abc ab
    QCOMPARE(str.encode("abcab"), (Ids{4, 3}));
    QCOMPARE(pair.encode("abcab"), (Ids{4, 3}));
  }

  void lowest_rank_merges_first() {
    Files f;
    // (b,c) has rank 0, so "abc" becomes a + bc, and (a,bc) is no merge.
    QCOMPARE(f.load(toy(json::array({"b c", "a b"}))).encode("abc"), (Ids{0, 5}));
  }

  void ignore_merges_takes_whole_words_from_the_vocab() {
    Files f;
    json j = toy(json::array({"a b"}));
    QCOMPARE(f.load(j).encode("bc"), (Ids{1, 2}));  // no (b,c) merge
    j["model"]["ignore_merges"] = true;
    QCOMPARE(f.load(j).encode("bc"), (Ids{5}));  // "bc" is in the vocab as a whole
  }

  void unknown_and_byte_fallback() {
    Files f;
    json j = toy(json::array({"a b"}));
    QCOMPARE(f.load(j).encode("abd"), (Ids{3, 6}));
    QCOMPARE(f.load(j).encode("dd"), (Ids{6, 6}));
    j["model"]["fuse_unk"] = true;
    QCOMPARE(f.load(j).encode("dd"), (Ids{6}));
    j["model"]["byte_fallback"] = true;
    // "€" is E2 82 AC: not in the vocab as a character, so its bytes.
    const auto tok = f.load(j);
    QCOMPARE(tok.encode("a\xE2\x82\xAC"), (Ids{0, 8, 9, 10}));
    QCOMPARE(tok.encode("d"), (Ids{6}));  // no <0x64> token: unk
  }

  void family_template_from_special_tokens() {
    // A folder without a chat template gets the built-in one of the family its special tokens name.
    Files f;
    auto with = [&](std::initializer_list<const char*> pieces) {
      json j = toy(json::array({"a b"}));
      int id = 11;
      for (const char* p : pieces)
        j["added_tokens"].push_back({{"id", id++},
                                     {"content", p},
                                     {"special", true},
                                     {"lstrip", false},
                                     {"rstrip", false},
                                     {"normalized", false},
                                     {"single_word", false}});
      return forja::ChatTemplate::for_tokenizer(f.load(j)).origin();
    };
    QCOMPARE(with({"<start_of_turn>", "<end_of_turn>"}), std::string("built-in gemma"));
    QCOMPARE(with({"<|user|>", "<|assistant|>", "<|end|>"}), std::string("built-in phi3"));
    QCOMPARE(with({"<|user|>", "<|assistant|>"}), std::string("built-in zephyr"));
    QCOMPARE(with({"<|im_start|>", "<|im_end|>"}), std::string("built-in chatml"));
    // A ChatML vocabulary with reasoning markers is Qwen3's.
    QCOMPARE(with({"<|im_start|>", "<|im_end|>", "<think>", "</think>"}), std::string("built-in qwen3"));
  }

  void added_tokens_with_lstrip_and_rstrip() {
    Files f;
    json j = toy(json::array({"a b"}));
    j["added_tokens"] = {{{"id", 11},
                          {"content", "<x>"},
                          {"special", true},
                          {"lstrip", true},
                          {"rstrip", true},
                          {"normalized", false},
                          {"single_word", false}},
                         {{"id", 12},
                          {"content", "<y>"},
                          {"special", false},
                          {"lstrip", false},
                          {"rstrip", false},
                          {"normalized", false},
                          {"single_word", false}}};
    const auto tok = f.load(j);
    QCOMPARE(tok.encode("a <x> b"), (Ids{0, 11, 1}));        // the spaces around <x> go with it
    QCOMPARE(tok.encode("a <y> b"), (Ids{0, 7, 12, 7, 1}));  // <y> keeps them
    QCOMPARE(tok.encode("ab<x"), (Ids{3, 6, 6}));  // a partial token is plain text ("<" and "x" are unknown)
    // Without a decoder HF joins the tokens with spaces.
    QCOMPARE(tok.decode(Ids{0, 11, 1}), std::string("a <x> b"));
    QCOMPARE(tok.decode(Ids{0, 11, 1}, true), std::string("a b"));  // <x> is special, <y> is not
    QCOMPARE(tok.decode(Ids{0, 12, 1}, true), std::string("a <y> b"));
    QVERIFY(tok.is_special(11));
    QVERIFY(!tok.is_special(12));
    QCOMPARE(tok.vocab_size(), size_t(13));
  }

  void split_behaviours() {
    // The example of HF's SplitDelimiterBehavior documentation: "the-final--countdown" split on "-".
    forja::Piece p;
    p.text = "the-final--countdown";
    p.end = p.text.size();
    forja::Regex dash("-", true, "test");
    std::vector<std::pair<size_t, size_t>> m;
    dash.find_all(p.text, m);
    using V = std::vector<std::string>;
    auto run = [&](forja::SplitBehavior b) {
      std::vector<forja::Piece> out;
      forja::split_piece(p, m, b, false, out);
      return texts(out);
    };
    QCOMPARE(run(forja::SplitBehavior::Removed), (V{"the", "final", "countdown"}));
    QCOMPARE(run(forja::SplitBehavior::Isolated), (V{"the", "-", "final", "-", "-", "countdown"}));
    QCOMPARE(run(forja::SplitBehavior::MergedWithPrevious), (V{"the-", "final-", "-", "countdown"}));
    QCOMPARE(run(forja::SplitBehavior::MergedWithNext), (V{"the", "-final", "-", "-countdown"}));
    QCOMPARE(run(forja::SplitBehavior::Contiguous), (V{"the", "-", "final", "--", "countdown"}));
  }

  void llama3_split_regex() {
    // Llama 3's pattern (tokenizer.json of Meta-Llama-3): contractions, letters with one leading non-letter,
    // digits in threes, whitespace that leaves the last space to the next word.
    forja::Regex re(
        R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
        false, "test");
    const std::string s = "I'M   fine\n\n1234567 ação";
    std::vector<std::pair<size_t, size_t>> m;
    re.find_all(s, m);
    std::vector<std::string> got;
    for (auto [b, e] : m) got.push_back(s.substr(b, e - b));
    QCOMPARE(got, (std::vector<std::string>{"I", "'M", "  ", " fine", "\n\n", "123", "456", "7", " ação"}));
  }

  // The built-in matchers must split exactly as PCRE2 does, on every corpus string and on hard cases.
  void builtin_matchers_agree_with_pcre2() {
    if (!forja::Regex::have_pcre2()) QSKIP("this build has no PCRE2 to compare with");
    const auto corpus = forja::test::read_fixture_json(forja::test::tokenizer_fixtures() + "/corpus.json");
    std::vector<std::string> texts = corpus.get<std::vector<std::string>>();
    for (const char* hard : {"a  \n\n  b", " \t\r\n x", "'S 'LL 'Re \xC5\xBF", "x'ſ", "  ", "a ", "\r\n\r\n",
                             "12345678", "\xC2\xA0\xC2\xA0x", "!!\n\n", " !!!\r\n", "\u3000\u3000a"})
      texts.emplace_back(hard);
    const char* patterns[] = {
        R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)",
        R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
        R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
        R"(\p{N})",
        R"(\p{N}+)",
        R"(\s+)"};
    for (const char* pattern : patterns) {
      forja::Regex re(pattern, false, "test");
      QVERIFY2(re.builtin() != forja::Regex::Builtin::None, pattern);
      for (const auto& t : texts) {
        std::vector<std::pair<size_t, size_t>> ours, theirs;
        re.find_all(t, ours);
        re.find_all_pcre2(t, theirs);
        QVERIFY2(ours == theirs, (std::string(pattern) + " on \"" + t + "\"").c_str());
      }
    }
  }

  void metaspace_and_template_processing() {
    Files f;
    json j = toy(json::array());
    j["model"]["ignore_merges"] = true;
    j["model"]["vocab"]
     ["\xE2\x96\x81"
      "ab"] = 11;
    j["model"]["vocab"]
     ["\xE2\x96\x81"
      "c"] = 12;
    j["model"]["vocab"]["<s>"] = 13;
    j["pre_tokenizer"] = {{"type", "Metaspace"},
                          {"replacement", "\xE2\x96\x81"},
                          {"prepend_scheme", "always"},
                          {"split", true}};
    j["post_processor"] = {
        {"type", "TemplateProcessing"},
        {"single",
         {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
          {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
        {"pair", json::array()},
        {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {13}}, {"tokens", {"<s>"}}}}}}};
    j["decoder"] = {{"type", "Metaspace"},
                    {"replacement", "\xE2\x96\x81"},
                    {"prepend_scheme", "always"},
                    {"split", true}};
    const auto tok = f.load(j);
    // "ab c" -> "▁ab▁c" -> split before each ▁ -> ▁ab, ▁c; the post-processor puts <s> first.
    QCOMPARE(tok.encode("ab c"), (Ids{13, 11, 12}));
    QCOMPARE(tok.encode("ab c", false), (Ids{11, 12}));
    QCOMPARE(tok.decode(Ids{11, 12}), std::string("ab c"));  // the first ▁ is not a space
    j["pre_tokenizer"]["prepend_scheme"] = "never";
    QCOMPARE(f.load(j).encode("ab c", false), (Ids{3, 12}));  // "ab" without ▁ is the plain vocab entry
  }

  void normalizers() {
    using forja::unicode::Form;
    QCOMPARE(forja::unicode::normalize("e\xCC\x81", Form::NFC), std::string("\xC3\xA9"));  // e + U+0301 -> é
    QCOMPARE(forja::unicode::normalize("\xC3\xA9", Form::NFD), std::string("e\xCC\x81"));
    QCOMPARE(forja::unicode::normalize("\xEF\xAC\x81", Form::NFKC), std::string("fi"));  // U+FB01 ligature
    QCOMPARE(forja::unicode::normalize("\xEF\xAC\x81", Form::NFC), std::string("\xEF\xAC\x81"));
    // U+1100 U+1161 (Hangul jamo) compose to U+AC00 가.
    QCOMPARE(forja::unicode::normalize("\xE1\x84\x80\xE1\x85\xA1", Form::NFC), std::string("\xEA\xB0\x80"));
    Files f;
    json j = toy(json::array({"a b"}));
    j["normalizer"] = {{"type", "Sequence"},
                       {"normalizers",
                        {{{"type", "Lowercase"}},
                         {{"type", "Replace"}, {"pattern", {{"String", "c"}}}, {"content", "ab"}}}}};
    QCOMPARE(f.load(j).encode("AC"), (Ids{0, 3}));  // "ac" -> "aab"
    j["normalizer"] = {{"type", "Prepend"}, {"prepend", "a"}};
    QCOMPARE(f.load(j).encode("b"), (Ids{3}));
  }

  void decoders() {
    std::vector<std::string> t = {"<0xE2>", "<0x82>", "<0xAC>", "x"};
    forja::ByteFallbackDecoder().apply(t, false);
    QCOMPARE(t, (std::vector<std::string>{"\xE2\x82\xAC", "x"}));
    t = {"<0xE2>", "<0x82>", "y"};
    forja::ByteFallbackDecoder().apply(t, false);
    // An incomplete sequence becomes one U+FFFD per byte token, as HF's ByteFallback does.
    QCOMPARE(t, (std::vector<std::string>{"\xEF\xBF\xBD\xEF\xBF\xBD", "y"}));
    t = {" a", "b "};
    forja::StripDecoder strip;
    strip.start = 1;
    strip.apply(t, false);
    QCOMPARE(t, (std::vector<std::string>{"a", "b "}));
    t = {
        "\xE2\x96\x81"
        "a",
        "\xE2\x96\x81"
        "b"};
    forja::ReplaceDecoder rep;
    rep.from = "\xE2\x96\x81";
    rep.to = " ";
    rep.apply(t, false);
    QCOMPARE(t, (std::vector<std::string>{" a", " b"}));
    QCOMPARE(forja::byte_level_to_bytes("\xC4\xA0"
                                        "a"),
             std::string(" a"));  // Ġ is the byte-level space
    QCOMPARE(forja::utf8::lossy("a\xE2\x82"), std::string("a\xEF\xBF\xBD"));
  }

  void streaming_never_splits_a_character() {
    Files f;
    json j = toy(json::array({"a b"}));
    j["model"]["byte_fallback"] = true;
    j["decoder"] = {{"type", "Sequence"}, {"decoders", {{{"type", "ByteFallback"}}, {{"type", "Fuse"}}}}};
    const auto tok = f.load(j);
    const Ids ids = tok.encode(
        "a\xE2\x82\xAC"
        "b");
    QCOMPARE(ids, (Ids{0, 8, 9, 10, 1}));
    forja::StreamingDecoder s(tok);
    QCOMPARE(s.push(ids[0]), std::string("a"));
    QCOMPARE(s.push(ids[1]), std::string());  // E2: held back
    QCOMPARE(s.push(ids[2]), std::string());  // E2 82: still incomplete
    QCOMPARE(s.push(ids[3]), std::string("\xE2\x82\xAC"));
    QCOMPARE(s.push(ids[4]), std::string("b"));
    QCOMPARE(s.finish(), std::string());
    forja::StreamingDecoder cut(tok);
    cut.push(ids[0]);
    cut.push(ids[1]);
    QCOMPARE(cut.finish(), std::string("\xEF\xBF\xBD"));  // the stream ended inside a character
  }

  void broken_files_name_the_file_and_the_problem() {
    Files f;
    const std::string not_json = error_of(f, "{ not json");
    QVERIFY2(not_json.find("broken.json") != std::string::npos &&
                 not_json.find("not valid JSON") != std::string::npos,
             not_json.c_str());
    json j = toy(json::array({"a b"}));
    j["model"].erase("merges");
    const std::string no_merges = error_of(f, j.dump());
    QVERIFY2(
        no_merges.find("broken.json") != std::string::npos && no_merges.find("merges") != std::string::npos,
        no_merges.c_str());
    j = toy(json::array({"a q"}));
    const std::string bad_merge = error_of(f, j.dump());
    QVERIFY2(bad_merge.find("merge #0") != std::string::npos, bad_merge.c_str());
    j = toy(json::array({"a b"}));
    j["pre_tokenizer"] = {{"type", "BertPreTokenizer"}};
    const std::string unknown = error_of(f, j.dump());
    QVERIFY2(unknown.find("broken.json") != std::string::npos &&
                 unknown.find("\"BertPreTokenizer\"") != std::string::npos,
             unknown.c_str());
    j = toy(json::array({"a b"}));
    j["normalizer"] = {{"type", "Precompiled"}};
    QVERIFY(error_of(f, j.dump()).find("\"Precompiled\"") != std::string::npos);
    j = toy(json::array({"a b"}));
    j["decoder"] = {{"type", "WordPiece"}};
    QVERIFY(error_of(f, j.dump()).find("\"WordPiece\"") != std::string::npos);
    j = toy(json::array({"a b"}));
    j["model"]["type"] = "Unigram";
    QVERIFY(error_of(f, j.dump()).find("\"Unigram\"") != std::string::npos);
    QVERIFY_THROWS_EXCEPTION(forja::Error, forja::Tokenizer::load("/nonexistent/model"));
  }
};

QTEST_GUILESS_MAIN(TestTokenizerParts)
#include "test_tokenizer_parts.moc"
