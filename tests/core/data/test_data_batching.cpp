// Shuffling, batching and packing: the epoch order is a fair, seed-determined permutation; labels are shifted
// inside each example and never cross into the next one or into padding; packed rows keep segments and
// positions straight; and a cursor saved at any point resumes with exactly the batches an uninterrupted
// stream gives.
#include <QtTest>

#include <map>
#include <set>

#include "forja/dataset.h"
#include "forja/error.h"

using namespace forja;

namespace {

constexpr TokenId kPad = 0;

// Example i has length `len`; its tokens are 1000 * (i + 1) + t, so every token says which example and
// position it came from. The mask trains every token from `prompt` on.
Example make_example(int i, int len, int prompt) {
  Example e;
  for (int t = 0; t < len; ++t) {
    e.ids.push_back(1000 * (i + 1) + t);
    e.train_mask.push_back(t >= prompt ? 1 : 0);
  }
  e.source = "mem:" + std::to_string(i + 1);
  return e;
}

// Lengths 2..13 and prompt lengths 0..3 in a fixed pseudo-random pattern (a linear congruential sequence, so
// the test data needs no RNG of its own).
std::vector<Example> mixed_examples(int n) {
  std::vector<Example> out;
  uint32_t x = 12345;
  for (int i = 0; i < n; ++i) {
    x = x * 1103515245u + 12345u;
    int len = 2 + static_cast<int>((x >> 16) % 12);
    int prompt = static_cast<int>((x >> 8) % 4);
    out.push_back(make_example(i, len, std::min(prompt, len - 1)));
  }
  return out;
}

// Inside check_batch: record the failure and stop checking this batch.
#define CHECK_BATCH(cond, what)               \
  do {                                        \
    if (!(cond)) {                            \
      QTest::qFail(what, __FILE__, __LINE__); \
      return {};                              \
    }                                         \
  } while (false)

int example_of(TokenId id) {
  return id / 1000 - 1;
}

bool same_batch(const Batch& a, const Batch& b) {
  return a.rows == b.rows && a.seq_len == b.seq_len && a.input_ids == b.input_ids && a.labels == b.labels &&
         a.position_ids == b.position_ids && a.segment_ids == b.segment_ids &&
         a.loss_tokens == b.loss_tokens && a.packed == b.packed;
}

// Checks every invariant of a batch against the examples it was built from; returns the examples it holds, in
// order.
std::vector<int> check_batch(const Batch& b, const std::vector<Example>& examples) {
  std::vector<int> seen;
  int64_t loss = 0;
  const size_t L = static_cast<size_t>(b.seq_len);
  const size_t cells = static_cast<size_t>(b.rows) * L;
  CHECK_BATCH(b.input_ids.size() == cells && b.labels.size() == cells && b.position_ids.size() == cells &&
                  b.segment_ids.size() == cells,
              "arrays are not rows x seq_len");
  for (size_t r = 0; r < static_cast<size_t>(b.rows); ++r) {
    int32_t segment = 0;
    int current = -1, last_pos = -1;
    // A segment must hold its whole example: it ends on the example's last token.
    auto segment_complete = [&] {
      return current < 0 ||
             static_cast<size_t>(last_pos) + 1 == examples[static_cast<size_t>(current)].ids.size();
    };
    bool in_padding = false;
    for (size_t t = 0; t < L; ++t) {
      const size_t k = r * L + t;
      if (b.labels[k] != kIgnoreIndex) ++loss;
      if (b.segment_ids[k] == 0) {
        if (!in_padding) CHECK_BATCH(segment_complete(), "an example is cut short");
        in_padding = true;
        CHECK_BATCH(b.input_ids[k] == kPad && b.labels[k] == kIgnoreIndex && b.position_ids[k] == 0,
                    "padding carries data");
        continue;
      }
      CHECK_BATCH(!in_padding, "a segment after padding");
      const TokenId id = b.input_ids[k];
      const int ex = example_of(id);
      const int pos = id % 1000;
      if (b.segment_ids[k] != segment) {
        // A new segment: numbered one up, starting at its example's first token with position 0.
        CHECK_BATCH(segment_complete(), "an example is cut short");
        CHECK_BATCH(b.segment_ids[k] == segment + 1 && pos == 0, "bad segment start");
        segment = b.segment_ids[k];
        current = ex;
        last_pos = -1;
        seen.push_back(ex);
      }
      CHECK_BATCH(ex == current && pos == last_pos + 1, "tokens of a segment are not consecutive");
      last_pos = pos;
      CHECK_BATCH(b.position_ids[k] == pos, "position id does not restart per example");
      const Example& e = examples[static_cast<size_t>(ex)];
      const size_t p = static_cast<size_t>(pos);
      const int32_t want = p + 1 < e.ids.size() && e.train_mask[p + 1] ? e.ids[p + 1] : kIgnoreIndex;
      CHECK_BATCH(b.labels[k] == want, "label is not the same example's next trained token");
    }
    if (!in_padding) CHECK_BATCH(segment_complete(), "an example is cut short");
  }
  CHECK_BATCH(loss == b.loss_tokens, "loss_tokens does not count the labels");
  return seen;
}

}  // namespace

