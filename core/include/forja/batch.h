// forja::Batch: the seam between the data pipeline (core/data) and the trainer (core/train). Plain C++, no torch:
// the trainer turns it into tensors. Row-major [rows, seq_len].
#pragma once

#include <cstdint>
#include <vector>

#include "forja/tokenizer.h"

namespace forja {

// Labels use HF's ignore index for positions that carry no loss (prompt tokens, padding, the last token of a row).
inline constexpr int32_t kIgnoreIndex = -100;

struct Batch {
  int64_t rows = 0;
  int64_t seq_len = 0;
  std::vector<TokenId> input_ids;  // rows * seq_len; padding positions hold the pad id
  // rows * seq_len, already shifted: labels[t] is the target for the logits at position t (i.e. input_ids[t + 1]
  // of the same example), or kIgnoreIndex.
  std::vector<int32_t> labels;
  // rows * seq_len: position within its own example (restarts at 0 for each packed example).
  std::vector<int32_t> position_ids;
  // rows * seq_len: 1, 2, ... for the examples packed into a row (attention stays inside one segment), 0 for padding.
  std::vector<int32_t> segment_ids;
  int64_t loss_tokens = 0;  // number of labels != kIgnoreIndex
  bool packed = false;      // more than one example shares a row somewhere in this batch
};

// Positions that hold an example's token (segment id != 0), as opposed to the row-end padding that
// rows * seq_len also counts. A batch without segment ids has no padding information: every position counts.
inline int64_t real_token_count(const Batch& b) {
  if (b.segment_ids.size() != static_cast<size_t>(b.rows * b.seq_len)) return b.rows * b.seq_len;
  int64_t n = 0;
  for (int32_t s : b.segment_ids) n += s != 0;
  return n;
}

}  // namespace forja
