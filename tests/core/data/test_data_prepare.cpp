// From records to examples with a byte-level fake encoder (fake_encoder.h): masks, train_on_prompt,
// truncation and dropping, the eval split (fraction and file), encoder refusals (stop / skip), cancellation
// and the stats.
#include <QTemporaryDir>
#include <QtTest>

#include <fstream>
#include <set>

#include "fake_encoder.h"
#include "forja/dataset.h"
#include "forja/error.h"
#include "qtest_util.h"

using namespace forja;
namespace fs = std::filesystem;

namespace {

std::vector<uint8_t> mask_of(const std::string& pattern) {
  std::vector<uint8_t> m;
  for (char c : pattern) m.push_back(c == '1');
  return m;
}

std::vector<Record> numbered_chats(size_t n) {
  std::vector<Record> out;
  for (size_t i = 0; i < n; ++i)
    out.push_back(fake::chat("q" + std::to_string(i), "a" + std::to_string(i), i + 1));
  return out;
}

using forja_test::expect_error;

}  // namespace

class TestDataPrepare : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void masksFollowTheAssistant() {
    DatasetOptions o;
    PreparedDataset d = prepare_records({fake::chat("hi", "yo"), fake::text("ab")}, {}, o, fake::encode);
    QCOMPARE(d.train.size(), size_t(2));
    const Example& c = d.train[0];
    // "<user>hi\n<assistant>yo\n": 6 + 3 prompt bytes, 11 role bytes, then "yo\n" trained.
    QCOMPARE(c.ids.size(), size_t(23));
    QCOMPARE(c.train_mask, mask_of("00000000000000000000111"));
    QCOMPARE(c.ids[20], fake::byte_id('y'));
    QCOMPARE(c.trained_tokens(), int64_t(3));
    QCOMPARE(c.source, std::string("mem.jsonl:1"));
    QVERIFY(!c.truncated);
    // Text: BOS a b EOS all trained; the BOS is never a label, so 3 trained tokens.
    QCOMPARE(d.train[1].ids,
             (std::vector<TokenId>{fake::kBos, fake::byte_id('a'), fake::byte_id('b'), fake::kEos}));
    QCOMPARE(d.train[1].trained_tokens(), int64_t(3));
    QCOMPARE(d.stats.chat, size_t(1));
    QCOMPARE(d.stats.text, size_t(1));
    QCOMPARE(d.stats.train.trained_tokens, int64_t(6));
    QCOMPARE(d.stats.train.tokens, int64_t(27));

