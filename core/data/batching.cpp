// Shuffled, padded or packed batches, and the cursor that lets a resumed run continue with exactly the
// batches it would have seen. The order of an epoch is a pure function of (seed, epoch), and packing is a
// pure function of the order from the cursor's position on, so a cursor of two integers is the whole state.
#include <nlohmann/json.hpp>

#include <random>

#include "data_internal.h"
#include "forja/dataset.h"
#include "forja/error.h"

namespace forja {
namespace {

// Uniform in [0, bound) by rejection: std::uniform_int_distribution differs between standard libraries, and
// the order must not.
uint64_t bounded(std::mt19937_64& gen, uint64_t bound) {
  const uint64_t rem = (std::numeric_limits<uint64_t>::max() % bound + 1) % bound;  // 2^64 mod bound
  while (true) {
    uint64_t r = gen();
    if (rem == 0 || r <= std::numeric_limits<uint64_t>::max() - rem) return r % bound;
  }
}

constexpr const char* kResumeHint =
    "Resume with the same data files, eval split, seed and max_length as the run that saved the checkpoint.";

}  // namespace

std::vector<uint32_t> epoch_order(size_t n, uint64_t seed, int64_t epoch) {
  if (n > std::numeric_limits<uint32_t>::max())
    throw Error("too many examples (" + std::to_string(n) + ") for one dataset",
                "Split the data into parts.");
  std::vector<uint32_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = static_cast<uint32_t>(i);
  std::mt19937_64 gen(splitmix64(splitmix64(seed ^ static_cast<uint64_t>(RngStream::EpochOrder)) +
                                 static_cast<uint64_t>(epoch)));
  for (size_t i = n; i > 1; --i) std::swap(order[i - 1], order[bounded(gen, i)]);
  return order;
}

std::string DataCursor::to_json() const {
  nlohmann::json j = {{"epoch", epoch}, {"position", position}, {"seed", seed}, {"examples", examples}};
  return j.dump();
}

DataCursor DataCursor::from_json(std::string_view text) {
  auto fail = [&](const std::string& problem) {
    throw Error("data cursor: " + problem + " in " + std::string(text.substr(0, 200)),
                "The checkpoint's data position is damaged; resume from an earlier checkpoint.");
  };
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::exception&) {  // a syntax error, or a number beyond a double (1e999)
    fail("not valid JSON");
  }
  if (!j.is_object()) fail("not a JSON object");
  DataCursor c;
  auto field = [&](const char* key, auto& into) {
    auto it = j.find(key);
    if (it == j.end()) fail(std::string("missing '") + key + "'");
    if (!it->is_number_integer() || (!it->is_number_unsigned() && it->get<int64_t>() < 0))
      fail(std::string("'") + key + "' must be a non-negative integer");
    into = it->get<std::remove_reference_t<decltype(into)>>();
  };
  field("epoch", c.epoch);
  field("position", c.position);
  field("seed", c.seed);
  field("examples", c.examples);
  return c;
}

Batch build_batch(const std::vector<std::vector<const Example*>>& rows, int64_t seq_len, TokenId pad_id) {
  Batch b;
  b.rows = static_cast<int64_t>(rows.size());
  b.seq_len = seq_len;
  const size_t cells = static_cast<size_t>(b.rows * seq_len);
  b.input_ids.assign(cells, pad_id);
  b.labels.assign(cells, kIgnoreIndex);
  b.position_ids.assign(cells, 0);
  b.segment_ids.assign(cells, 0);
  for (size_t r = 0; r < rows.size(); ++r) {
    if (rows[r].size() > 1) b.packed = true;
    size_t at = r * static_cast<size_t>(seq_len);
    const size_t row_end = at + static_cast<size_t>(seq_len);
    int32_t segment = 0;
    for (const Example* e : rows[r]) {
      const size_t n = e->ids.size();
      if (at + n > row_end)
        throw Error("batch row " + std::to_string(r) + " holds more than seq_len " + std::to_string(seq_len) +
                    " tokens (" + e->source + ")");
      ++segment;
      for (size_t t = 0; t < n; ++t) {
        b.input_ids[at + t] = e->ids[t];
        b.position_ids[at + t] = static_cast<int32_t>(t);
        b.segment_ids[at + t] = segment;
        // The label of the last token would be the next example's first token: never learn across a boundary.
        if (t + 1 < n && e->train_mask[t + 1]) {
          b.labels[at + t] = e->ids[t + 1];
          ++b.loss_tokens;
        }
      }
      at += n;
    }
  }
  return b;
}

