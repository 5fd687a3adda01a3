// From records to examples: the held-out split, encoding, train_on_prompt, truncation, and the counts the
// Data pane shows. The split is decided on records, before tokenization, so the same file and seed hold out
// the same records whatever the model or max_length.
#include <algorithm>
#include <cmath>
#include <random>

#include "data_internal.h"
#include "forja/dataset.h"
#include "forja/error.h"

namespace forja {
namespace {

void check_options(const DatasetOptions& o) {
  if (o.max_length < 2)
    throw Error(
        "max_length " + std::to_string(o.max_length) + " is too small: an example needs at least 2 tokens",
        "Set max_length to the sequence length you train with (e.g. 1024 or 2048).");
  if (!(o.eval_fraction >= 0.0 && o.eval_fraction < 1.0))
    throw Error("eval_fraction " + std::to_string(o.eval_fraction) + " is outside [0, 1)",
                "Use e.g. 0.05 to hold out 5% of the records, or 0 for no eval split.");
}

void count_format(DatasetStats& s, RecordFormat f) {
  switch (f) {
    case RecordFormat::Alpaca:
      ++s.alpaca;
      break;
    case RecordFormat::Chat:
      ++s.chat;
      break;
    case RecordFormat::ShareGpt:
      ++s.sharegpt;
      break;
    case RecordFormat::Text:
      ++s.text;
      break;
    case RecordFormat::Auto:
      break;
  }
}

void add_problem(DatasetStats& s, const ReadOptions& o, DataProblem p) {
  if (s.problems.size() < o.max_problems_kept) s.problems.push_back(std::move(p));
}

void finish_stats(SplitStats& s, const std::vector<Example>& examples) {
  s.examples = examples.size();
  s.lengths.clear();
  s.lengths.reserve(examples.size());
  for (const Example& e : examples) {
    int64_t n = static_cast<int64_t>(e.ids.size());
    s.lengths.push_back(n);
    s.tokens += n;
    s.trained_tokens += e.trained_tokens();
  }
  if (!examples.empty()) {
    auto [lo, hi] = std::minmax_element(s.lengths.begin(), s.lengths.end());
    s.min_length = *lo;
    s.max_length = *hi;
    s.mean_length = static_cast<double>(s.tokens) / static_cast<double>(examples.size());
  }
}

class Encoder {
 public:
  Encoder(const DatasetOptions& o, const RecordEncoder& encode, const DataProgress& progress, size_t total,
          DatasetStats& stats)
      : o_(o), encode_(encode), progress_(progress), total_(total), stats_(stats) {}

  std::vector<Example> run(std::vector<Record>& records, SplitStats& split) {
    std::vector<Example> out;
    out.reserve(records.size());
    for (Record& r : records) {
      if (auto e = one(r, split)) out.push_back(std::move(*e));
      ++done_;
      if (progress_ && !progress_(done_, total_))
        throw Error("dataset preparation cancelled", "Start it again when you are ready.");
      // The text is no longer needed once encoded; large datasets should not hold it twice.
      r = Record{};
    }
    return out;
  }

 private:
  // No token spans this many bytes in practice, so a text cut at max_length * kBytesPerToken still gives
  // more than max_length tokens, and the tokenizer never sees (and splits) a 100 MB record whole.
  static constexpr size_t kBytesPerToken = 128, kSlackBytes = 4096;

  static void cut_text(std::string& s, size_t limit) {
    if (s.size() <= limit) return;
    while (limit > 0 && (static_cast<unsigned char>(s[limit]) & 0xC0) == 0x80) --limit;  // a whole UTF-8 char
    s.resize(limit);
    s.shrink_to_fit();
  }

  std::optional<Example> one(const Record& whole, SplitStats& split) {
    const size_t limit = static_cast<size_t>(o_.max_length) * kBytesPerToken + kSlackBytes;
    std::optional<Record> cut;
    bool long_text = whole.text.size() > limit;
    for (const auto& m : whole.messages) long_text = long_text || m.content.size() > limit;
    if (long_text) {
      // original_length then counts the tokens of the cut record: still above max_length, so "truncated".
      cut = whole;
      cut_text(cut->text, limit);
      for (auto& m : cut->messages) cut_text(m.content, limit);
    }
    const Record& r = cut ? *cut : whole;
    EncodedExample enc;
    try {
      enc = encode_(r);
    } catch (const Error& e) {
      // Typically the chat template refusing the conversation (roles not alternating, a system turn it
      // forbids).
      DataProblem p{r.file, r.line, e.message()};
      if (o_.read.on_bad_record == OnBadRecord::Stop) throw RecordError(std::move(p), e.hint());
      ++stats_.records_skipped;
      add_problem(stats_, o_.read, std::move(p));
      return std::nullopt;
    }
    if (enc.ids.size() != enc.train_mask.size())
      throw Error(r.where() + ": the encoder returned " + std::to_string(enc.ids.size()) + " tokens but " +
                  std::to_string(enc.train_mask.size()) + " mask entries");
    Example ex;
    ex.source = r.where();
    ex.original_length = static_cast<int64_t>(enc.ids.size());
    ex.ids = std::move(enc.ids);
    ex.train_mask = std::move(enc.train_mask);
    if (o_.train_on_prompt) std::fill(ex.train_mask.begin(), ex.train_mask.end(), uint8_t{1});
    if (ex.original_length > o_.max_length) {
      // Cut at the end: the prompt comes first and must survive; what is lost is the tail of the answer.
      ex.ids.resize(static_cast<size_t>(o_.max_length));
      ex.train_mask.resize(static_cast<size_t>(o_.max_length));
      ex.truncated = true;
    }
    if (ex.trained_tokens() == 0) {
      ++split.dropped_no_trained;
      return std::nullopt;
    }
    if (ex.truncated) ++split.truncated;
    return ex;
  }

