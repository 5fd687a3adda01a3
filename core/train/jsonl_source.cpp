#include "jsonl_source.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <limits>
#include <random>

#include "forja/error.h"
#include "util/json_number.h"

namespace forja::train {
using nlohmann::json;

namespace {

// Ids read one by one: json's get<> would truncate 1.5 to 1 and wrap 1e30 without a word.
template <typename T>
std::vector<T> read_ids(const json& j, const char* key, const std::string& where, int64_t vocab_size,
                        bool allow_ignore) {
  const json& a = j.at(key);
  if (!a.is_array()) throw Error(where + ": \"" + key + "\" must be a list of token ids");
  std::vector<T> out;
  out.reserve(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    const json& v = a[i];
    const std::string at = where + ": " + key + "[" + std::to_string(i) + "] ";
    if (!v.is_number_integer()) throw Error(at + "is " + v.dump() + ", not a whole token id");
    const int64_t id = v.get<int64_t>();
    if (allow_ignore && id == kIgnoreIndex) {
      out.push_back(static_cast<T>(id));
      continue;
    }
    const int64_t limit = vocab_size > 0 ? vocab_size : int64_t(std::numeric_limits<int32_t>::max());
    if (id < 0 || id >= limit)
      throw Error(at + "= " + std::to_string(id) + " is outside the model's vocabulary [0, " +
                      std::to_string(limit) + ")" +
                      (allow_ignore ? " (and is not -100, the ignore label)" : ""),
                  "The dataset was tokenized for another model, or the tokenizer does not belong to it.");
    out.push_back(static_cast<T>(id));
  }
  return out;
}

}  // namespace

void require_regular_file(const std::filesystem::path& path, const std::string& what) {
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  if (ec || st.type() == std::filesystem::file_type::not_found)
    throw_file_error(path.string(), "cannot open the " + what + ": no such file");
  if (st.type() == std::filesystem::file_type::directory)
    throw_file_error(path.string(), "is a folder, not a " + what + " file",
                     "Point the setting at a .jsonl or .json file inside it.");
  if (st.type() != std::filesystem::file_type::regular)
    throw_file_error(path.string(), "is not a regular file (a pipe or device), so it cannot be the " + what);
}

std::vector<TokenizedExample> read_tokenized_jsonl(const std::filesystem::path& path, int64_t max_length,
                                                   int64_t vocab_size) {
  require_regular_file(path, "dataset");
  std::ifstream in(path);
  if (!in) throw_file_error(path.string(), "cannot open the dataset");
  std::vector<TokenizedExample> out;
  std::string line;
  for (size_t n = 1; std::getline(in, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = path.string() + ":" + std::to_string(n);
    TokenizedExample ex;
    try {
      json j = json::parse(line);
      if (!j.is_object()) throw Error(where + ": not a {\"input_ids\": [...], \"labels\": [...]} line");
      ex.ids = read_ids<TokenId>(j, "input_ids", where, vocab_size, false);
      if (j.contains("labels")) ex.labels = read_ids<int32_t>(j, "labels", where, vocab_size, true);
    } catch (const json::exception& e) {
      throw Error(where + ": not a {\"input_ids\": [...], \"labels\": [...]} line (" + e.what() + ")");
    }
    if (ex.labels.empty()) {
      ex.labels.assign(ex.ids.begin(), ex.ids.end());
      if (!ex.labels.empty()) ex.labels[0] = kIgnoreIndex;
    }
    if (ex.ids.size() < 2) throw Error(where + ": an example needs at least 2 tokens");
    if (ex.labels.size() != ex.ids.size())
      throw Error(where + ": labels has " + std::to_string(ex.labels.size()) + " entries for " +
                  std::to_string(ex.ids.size()) + " input_ids");
    if (static_cast<int64_t>(ex.ids.size()) > max_length) {
      ex.ids.resize(static_cast<size_t>(max_length));
      ex.labels.resize(static_cast<size_t>(max_length));
    }
    out.push_back(std::move(ex));
  }
  if (out.empty()) throw_file_error(path.string(), "holds no examples");
  // The first label is never predicted (batches shift labels by one), so only labels[1..] count.
  bool any_trained = false;
  for (const auto& ex : out)
    for (size_t t = 1; t < ex.labels.size() && !any_trained; ++t) any_trained = ex.labels[t] != kIgnoreIndex;
  if (!any_trained)
    throw_file_error(path.string(), "has no trainable tokens: every label after the first is -100",
                     "Give labels that are token ids where the model should learn, or leave labels out.");
  return out;
}

Batch make_padded_batch(const std::vector<const TokenizedExample*>& rows) {
  Batch b;
  b.rows = static_cast<int64_t>(rows.size());
  for (const auto* r : rows) b.seq_len = std::max<int64_t>(b.seq_len, static_cast<int64_t>(r->ids.size()));
  const size_t n = static_cast<size_t>(b.rows * b.seq_len);
  b.input_ids.assign(n, 0);
  b.labels.assign(n, kIgnoreIndex);
  b.position_ids.assign(n, 0);
  b.segment_ids.assign(n, 0);
  for (size_t r = 0; r < rows.size(); ++r) {
    const auto& ex = *rows[r];
    const size_t base = r * static_cast<size_t>(b.seq_len);
    for (size_t t = 0; t < ex.ids.size(); ++t) {
      b.input_ids[base + t] = ex.ids[t];
      b.position_ids[base + t] = static_cast<int32_t>(t);
      b.segment_ids[base + t] = 1;
      // Batch labels are shifted: position t predicts token t + 1.
      if (t + 1 < ex.ids.size()) b.labels[base + t] = ex.labels[t + 1];
      if (b.labels[base + t] != kIgnoreIndex) ++b.loss_tokens;
    }
  }
  return b;
}

TokenizedJsonlSource::TokenizedJsonlSource(std::vector<TokenizedExample> examples, int64_t batch_size,
                                           uint64_t seed, bool shuffle)
    : examples_(std::move(examples)), batch_size_(batch_size), seed_(seed), shuffle_(shuffle) {
  if (examples_.empty()) throw Error("the training data holds no examples");
  shuffle_epoch();
}

void TokenizedJsonlSource::shuffle_epoch() {
  // Fisher-Yates with mt19937_64 (whose output the standard fixes), not std::shuffle (whose algorithm it does
  // not): the same seed gives the same order with every standard library.
  order_.resize(examples_.size());
  for (size_t i = 0; i < order_.size(); ++i) order_[i] = i;
  if (!shuffle_) return;
  std::mt19937_64 rng(seed_ + static_cast<uint64_t>(epoch_) * 0x9E3779B97F4A7C15ull);
  for (size_t i = order_.size(); i > 1; --i) std::swap(order_[i - 1], order_[rng() % i]);
}

Batch TokenizedJsonlSource::next() {
  std::vector<const TokenizedExample*> rows;
  while (static_cast<int64_t>(rows.size()) < batch_size_) {
    if (index_ == order_.size()) {
      ++epoch_;
      index_ = 0;
      shuffle_epoch();
    }
    rows.push_back(&examples_[order_[index_++]]);
  }
  return make_padded_batch(rows);
}

std::string TokenizedJsonlSource::cursor() const {
  return json({{"epoch", epoch_}, {"index", index_}, {"examples", examples_.size()}, {"seed", seed_}}).dump();
}

void TokenizedJsonlSource::seek(const std::string& cursor) {
  try {
    json j = json::parse(cursor);
    const auto examples = json_uint(j.at("examples")), seed = json_uint(j.at("seed"));
    const auto epoch = json_int(j.at("epoch"), 0);
    const auto index = json_uint(j.at("index"));
    if (!examples || !seed || !epoch || !index || *index > examples_.size())
      throw Error("the checkpoint's data position is unreadable: " + cursor);
    if (*examples != examples_.size() || *seed != seed_)
      throw Error("the checkpoint's data position belongs to other data (example count or seed differ)",
                  "Resume with the dataset and seed the run started with, or start a new output folder.");
    epoch_ = *epoch;
    index_ = static_cast<size_t>(*index);
  } catch (const json::exception& e) {
    throw Error(std::string("the checkpoint's data position is unreadable: ") + e.what());
  }
  shuffle_epoch();
}

std::vector<Batch> batches_in_file_order(const std::vector<TokenizedExample>& examples, int64_t batch_size) {
  std::vector<Batch> out;
  for (size_t i = 0; i < examples.size(); i += static_cast<size_t>(batch_size)) {
    std::vector<const TokenizedExample*> rows;
    for (size_t j = i; j < std::min(examples.size(), i + static_cast<size_t>(batch_size)); ++j)
      rows.push_back(&examples[j]);
    out.push_back(make_padded_batch(rows));
  }
  return out;
}

}  // namespace forja::train
