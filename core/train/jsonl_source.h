// Where the trainer's batches come from. BatchSource is what the run loop needs (the next micro-batch, and a
// cursor to save in checkpoints so that a resumed run sees exactly the batches an uninterrupted one would).
// TokenizedJsonlSource reads pre-tokenized JSONL, one {"input_ids": [...], "labels": [...]} per line, labels
// unshifted as transformers takes them (-100 = no loss; absent = every token but the first).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "forja/batch.h"

namespace forja::train {

class BatchSource {
 public:
  virtual ~BatchSource() = default;
  virtual Batch next() = 0;  // endless: epochs follow each other
  virtual std::string cursor() const = 0;
  virtual void seek(const std::string& cursor) = 0;  // throws forja::Error for a cursor of other data
  // The rows one pass over the data fills (examples, or packed rows when several share one).
  virtual int64_t rows_per_epoch() const = 0;
};

struct TokenizedExample {
  std::vector<TokenId> ids;
  std::vector<int32_t> labels;  // unshifted, same length as ids
};

// Reads the file; a bad line is an error naming file:line. With vocab_size > 0, every id and every label
// other than -100 must lie in [0, vocab_size).
std::vector<TokenizedExample> read_tokenized_jsonl(const std::filesystem::path& path, int64_t max_length,
                                                   int64_t vocab_size = 0);

// Throws unless path names a regular file: a folder reads as empty and a FIFO blocks the open forever.
void require_regular_file(const std::filesystem::path& path, const std::string& what);

// Rows padded (id 0, label -100) to the longest row of the batch; labels shifted for Batch.
Batch make_padded_batch(const std::vector<const TokenizedExample*>& rows);

class TokenizedJsonlSource final : public BatchSource {
 public:
  // shuffle = false: file order every epoch.
  TokenizedJsonlSource(std::vector<TokenizedExample> examples, int64_t batch_size, uint64_t seed,
                       bool shuffle = true);
  Batch next() override;
  std::string cursor() const override;
  void seek(const std::string& cursor) override;
  size_t size() const { return examples_.size(); }
  int64_t rows_per_epoch() const override { return static_cast<int64_t>(examples_.size()); }

 private:
  void shuffle_epoch();
  std::vector<TokenizedExample> examples_;
  int64_t batch_size_;
  uint64_t seed_;
  bool shuffle_;
  int64_t epoch_ = 0;
  size_t index_ = 0;  // next position in order_
  std::vector<size_t> order_;
};

// Every example once, in file order, in batches of `batch_size` (evaluation).
std::vector<Batch> batches_in_file_order(const std::vector<TokenizedExample>& examples, int64_t batch_size);

}  // namespace forja::train
