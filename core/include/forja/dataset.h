// forja dataset pipeline: JSONL / JSON files in the common fine-tuning shapes -> tokenized examples with a
// training mask -> deterministic, resumable batches for the trainer (forja::Batch). Plain C++ (no torch, no
// Qt): the UI includes this header for its Data pane (stats, problems, token preview).
//
// The steps, each usable on its own:
//   read_dataset_file()  parse records, auto-detecting the shape per record; bad lines stop or are skipped
//   and counted prepare_dataset()    split off the eval set, render + tokenize each record, truncate, drop
//   what trains nothing BatchStream          shuffle per epoch by seed, pad or pack into rows x seq_len,
//   shift labels; its cursor
//                        (epoch, position) serialises to JSON so a resumed run sees the same batches
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "forja/batch.h"
#include "forja/chat_template.h"
#include "forja/tokenizer.h"

namespace forja {

// ---------------------------------------------------------------------------------------------------------------
// Records
// ---------------------------------------------------------------------------------------------------------------

enum class RecordFormat {
  Auto,      // decided per record from its keys: messages, conversations, instruction/output, text
  Alpaca,    // {"instruction", "input"?, "output", "system"?}
  Chat,      // {"messages": [{"role", "content"}, ...]}
  ShareGpt,  // {"conversations": [{"from", "value"}, ...]}
  Text,      // {"text"}
};
std::string_view format_name(RecordFormat format);  // "auto", "alpaca", "chat", "sharegpt", "text"
// Parses a name as format_name() writes it; throws forja::Error listing the names for an unknown one.
RecordFormat parse_format_name(std::string_view name);

// One example as read from a file, before tokenization. Alpaca and ShareGPT records are turned into messages
// here (roles "system", "user", "assistant"); plain text keeps `text` and has no messages.
struct Record {
  RecordFormat format = RecordFormat::Text;  // the shape it was read as (never Auto)
  std::vector<ChatMessage> messages;
  std::string text;
  std::string file;  // where it came from, for messages and the UI
  size_t line = 0;   // 1-based; for a JSON array, the line where the element begins
  std::string where() const { return file + ":" + std::to_string(line); }
};

// A line that could not be used (bad JSON, missing field, ...), or a record the template refused to render.
struct DataProblem {
  std::string file;
  size_t line = 0;  // 1-based
  std::string message;
  std::string where() const { return file + ":" + std::to_string(line); }
};

enum class OnBadRecord { Stop, Skip };

struct ReadOptions {
  RecordFormat format = RecordFormat::Auto;
  OnBadRecord on_bad_record = OnBadRecord::Stop;
  size_t max_problems_kept = 50;  // with Skip: the first N problems are kept for the UI, all are counted
};

struct ReadResult {
  std::vector<Record> records;
  std::vector<DataProblem> problems;  // the first max_problems_kept
  size_t skipped = 0;                 // records skipped because of a problem (>= problems.size())
};

// Reads a JSONL file (one JSON object per line; blank lines ignored) or a JSON file holding an array of
// objects (told apart by the first non-blank character, '[' for an array). Line numbers of a JSON array are
// the lines where each element begins. With OnBadRecord::Stop the first problem throws forja::Error
// "file:line: problem". A file that cannot be read or is not JSON at all always throws.
ReadResult read_dataset_file(const std::filesystem::path& file, const ReadOptions& options = {});

// Parses one JSON object's text as a record; `file`/`line` name it in errors. Throws forja::Error on a
// problem.
Record parse_record(std::string_view json_text, RecordFormat format, const std::string& file, size_t line);

// ---------------------------------------------------------------------------------------------------------------
// Tokenization
// ---------------------------------------------------------------------------------------------------------------

// A record as token ids with a per-token mask: mask[t] = 1 when token t is something the model should learn
// to produce (it becomes the label of position t - 1).
struct EncodedExample {
  std::vector<TokenId> ids;
  std::vector<uint8_t> train_mask;
};

// Turns a record into ids + mask. The real one is make_tokenizer_encoder(); tests pass small fakes.
// May throw forja::Error (e.g. the chat template refusing a conversation); prepare_dataset() attributes it to
// the record's file:line.
using RecordEncoder = std::function<EncodedExample(const Record&)>;

// Chat, ShareGPT and alpaca records go through the model's chat template (ChatTemplate::for_tokenizer,
// created when the first such record needs it, or `chat_template` when given); the mask is tokenize_chat's
// train_mask, i.e. the assistant turns including their end-of-turn token. Alpaca becomes system (when
// present) + user turn `instruction` + "\n\n" + `input` (just `instruction` when input is empty, as the
// Stanford Alpaca prompt does) + assistant turn `output`. Plain text is encoded with the tokenizer's default
// special tokens (e.g. BOS), followed by EOS when the tokenizer has one and did not already add it; every
// token is trained. The tokenizer (and template) must outlive the encoder.
RecordEncoder make_tokenizer_encoder(const Tokenizer& tokenizer, const ChatTemplate* chat_template = nullptr);

// The id used for padding: the tokenizer's pad token, else its EOS, else 0. Padding never carries loss.
TokenId default_pad_id(const Tokenizer& tokenizer);

// ---------------------------------------------------------------------------------------------------------------
// Preparing a dataset
// ---------------------------------------------------------------------------------------------------------------

struct Example {
  std::vector<TokenId> ids;
  std::vector<uint8_t> train_mask;  // see EncodedExample
  std::string source;               // "file:line"
  bool truncated = false;
  int64_t original_length = 0;  // tokens before truncation
  // Tokens that are the label of some position: mask[t] for t >= 1 (the first token is never predicted).
  int64_t trained_tokens() const;
};

struct DatasetOptions {
  std::vector<std::filesystem::path> train_files;
  std::optional<std::filesystem::path> eval_file;  // a separate held-out file; else eval_fraction of train
  double eval_fraction = 0.0;                      // in [0, 1); ignored when eval_file is set
  ReadOptions read;
  int64_t max_length = 2048;     // tokens per example; longer ones are cut at the end and counted
  bool train_on_prompt = false;  // train on every token, not just the assistant's
  uint64_t seed = 42;            // the eval split (the same seed and file give the same split)
};

// Data pane numbers for one split.
struct SplitStats {
  size_t examples = 0;
  size_t truncated = 0;           // cut to max_length (still used)
  size_t dropped_no_trained = 0;  // nothing left to learn after truncation (or nothing to learn at all)
  int64_t tokens = 0;             // after truncation
  int64_t trained_tokens = 0;     // labels that carry loss
  int64_t min_length = 0, max_length = 0;
  double mean_length = 0.0;
  std::vector<int64_t> lengths;  // per example, in order, for the length histogram
};

struct DatasetStats {
  size_t records_read = 0;     // parsed cleanly, all files
  size_t records_skipped = 0;  // bad lines + records the encoder refused (with Skip)
  std::vector<DataProblem> problems;
  size_t alpaca = 0, chat = 0, sharegpt = 0, text = 0;  // records per shape
  SplitStats train, eval;
};

struct PreparedDataset {
  std::vector<Example> train;
  std::vector<Example> eval;
  DatasetStats stats;
};

// Called after each record is encoded: (done, total). Returning false cancels (forja::Error "cancelled").
using DataProgress = std::function<bool(size_t done, size_t total)>;

// Reads every file, splits, encodes with `encoder`, truncates and filters. With OnBadRecord::Skip, records
// the encoder throws on are skipped and listed in problems too. Throws forja::Error when no train example is
// left.
PreparedDataset prepare_dataset(const DatasetOptions& options, const RecordEncoder& encoder,
                                const DataProgress& progress = {});

// The same steps for records already read (e.g. by the UI): `records` are split with options.eval_fraction
// and options.seed; options.train_files / eval_file are not read.
PreparedDataset prepare_records(std::vector<Record> records, std::vector<Record> eval_records,
                                const DatasetOptions& options, const RecordEncoder& encoder,
                                const DataProgress& progress = {});

// Deterministic split: which of n records are held out for eval (sorted indices). round(fraction * n)
// records, at least 1 when fraction > 0 and n >= 2, and always leaving at least one for training.
std::vector<size_t> eval_split_indices(size_t n, double fraction, uint64_t seed);

// Histogram of lengths in `bins` equal-width bins over [min, max]: edges has bins + 1 entries, counts has
// bins.
struct Histogram {
  std::vector<double> edges;
  std::vector<size_t> counts;
};
Histogram length_histogram(const std::vector<int64_t>& lengths, size_t bins);

// For the UI: example tokens with their piece text and whether each is trained. `text` is the token decoded
// on its own (raw bytes; a multi-byte character split over tokens shows as partial bytes), `piece` the
// vocabulary entry.
struct PreviewToken {
  TokenId id = 0;
  std::string piece;
  std::string text;
  bool trained = false;
};
std::vector<PreviewToken> preview_example(const Tokenizer& tokenizer, const Example& example);

// ---------------------------------------------------------------------------------------------------------------
// Shuffling and batching
// ---------------------------------------------------------------------------------------------------------------

// The order of n examples in epoch `epoch`: a Fisher-Yates shuffle driven by a portable generator
// (std::mt19937_64 with our own bounded draw), so the order is the same on every platform and standard
// library. Each epoch's order depends only on (seed, epoch), which is what makes resuming cheap.
std::vector<uint32_t> epoch_order(size_t n, uint64_t seed, int64_t epoch);

// Where the stream is: the next batch starts at example order[position] of epoch `epoch`. `seed` and
// `examples` identify the data it belongs to, so resuming against a different dataset is refused.
struct DataCursor {
  int64_t epoch = 0;
  int64_t position = 0;
  uint64_t seed = 0;
  int64_t examples = 0;