class TestDataBatching : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void epochOrderIsASeededPermutation() {
    std::vector<uint32_t> a = epoch_order(50, 42, 0);
    std::vector<uint32_t> sorted = a;
    std::sort(sorted.begin(), sorted.end());
    for (uint32_t i = 0; i < 50; ++i) QCOMPARE(sorted[i], i);
    QCOMPARE(epoch_order(50, 42, 0), a);
    QVERIFY(epoch_order(50, 42, 1) != a);
    QVERIFY(epoch_order(50, 43, 0) != a);
    QVERIFY(epoch_order(0, 1, 0).empty());
    QCOMPARE(epoch_order(1, 1, 0), std::vector<uint32_t>{0});

    // Fairness: over 4000 epochs each of 4 items comes first about 1000 times. The standard deviation of a
    // count is sqrt(4000 * 1/4 * 3/4) ~ 27, so +-150 is more than 5 sigma; a biased draw (e.g. modulo without
    // rejection on a small range) or an off-by-one in Fisher-Yates (an item never first) lands outside.
    std::map<uint32_t, int> first;
    for (int64_t e = 0; e < 4000; ++e) ++first[epoch_order(4, 7, e)[0]];
    QCOMPARE(first.size(), size_t(4));
    for (auto [item, count] : first) QVERIFY2(std::abs(count - 1000) < 150, std::to_string(count).c_str());
  }

  void paddedBatchLayout() {
    // Example 0: 4 tokens, prompt 2 -> labels at t=1 (token 2) and t=2 (token 3); example 1: 2 tokens, all
    // trained
    // -> one label (its first token is never a target).
    std::vector<Example> ex{make_example(0, 4, 2), make_example(1, 2, 0)};
    Batch b = build_batch({{&ex[0]}, {&ex[1]}}, 6, kPad);
    QCOMPARE(b.rows, int64_t(2));
    QCOMPARE(b.seq_len, int64_t(6));
    QCOMPARE(b.input_ids, (std::vector<TokenId>{1000, 1001, 1002, 1003, 0, 0, 2000, 2001, 0, 0, 0, 0}));
    QCOMPARE(b.labels,
             (std::vector<int32_t>{-100, 1002, 1003, -100, -100, -100, 2001, -100, -100, -100, -100, -100}));
    QCOMPARE(b.position_ids, (std::vector<int32_t>{0, 1, 2, 3, 0, 0, 0, 1, 0, 0, 0, 0}));
    QCOMPARE(b.segment_ids, (std::vector<int32_t>{1, 1, 1, 1, 0, 0, 1, 1, 0, 0, 0, 0}));
    QCOMPARE(b.loss_tokens, int64_t(3));
    QVERIFY(!b.packed);

    // Packed into one row: the second example's first token is not the label of the first example's last
    // token.
    Batch p = build_batch({{&ex[0], &ex[1]}}, 7, kPad);
    QCOMPARE(p.labels, (std::vector<int32_t>{-100, 1002, 1003, -100, 2001, -100, -100}));
    QCOMPARE(p.position_ids, (std::vector<int32_t>{0, 1, 2, 3, 0, 1, 0}));
    QCOMPARE(p.segment_ids, (std::vector<int32_t>{1, 1, 1, 1, 2, 2, 0}));
    QVERIFY(p.packed);
    QVERIFY_THROWS_EXCEPTION(Error, build_batch({{&ex[0], &ex[1]}}, 5, kPad));
  }

  void paddedEpochs() {
    std::vector<Example> ex = mixed_examples(7);
    BatchOptions o{.rows = 3, .seq_len = 16, .packing = false, .shuffle = true, .seed = 5, .pad_id = kPad};
    o.full_rows = false;
    BatchStream s(ex, o);
    QCOMPARE(s.batches_in_epoch(0), int64_t(3));  // ceil(7 / 3)
    for (int epoch = 0; epoch < 3; ++epoch) {
      std::multiset<int> seen;
      std::vector<int64_t> rows;
      for (int i = 0; i < 3; ++i) {
        Batch b = s.next();
        rows.push_back(b.rows);
        for (int e : check_batch(b, ex)) seen.insert(e);
      }
      QCOMPARE(rows, (std::vector<int64_t>{3, 3, 1}));  // the epoch's last batch is short, never mixed
      QCOMPARE(seen.size(), size_t(7));
      QCOMPARE(std::set<int>(seen.begin(), seen.end()).size(), size_t(7));  // each example once per epoch
      QCOMPARE(s.cursor().epoch, int64_t(epoch + 1));
      QCOMPARE(s.cursor().position, int64_t(0));
    }
    // With full rows (the default) the short batch is topped up with empty rows: same examples, same labels.
    o.full_rows = true;
    BatchStream full(ex, o);
    s.seek({0, 0, 5, 7});
    for (int i = 0; i < 3; ++i) {
      Batch a = s.next(), b = full.next();
      QCOMPARE(b.rows, int64_t(3));
      QCOMPARE(check_batch(b, ex), check_batch(a, ex));
      QCOMPARE(b.loss_tokens, a.loss_tokens);
      const size_t cells = static_cast<size_t>(a.rows * a.seq_len);
      QCOMPARE(std::vector<int32_t>(b.labels.begin(), b.labels.begin() + static_cast<std::ptrdiff_t>(cells)),
               a.labels);
      QVERIFY(std::all_of(b.segment_ids.begin() + static_cast<std::ptrdiff_t>(cells), b.segment_ids.end(),
                          [](int32_t v) { return v == 0; }));
    }
  }

  void packingInvariants() {
    std::vector<Example> ex = mixed_examples(60);
    const BatchOptions o{
        .rows = 2, .seq_len = 20, .packing = true, .shuffle = true, .seed = 9, .pad_id = kPad};
    BatchStream s(ex, o);
    int64_t trained = 0;
    for (const Example& e : ex) trained += e.trained_tokens();
    for (int64_t epoch = 0; epoch < 2; ++epoch) {
      const int64_t batches = s.batches_in_epoch(epoch);
      std::vector<int> order;
      int64_t loss = 0;
      bool any_packed = false;
      for (int64_t i = 0; i < batches; ++i) {
        QCOMPARE(s.cursor().epoch, epoch);
        Batch b = s.next();
        QVERIFY(b.rows >= 1 && b.rows <= 2);
        for (int e : check_batch(b, ex)) order.push_back(e);
        loss += b.loss_tokens;
        any_packed = any_packed || b.packed;
      }
      QCOMPARE(s.cursor().epoch, epoch + 1);
      // Greedy in shuffled order: the examples come out exactly in the epoch's order, each once.
      std::vector<uint32_t> want = epoch_order(ex.size(), o.seed, epoch);
      QCOMPARE(order, std::vector<int>(want.begin(), want.end()));
      QCOMPARE(loss, trained);
      QVERIFY(any_packed);
      // Lengths average 7.5 (2..13), so rows of 20 hold 2-3 examples: far fewer batches than 30 padded ones.
      QVERIFY2(batches < 20, std::to_string(batches).c_str());
    }
  }

  void resumeGivesTheSameBatches() {
    std::vector<Example> ex = mixed_examples(25);
    for (bool packing : {false, true}) {
      const BatchOptions o{
          .rows = 4, .seq_len = 24, .packing = packing, .shuffle = true, .seed = 3, .pad_id = kPad};
      BatchStream reference(ex, o);
      std::vector<Batch> expected;
      for (int i = 0; i < 40; ++i) expected.push_back(reference.next());  // several epochs
      // Stop after k batches (including at and across epoch ends), save, and continue in a new stream.
      for (int k : {0, 1, 6, 7, 8, 13, 29}) {
        BatchStream first(ex, o);
        for (int i = 0; i < k; ++i) first.next();
        const std::string saved = first.cursor().to_json();
        BatchStream resumed(ex, o);
        resumed.seek(DataCursor::from_json(saved));
        QCOMPARE(resumed.cursor(), first.cursor());
        for (int i = k; i < 40; ++i)
          QVERIFY2(same_batch(resumed.next(), expected[static_cast<size_t>(i)]),
                   ("packing " + std::to_string(packing) + ", resumed after " + std::to_string(k) +
                    ", batch " + std::to_string(i))
                       .c_str());
      }
    }
  }

  void cursorJson() {
    DataCursor c{3, 17, 0xFFFFFFFFFFFFFFFFull, 120};  // the largest seed must survive the round trip
    QCOMPARE(DataCursor::from_json(c.to_json()), c);
    for (const char* bad : {"", "[1]", "{\"epoch\":1,\"position\":2,\"seed\":3}",
                            "{\"epoch\":-1,\"position\":2,\"seed\":3,\"examples\":4}",
                            "{\"epoch\":1.5,\"position\":2,\"seed\":3,\"examples\":4}"}) {
      QVERIFY_THROWS_EXCEPTION(Error, DataCursor::from_json(bad));
    }

    std::vector<Example> ex = mixed_examples(10);
    BatchStream s(ex,
                  {.rows = 2, .seq_len = 16, .packing = false, .shuffle = true, .seed = 1, .pad_id = kPad});
    QVERIFY_THROWS_EXCEPTION(Error, s.seek({0, 0, 2, 10}));   // other seed
    QVERIFY_THROWS_EXCEPTION(Error, s.seek({0, 0, 1, 11}));   // other dataset size
    QVERIFY_THROWS_EXCEPTION(Error, s.seek({0, 10, 1, 10}));  // position past the end
    s.seek({2, 4, 1, 10});
    QCOMPARE(s.cursor(), (DataCursor{2, 4, 1, 10}));
  }

  void badStreams() {
    std::vector<Example> ex{make_example(0, 10, 0)};
    QVERIFY_THROWS_EXCEPTION(Error,
                             BatchStream(ex, {.rows = 1, .seq_len = 8}));  // example longer than seq_len
    QVERIFY_THROWS_EXCEPTION(Error, BatchStream(ex, {.rows = 0, .seq_len = 16}));
    std::vector<Example> none;
    QVERIFY_THROWS_EXCEPTION(Error, BatchStream(none, {.rows = 1, .seq_len = 16}));
  }

  void evalBatchesInFileOrder() {
    std::vector<Example> ex = mixed_examples(5);
    std::vector<Batch> batches = batches_in_order(
        ex, {.rows = 2, .seq_len = 16, .packing = false, .shuffle = true, .seed = 1, .pad_id = kPad});
    QCOMPARE(batches.size(), size_t(3));
    std::vector<int> order;
    for (const Batch& b : batches)
      for (int e : check_batch(b, ex)) order.push_back(e);
    QCOMPARE(order, (std::vector<int>{0, 1, 2, 3, 4}));
  }
};

QTEST_GUILESS_MAIN(TestDataBatching)
#include "test_data_batching.moc"