  const DatasetOptions& o_;
  const RecordEncoder& encode_;
  const DataProgress& progress_;
  size_t total_;
  size_t done_ = 0;
  DatasetStats& stats_;
};

}  // namespace

int64_t Example::trained_tokens() const {
  int64_t n = 0;
  for (size_t t = 1; t < train_mask.size(); ++t) n += train_mask[t] != 0;
  return n;
}

std::vector<size_t> eval_split_indices(size_t n, double fraction, uint64_t seed) {
  if (fraction <= 0.0 || n < 2) return {};
  size_t k = static_cast<size_t>(std::llround(fraction * static_cast<double>(n)));
  k = std::clamp<size_t>(k, 1, n - 1);
  // The first k of a seeded permutation; epoch_order's generator keeps it identical on every platform.
  std::vector<uint32_t> order =
      epoch_order(n, splitmix64(seed ^ static_cast<uint64_t>(RngStream::EvalSplit)), /*epoch=*/0);
  std::vector<size_t> picked(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k));
  std::sort(picked.begin(), picked.end());
  return picked;
}

namespace {

// `stats` arrives with what reading the files found (records skipped, problems).
PreparedDataset prepare(std::vector<Record> records, std::vector<Record> eval_records,
                        const DatasetOptions& options, const RecordEncoder& encoder,
                        const DataProgress& progress, DatasetStats stats) {
  check_options(options);
  PreparedDataset out;
  stats.records_read = records.size() + eval_records.size();
  for (const Record& r : records) count_format(stats, r.format);
  for (const Record& r : eval_records) count_format(stats, r.format);

  if (!options.eval_file && eval_records.empty() && options.eval_fraction > 0.0) {
    std::vector<size_t> held = eval_split_indices(records.size(), options.eval_fraction, options.seed);
    std::vector<Record> train;
    train.reserve(records.size() - held.size());
    size_t h = 0;
    for (size_t i = 0; i < records.size(); ++i) {
      if (h < held.size() && held[h] == i) {
        eval_records.push_back(std::move(records[i]));
        ++h;
      } else {
        train.push_back(std::move(records[i]));
      }
    }
    records = std::move(train);
  }

  Encoder enc(options, encoder, progress, records.size() + eval_records.size(), stats);
  out.train = enc.run(records, stats.train);
  out.eval = enc.run(eval_records, stats.eval);
  finish_stats(stats.train, out.train);
  finish_stats(stats.eval, out.eval);
  if (out.train.empty())
    throw Error("no training examples: " + std::to_string(stats.records_read) + " records read, " +
                    std::to_string(stats.train.dropped_no_trained) +
                    " with nothing to train on after truncation to " + std::to_string(options.max_length) +
                    " tokens, " + std::to_string(stats.records_skipped) + " skipped",
                "Check the dataset's shape and problems, and that max_length leaves room for the answers.");
  out.stats = std::move(stats);
  return out;
}

}  // namespace

PreparedDataset prepare_records(std::vector<Record> records, std::vector<Record> eval_records,
                                const DatasetOptions& options, const RecordEncoder& encoder,
                                const DataProgress& progress) {
  return prepare(std::move(records), std::move(eval_records), options, encoder, progress, {});
}

PreparedDataset prepare_dataset(const DatasetOptions& options, const RecordEncoder& encoder,
                                const DataProgress& progress) {
  check_options(options);
  if (options.train_files.empty())
    throw Error("no training data file given", "Choose a .jsonl or .json file with your examples.");
  std::vector<Record> train, eval;
  DatasetStats stats;
  auto read_into = [&](const std::filesystem::path& file, std::vector<Record>& into) {
    ReadResult r = read_dataset_file(file, options.read);
    stats.records_skipped += r.skipped;
    for (auto& p : r.problems) add_problem(stats, options.read, std::move(p));
    into.insert(into.end(), std::make_move_iterator(r.records.begin()),
                std::make_move_iterator(r.records.end()));
  };
  for (const auto& f : options.train_files) read_into(f, train);
  if (options.eval_file) read_into(*options.eval_file, eval);
  return prepare(std::move(train), std::move(eval), options, encoder, progress, std::move(stats));
}

}  // namespace forja