    o.train_on_prompt = true;
    PreparedDataset all = prepare_records({fake::chat("hi", "yo")}, {}, o, fake::encode);
    QCOMPARE(all.train[0].train_mask, std::vector<uint8_t>(23, 1));
    QCOMPARE(all.train[0].trained_tokens(), int64_t(22));  // every token but the first
  }

  void truncationAndDropping() {
    DatasetOptions o;
    o.max_length = 12;
    // 1: "<user>q\n<assistant>" is 19 tokens: cut at 12, nothing trained is left -> dropped.
    // 2: text "abcdefghijklmn" is 16 tokens -> cut to 12, still trained -> kept and counted as truncated.
    // 3: text "xy" is 4 tokens -> untouched.
    PreparedDataset d = prepare_records(
        {fake::chat("q", "a", 1), fake::text("abcdefghijklmn", 2), fake::text("xy", 3)}, {}, o, fake::encode);
    QCOMPARE(d.train.size(), size_t(2));
    QCOMPARE(d.stats.train.dropped_no_trained, size_t(1));
    QCOMPARE(d.stats.train.truncated, size_t(1));
    QVERIFY(d.train[0].truncated);
    QCOMPARE(d.train[0].ids.size(), size_t(12));
    QCOMPARE(d.train[0].train_mask.size(), size_t(12));
    QCOMPARE(d.train[0].original_length, int64_t(16));
    QCOMPARE(d.train[0].ids.back(), fake::byte_id('k'));  // BOS a..k: the end is what is cut
    QCOMPARE(d.stats.train.lengths, (std::vector<int64_t>{12, 4}));
    QCOMPARE(d.stats.train.min_length, int64_t(4));
    QCOMPARE(d.stats.train.max_length, int64_t(12));
    QCOMPARE(d.stats.train.mean_length, 8.0);

    // A huge record reaches the encoder cut to a bound that max_length sets, and is still truncated to it.
    size_t longest = 0;
    auto measuring = [&](const Record& r) {
      longest = std::max(longest, r.text.size());
      return fake::encode(r);
    };
    PreparedDataset big = prepare_records({fake::text(std::string(10'000'000, 'x'), 1)}, {}, o, measuring);
    QVERIFY2(longest < 100'000, std::to_string(longest).c_str());
    QCOMPARE(big.train.size(), size_t(1));
    QVERIFY(big.train[0].truncated);
    QCOMPARE(big.train[0].ids.size(), size_t(12));

    // A chat whose only trained token would be the first one trains nothing either.
    auto only_first = [](const Record&) { return EncodedExample{{5, 6, 7}, {1, 0, 0}}; };
    expect_error([&] { prepare_records({fake::text("z")}, {}, DatasetOptions{}, only_first); },
                 {"no training examples", "1 with nothing to train on"});
  }

  void evalSplitByFraction() {
    // 0.25 of 8 records = 2 held out.
    std::vector<size_t> a = eval_split_indices(8, 0.25, 7);
    QCOMPARE(a.size(), size_t(2));
    QCOMPARE(eval_split_indices(8, 0.25, 7), a);
    QVERIFY(std::is_sorted(a.begin(), a.end()) && a[0] != a[1] && a[1] < 8);
    // Some other seed picks a different pair (C(8,2) = 28 possible pairs; 20 seeds all agreeing would be a
    // bug).
    bool differs = false;
    for (uint64_t s = 8; s < 28 && !differs; ++s) differs = eval_split_indices(8, 0.25, s) != a;
    QVERIFY(differs);
    QCOMPARE(eval_split_indices(100, 0.001, 1).size(),
             size_t(1));                                        // a non-zero fraction holds out at least one
    QCOMPARE(eval_split_indices(2, 0.9, 1).size(), size_t(1));  // and always leaves one to train on
    QVERIFY(eval_split_indices(1, 0.5, 1).empty());
    QVERIFY(eval_split_indices(10, 0.0, 1).empty());

    DatasetOptions o;
    o.eval_fraction = 0.25;
    o.seed = 7;
    PreparedDataset d = prepare_records(numbered_chats(8), {}, o, fake::encode);
    QCOMPARE(d.train.size(), size_t(6));
    QCOMPARE(d.eval.size(), size_t(2));
    QCOMPARE(d.stats.eval.examples, size_t(2));
    // Records are numbered by line: the eval ones are exactly the split's indices (+1), the rest train, in
    // order.
    QCOMPARE(d.eval[0].source, "mem.jsonl:" + std::to_string(a[0] + 1));
    QCOMPARE(d.eval[1].source, "mem.jsonl:" + std::to_string(a[1] + 1));
    std::set<std::string> seen;
    for (const auto& e : d.train) seen.insert(e.source);
    for (const auto& e : d.eval) seen.insert(e.source);
    QCOMPARE(seen.size(), size_t(8));
    QVERIFY(std::is_sorted(d.train.begin(), d.train.end(), [](const Example& x, const Example& y) {
      return std::stoi(x.source.substr(10)) < std::stoi(y.source.substr(10));
    }));

    expect_error(
        [&] {
          DatasetOptions bad;
          bad.eval_fraction = 1.0;
          prepare_records(numbered_chats(2), {}, bad, fake::encode);
        },
        {"eval_fraction"});
  }

  void evalFileAndSkippedLines() {
    QTemporaryDir dir;
    fs::path train = fs::path(dir.path().toStdString()) / "train.jsonl";
    fs::path eval = fs::path(dir.path().toStdString()) / "eval.json";
    std::ofstream(train) << "{\"text\":\"one\"}\nnot json\n{\"text\":\"two\"}\n";
    std::ofstream(eval) << "[{\"instruction\":\"q\",\"output\":\"a\"}, {\"oops\":1}]";
    DatasetOptions o;
    o.train_files = {train};
    o.eval_file = eval;
    o.eval_fraction = 0.5;  // ignored: the eval file is the held-out set
    o.read.on_bad_record = OnBadRecord::Skip;
    PreparedDataset d = prepare_dataset(o, fake::encode);
    QCOMPARE(d.train.size(), size_t(2));
    QCOMPARE(d.eval.size(), size_t(1));
    QCOMPARE(d.stats.records_read, size_t(3));
    QCOMPARE(d.stats.records_skipped, size_t(2));
    QCOMPARE(d.stats.problems.size(), size_t(2));
    QCOMPARE(d.stats.problems[0].where(), train.string() + ":2");
    QCOMPARE(d.stats.problems[1].file, eval.string());
    QCOMPARE(d.stats.alpaca, size_t(1));
    QCOMPARE(d.stats.text, size_t(2));

    o.read.on_bad_record = OnBadRecord::Stop;
    expect_error([&] { prepare_dataset(o, fake::encode); }, {train.string() + ":2: not valid JSON"});
  }

  void encoderRefusals() {
    std::vector<Record> records = {fake::chat("a", "b", 1), fake::chat("REFUSE", "x", 2),
                                   fake::chat("c", "d", 3)};
    DatasetOptions o;
    try {
      prepare_records(records, {}, o, fake::encode);
      QFAIL("expected an error");
    } catch (const Error& e) {
      QCOMPARE(e.message(), std::string("mem.jsonl:2: template error: refused"));
      QCOMPARE(e.hint(), std::string("template hint"));
    }
    o.read.on_bad_record = OnBadRecord::Skip;
    PreparedDataset d = prepare_records(records, {}, o, fake::encode);
    QCOMPARE(d.train.size(), size_t(2));
    QCOMPARE(d.stats.records_skipped, size_t(1));
    QCOMPARE(d.stats.problems.size(), size_t(1));
    QCOMPARE(d.stats.problems[0].line, size_t(2));

    auto mismatched = [](const Record&) { return EncodedExample{{1, 2}, {1}}; };
    expect_error([&] { prepare_records(records, {}, o, mismatched); }, {"mem.jsonl:1", "mask"});
  }

  void progressAndCancel() {
    std::vector<std::pair<size_t, size_t>> calls;
    DatasetOptions o;
    o.eval_fraction = 0.25;
    prepare_records(numbered_chats(4), {}, o, fake::encode, [&](size_t done, size_t total) {
      calls.emplace_back(done, total);
      return true;
    });
    QCOMPARE(calls.size(), size_t(4));  // train and eval records together
    QCOMPARE(calls.back(), (std::pair<size_t, size_t>{4, 4}));
    expect_error(
        [&] {
          prepare_records(numbered_chats(4), {}, o, fake::encode,
                          [](size_t done, size_t) { return done < 2; });
        },
        {"cancelled"});
  }

  void histogram() {
    // Lengths 1..10 in 3 bins over [1, 10]: width 3 -> [1,4) [4,7) [7,10], the top edge in the last bin.
    std::vector<int64_t> lengths{1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    Histogram h = length_histogram(lengths, 3);
    QCOMPARE(h.edges, (std::vector<double>{1, 4, 7, 10}));
    QCOMPARE(h.counts, (std::vector<size_t>{3, 3, 4}));
    Histogram same = length_histogram({5, 5, 5}, 4);
    QCOMPARE(same.counts, (std::vector<size_t>{3, 0, 0, 0}));
    QVERIFY(length_histogram({}, 4).counts.empty());
  }
};

QTEST_GUILESS_MAIN(TestDataPrepare)
#include "test_data_prepare.moc"
