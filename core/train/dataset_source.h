// The trainer's data from a TrainConfig: a dataset in the shapes core/data reads (alpaca, chat, ShareGPT,
// text), rendered through the model's chat template and tokenized, or a pre-tokenized JSONL file. Either way
// the result is a BatchSource (with a cursor that goes into checkpoints) and the eval batches.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "forja/batch.h"
#include "forja/train.h"
#include "jsonl_source.h"

namespace forja::train {

struct TrainingData {
  std::unique_ptr<BatchSource> train;
  std::vector<Batch> eval;
  std::string summary;  // one line for the log: examples, tokens, what was skipped or cut
};

// "tokenized" when the first record of `path` has "input_ids", else "records" (what core/data reads). A file
// that cannot be read is an error naming it.
bool looks_pre_tokenized(const std::string& path);

// Reads, renders, tokenizes and batches config.train_file / eval_file. `vocab_size` is the model's: a token
// id at or above it is an error naming the tokenizer, before any step runs.
TrainingData load_training_data(const TrainConfig& config, int64_t vocab_size);

// Cuts the columns after the last non-padding position of any row (rounded up to a multiple of 8, at least
// 2), so that short examples do not pay for max_length. Labels, positions and segments are cut alike.
Batch trim_padding(Batch batch);

}  // namespace forja::train
