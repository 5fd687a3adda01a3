#include "dataset_source.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>

#include "forja/error.h"
#if FORJA_TRAIN_HAS_DATASETS
#include "forja/dataset.h"
#include "forja/tokenizer.h"
#endif

namespace forja::train {
namespace fs = std::filesystem;

namespace {

#if FORJA_TRAIN_HAS_DATASETS
// The dataset's examples and the stream over them, kept together (the stream holds a reference).
class DatasetSource final : public BatchSource {
 public:
  DatasetSource(std::vector<Example> examples, const BatchOptions& options)
      : examples_(std::move(examples)), stream_(examples_, options) {
    // Packing puts several examples in a row: count the rows one pass in file order fills.
    if (!options.packing) {
      rows_ = static_cast<int64_t>(examples_.size());
      return;
    }
    BatchOptions once = options;
    once.shuffle = false;
    once.full_rows = false;
    for (const Batch& b : batches_in_order(examples_, once)) rows_ += b.rows;
  }
  int64_t rows_per_epoch() const override { return rows_; }
  Batch next() override { return trim_padding(stream_.next()); }
  std::string cursor() const override { return stream_.cursor().to_json(); }
  void seek(const std::string& cursor) override {
    DataCursor c;
    try {
      c = DataCursor::from_json(cursor);
    } catch (const Error&) {
      throw Error("the checkpoint's data position is not one of a chat/alpaca/text dataset",
                  "Resume with the config that started the run (same train_file and data_format).");
    }
    stream_.seek(c);
  }

 private:
  std::vector<Example> examples_;
  BatchStream stream_;
  int64_t rows_ = 0;
};

RecordFormat record_format(const std::string& name) {
  return name == "auto" ? RecordFormat::Auto : parse_format_name(name);
}

#endif

std::string count(size_t n, const char* what) {
  return std::to_string(n) + " " + what;
}

}  // namespace

bool looks_pre_tokenized(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw_file_error(path, "cannot open the dataset");
  std::string line;
  while (std::getline(in, line)) {
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos) continue;
    if (line[first] != '{') return false;  // a JSON array (records) or not JSON at all (the reader says so)
    try {
      const auto j = nlohmann::json::parse(line);
      return j.is_object() && j.contains("input_ids");
    } catch (const nlohmann::json::exception&) {
      return false;  // the record reader reports the line
    }
  }
  return false;
}

Batch trim_padding(Batch b) {
  if (b.segment_ids.size() != static_cast<size_t>(b.rows * b.seq_len)) return b;
  int64_t used = 0;
  for (int64_t r = 0; r < b.rows; ++r)
    for (int64_t t = b.seq_len - 1; t >= used; --t)
      if (b.segment_ids[static_cast<size_t>(r * b.seq_len + t)] != 0) {
        used = t + 1;
        break;
      }
  const int64_t keep = std::min(b.seq_len, std::max<int64_t>(2, (used + 7) / 8 * 8));
  if (keep == b.seq_len) return b;
  auto cut = [&](auto& v) {
    auto out = v;
    out.resize(static_cast<size_t>(b.rows * keep));
    for (int64_t r = 0; r < b.rows; ++r) std::copy_n(v.begin() + r * b.seq_len, keep, out.begin() + r * keep);
    v = std::move(out);
  };
  cut(b.input_ids);
  cut(b.labels);
  if (!b.position_ids.empty()) cut(b.position_ids);
  cut(b.segment_ids);
  b.seq_len = keep;
  return b;
}