  std::string to_json() const;  // e.g. {"epoch":1,"examples":120,"position":16,"seed":42}
  // Throws forja::Error for text that is not such an object.
  static DataCursor from_json(std::string_view json);
  bool operator==(const DataCursor&) const = default;
};

struct BatchOptions {
  int64_t rows = 1;      // examples (or packed rows) per batch
  int64_t seq_len = 0;   // row length; every example must fit (prepare with max_length <= seq_len)
  bool packing = false;  // greedily put consecutive (shuffled) examples into a row while they fit
  bool shuffle = true;   // false: file order every epoch (eval)
  uint64_t seed = 42;
  TokenId pad_id = 0;  // see default_pad_id()
  // Top up an epoch's short last batch with empty rows (all padding, no loss), so that every batch has the
  // same shape (what CUDA graphs and a steady memory peak want). Off: the last batch just has fewer rows.
  bool full_rows = true;
};

// Endless batches over a fixed set of examples, epoch after epoch. Batches never span two epochs, so an
// epoch's last batch may hold fewer examples (see full_rows). Without packing each row holds one example
// padded to seq_len.
class BatchStream {
 public:
  // Keeps a reference to `examples`, which must outlive the stream. Throws forja::Error for bad options, an
  // empty set, or an example longer than seq_len.
  BatchStream(const std::vector<Example>& examples, const BatchOptions& options);