BatchStream::BatchStream(const std::vector<Example>& examples, const BatchOptions& options)
    : examples_(examples), options_(options) {
  if (options_.rows < 1) throw Error("batch rows must be at least 1, not " + std::to_string(options_.rows));
  if (options_.seq_len < 2)
    throw Error("seq_len must be at least 2, not " + std::to_string(options_.seq_len));
  if (examples_.empty())
    throw Error("no examples to batch", "Prepare a dataset with at least one example first.");
  for (const Example& e : examples_) {
    if (static_cast<int64_t>(e.ids.size()) > options_.seq_len)
      throw Error(e.source + ": example of " + std::to_string(e.ids.size()) +
                      " tokens is longer than seq_len " + std::to_string(options_.seq_len),
                  "Prepare the dataset with max_length no larger than the training sequence length.");
    if (e.ids.size() != e.train_mask.size())
      throw Error(e.source + ": example has " + std::to_string(e.ids.size()) + " tokens but " +
                  std::to_string(e.train_mask.size()) + " mask entries");
  }
}

std::vector<uint32_t> BatchStream::order_for(int64_t epoch) const {
  if (options_.shuffle) return epoch_order(examples_.size(), options_.seed, epoch);
  std::vector<uint32_t> order(examples_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<uint32_t>(i);
  return order;
}

void BatchStream::ensure_order() const {
  if (order_epoch_ == epoch_) return;
  order_ = order_for(epoch_);
  order_epoch_ = epoch_;
}

int64_t BatchStream::take_count(const std::vector<uint32_t>& order, int64_t position) const {
  const int64_t n = static_cast<int64_t>(order.size());
  if (!options_.packing) return std::min(options_.rows, n - position);
  // Greedy in order: an example that does not fit in the current row starts the next one; it is never moved
  // ahead of an earlier example, which keeps the order (and so resuming) simple.
  int64_t rows_used = 1, fill = 0, i = position;
  for (; i < n; ++i) {
    const int64_t len = static_cast<int64_t>(examples_[order[static_cast<size_t>(i)]].ids.size());
    if (fill + len <= options_.seq_len) {
      fill += len;
    } else if (rows_used < options_.rows) {
      ++rows_used;
      fill = len;
    } else {
      break;
    }
  }
  return i - position;
}

Batch BatchStream::next() {
  ensure_order();
  const int64_t count = take_count(order_, position_);
  std::vector<std::vector<const Example*>> rows(1);
  int64_t fill = 0;
  for (int64_t k = 0; k < count; ++k) {
    const Example* e = &examples_[order_[static_cast<size_t>(position_ + k)]];
    const int64_t len = static_cast<int64_t>(e->ids.size());
    bool new_row = options_.packing ? fill + len > options_.seq_len : !rows.back().empty();
    if (new_row) {
      rows.emplace_back();
      fill = 0;
    }
    rows.back().push_back(e);
    fill += len;
  }
  if (options_.full_rows) rows.resize(static_cast<size_t>(options_.rows));
  Batch b = build_batch(rows, options_.seq_len, options_.pad_id);
  position_ += count;
  if (position_ >= static_cast<int64_t>(examples_.size())) {
    ++epoch_;
    position_ = 0;
  }
  return b;
}

DataCursor BatchStream::cursor() const {
  return {epoch_, position_, options_.seed, static_cast<int64_t>(examples_.size())};
}

void BatchStream::seek(const DataCursor& c) {
  const int64_t n = static_cast<int64_t>(examples_.size());
  if (c.examples != n || c.seed != options_.seed)
    throw Error("the saved data position belongs to other data (" + std::to_string(c.examples) +
                    " examples, seed " + std::to_string(c.seed) + "); this dataset has " + std::to_string(n) +
                    " examples, seed " + std::to_string(options_.seed),
                kResumeHint);
  if (c.epoch < 0 || c.position < 0 || c.position >= n)
    throw Error("the saved data position (epoch " + std::to_string(c.epoch) + ", position " +
                    std::to_string(c.position) + ") is outside this dataset of " + std::to_string(n) +
                    " examples",
                kResumeHint);
  epoch_ = c.epoch;
  position_ = c.position;
}

int64_t BatchStream::batches_in_epoch(int64_t epoch) const {
  const int64_t n = static_cast<int64_t>(examples_.size());
  if (!options_.packing) return (n + options_.rows - 1) / options_.rows;
  std::vector<uint32_t> other;
  const std::vector<uint32_t>* order = &order_;
  if (order_epoch_ != epoch) {
    other = order_for(epoch);
    order = &other;
  }
  int64_t batches = 0;
  for (int64_t pos = 0; pos < n; ++batches) pos += take_count(*order, pos);
  return batches;
}

std::vector<Batch> batches_in_order(const std::vector<Example>& examples, const BatchOptions& options) {
  BatchOptions o = options;
  o.shuffle = false;
  BatchStream stream(examples, o);
  std::vector<Batch> out;
  for (int64_t i = stream.batches_in_epoch(0); i > 0; --i) out.push_back(stream.next());
  return out;
}

}  // namespace forja