TrainingData load_training_data(const TrainConfig& config, int64_t vocab_size) {
  if (config.train_file.empty())
    throw Error("the config has no train_file", "Set \"train_file\" to a JSONL or JSON dataset.");
  require_regular_file(config.train_file, "train_file");
  if (!config.eval_file.empty()) require_regular_file(config.eval_file, "eval_file");
  TrainingData out;
  const bool tokenized = config.data_format == "tokenized" ||
                         (config.data_format == "auto" && looks_pre_tokenized(config.train_file));
  [[maybe_unused]] auto check_ids = [&](const std::vector<TokenId>& ids, const std::string& where) {
    for (TokenId id : ids)
      if (id < 0 || id >= vocab_size)
        throw Error(where + ": token id " + std::to_string(id) + " is outside the model's vocabulary of " +
                        std::to_string(vocab_size),
                    "The dataset was tokenized for another model, or the tokenizer does not belong to it.");
  };

  if (tokenized) {
    if (config.eval_fraction > 0)
      throw Error("eval_fraction needs a dataset of records; " + config.train_file + " is pre-tokenized",
                  "Give a pre-tokenized eval_file instead.");
    auto train = read_tokenized_jsonl(config.train_file, config.max_length, vocab_size);
    const size_t n = train.size();
    if (config.packing) {
#if FORJA_TRAIN_HAS_DATASETS
      // Packed like any dataset's examples: a label must be the token itself or -100, since a packed row's
      // labels are made from the ids (each example's shift stays inside it).
      std::vector<Example> examples;
      examples.reserve(n);
      for (size_t i = 0; i < n; ++i) {
        Example e;
        e.ids = std::move(train[i].ids);
        e.train_mask.resize(e.ids.size());
        for (size_t t = 0; t < e.ids.size(); ++t) {
          const int32_t label = train[i].labels[t];
          if (label != kIgnoreIndex && label != e.ids[t])
            throw_file_error(config.train_file,
                             "example " + std::to_string(i + 1) + ": label " + std::to_string(label) +
                                 " at position " + std::to_string(t) + " is neither the token (" +
                                 std::to_string(e.ids[t]) + ") nor -100, which packing needs",
                             "Give labels equal to input_ids where the model learns and -100 elsewhere, or "
                             "set packing to false.");
          e.train_mask[t] = label != kIgnoreIndex;
        }
        e.source = config.train_file + ": example " + std::to_string(i + 1);
        e.original_length = static_cast<int64_t>(e.ids.size());
        examples.push_back(std::move(e));
      }
      BatchOptions bo;
      bo.rows = config.batch_size;
      bo.seq_len = config.max_length;
      bo.packing = true;
      bo.shuffle = config.shuffle;
      bo.seed = config.seed;
      bo.full_rows = true;
      out.train = std::make_unique<DatasetSource>(std::move(examples), bo);
#else
      throw_file_error(config.train_file,
                       "packing a pre-tokenized dataset needs the data area, which this build lacks",
                       "Build Forja with the data area, or set packing to false.");
#endif
    } else {
      out.train = std::make_unique<TokenizedJsonlSource>(std::move(train), config.batch_size, config.seed,
                                                         config.shuffle);
    }
    out.summary = "data: " + count(n, "pre-tokenized examples") + (config.packing ? ", packed" : "") +
                  " from " + config.train_file;
    if (!config.eval_file.empty())
      out.eval = batches_in_file_order(read_tokenized_jsonl(config.eval_file, config.max_length, vocab_size),
                                       config.batch_size);
    return out;
  }

#if !FORJA_TRAIN_HAS_DATASETS
  throw_file_error(config.train_file, "is not pre-tokenized, and this build has no dataset pipeline",
                   "Build Forja with the tokenizer and data areas, or give pre-tokenized JSONL.");
#else
  const std::string tok_dir = config.tokenizer_dir.empty() ? config.model_dir : config.tokenizer_dir;
  Tokenizer tokenizer = Tokenizer::load(tok_dir);
  if (static_cast<int64_t>(tokenizer.vocab_size()) > vocab_size)
    throw_file_error(tok_dir,
                     "has a tokenizer of " + std::to_string(tokenizer.vocab_size()) +
                         " tokens, more than the model's vocabulary of " + std::to_string(vocab_size),
                     "Use the tokenizer that came with the model (tokenizer_dir).");
  DatasetOptions opts;
  opts.train_files = {config.train_file};
  if (!config.eval_file.empty()) opts.eval_file = fs::path(config.eval_file);
  opts.eval_fraction = config.eval_fraction;
  opts.read.format = record_format(config.data_format);
  opts.read.on_bad_record = config.on_bad_record == "skip" ? OnBadRecord::Skip : OnBadRecord::Stop;
  opts.max_length = config.max_length;
  opts.train_on_prompt = config.train_on_prompt;
  opts.seed = config.seed;
  PreparedDataset data = prepare_dataset(opts, make_tokenizer_encoder(tokenizer));
  // Added tokens can sit past the tokenizer's base vocabulary (and the model's): an id beyond the embedding
  // table must be an error here, not an out-of-bounds gather on the device.
  for (const auto* set : {&data.train, &data.eval})
    for (const Example& ex : *set) check_ids(ex.ids, ex.source);

  const DatasetStats& s = data.stats;
  out.summary = "data: " + count(s.train.examples, "train examples") + " (" +
                count(static_cast<size_t>(s.train.tokens), "tokens") + ", " +
                count(static_cast<size_t>(s.train.trained_tokens), "trained") + "), " +
                count(s.eval.examples, "eval examples");
  if (s.train.truncated + s.eval.truncated > 0)
    out.summary += "; " + count(s.train.truncated + s.eval.truncated, "cut to max_length");
  if (s.train.dropped_no_trained + s.eval.dropped_no_trained > 0)
    out.summary += "; " + count(s.train.dropped_no_trained + s.eval.dropped_no_trained,
                                "dropped with nothing left to learn");
  if (s.records_skipped > 0) {
    out.summary += "; " + count(s.records_skipped, "bad records skipped");
    if (!s.problems.empty())
      out.summary += " (first: " + s.problems.front().where() + ": " + s.problems.front().message + ")";
  }

  BatchOptions bo;
  bo.rows = config.batch_size;
  bo.seq_len = config.max_length;
  bo.packing = config.packing;
  bo.shuffle = config.shuffle;
  bo.seed = config.seed;
  bo.pad_id = default_pad_id(tokenizer);
  // Fixed row count keeps the memory peak steady; the columns are trimmed to what the rows use.
  bo.full_rows = true;
  BatchOptions eval_bo = bo;
  eval_bo.shuffle = false;
  eval_bo.full_rows = false;
  if (!data.eval.empty())
    for (const Batch& b : batches_in_order(data.eval, eval_bo)) out.eval.push_back(trim_padding(b));
  out.train = std::make_unique<DatasetSource>(std::move(data.train), bo);
  return out;
#endif
}

}  // namespace forja::train