  Batch next();
  // The cursor to save with a checkpoint: next() after seek(cursor()) returns what next() would have
  // returned.
  DataCursor cursor() const;
  // Throws forja::Error when the cursor belongs to other data (seed, example count) or is out of range.
  void seek(const DataCursor& cursor);

  // Batches in epoch `epoch` (with packing it depends on the order, so it is counted by packing without
  // copying).
  int64_t batches_in_epoch(int64_t epoch) const;

  const BatchOptions& options() const { return options_; }

 private:
  std::vector<uint32_t> order_for(int64_t epoch) const;
  void ensure_order() const;
  // How many examples of the current order, starting at `position`, go into the next batch.
  int64_t take_count(const std::vector<uint32_t>& order, int64_t position) const;

  const std::vector<Example>& examples_;
  BatchOptions options_;
  int64_t epoch_ = 0;
  int64_t position_ = 0;
  mutable int64_t order_epoch_ = -1;
  mutable std::vector<uint32_t> order_;
};

// One in-order pass (eval): all batches of `examples` without shuffling.
std::vector<Batch> batches_in_order(const std::vector<Example>& examples, const BatchOptions& options);

// Lays out already-chosen examples as a batch: each inner vector is one row's examples. Exposed for tests and
// the trainer's probes.
Batch build_batch(const std::vector<std::vector<const Example*>>& rows, int64_t seq_len, TokenId pad_id);

}  // namespace forja
