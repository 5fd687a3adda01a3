// Training from datasets of records (chat / alpaca / text) through the model's tokenizer and chat template:
// the data path of `forja-cli train` that the window uses. The model is the tiny smollm fixture with its
// embedding widened to the qwen2_bpe fixture tokenizer's vocabulary (random rows), so real tokenization,
// ChatML rendering and loss masking feed a real CPU fp32 training run.
#include <QTemporaryDir>
#include <QtTest>

#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include <fstream>
#include <random>

#include "causal_lm.h"
#include "dataset_source.h"
#include "forja/error.h"
#include "forja/file_util.h"
#include "forja/nf4.h"
#include "forja/safetensors.h"
#include "forja/train.h"
#include "qtest_util.h"
#include "run.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const fs::path kFixtures = FORJA_FIXTURES_DIR;
const fs::path kTokenizer = kFixtures / "tokenizers" / "qwen2_bpe";
const fs::path kDemoData = fs::path(FORJA_SOURCE_DIR) / "resources" / "demo" / "dataset.jsonl";

// smollm (64 wide, tied embeddings) with `vocab` embedding rows: the fixture's 320 rows, then random ones.
void write_widened_model(const fs::path& dir, int64_t vocab) {
  fs::create_directories(dir);
  json config = json::parse(forja::read_text_file(kFixtures / "models" / "smollm" / "config.json"));
  config["vocab_size"] = vocab;
  forja::write_file_atomic(dir / "config.json", config.dump(2));
  auto src = forja::io::SafetensorsFile::open(kFixtures / "models" / "smollm" / "model.safetensors");
  std::vector<std::vector<float>> storage;
  std::vector<forja::io::TensorToWrite> out;
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  for (const auto& t : src.tensors()) {
    QVERIFY(t.dtype == forja::io::DType::F32);
    auto bytes = src.bytes(t);
    std::vector<float> v(bytes.size() / sizeof(float));
    std::memcpy(v.data(), bytes.data(), bytes.size());
    std::vector<int64_t> shape = t.shape;
    if (t.name == "model.embed_tokens.weight") {
      const int64_t hidden = shape[1];
      v.resize(static_cast<size_t>(vocab * hidden));
      for (size_t i = static_cast<size_t>(shape[0] * hidden); i < v.size(); ++i) v[i] = normal(rng);
      shape[0] = vocab;
    }
    storage.push_back(std::move(v));
    const auto& s = storage.back();
    out.push_back({t.name,
                   forja::io::DType::F32,
                   shape,
                   {reinterpret_cast<const uint8_t*>(s.data()), s.size() * sizeof(float)}});
  }
  forja::io::write_safetensors(dir / "model.safetensors", out);
}

// `n` short alpaca records, about 20 tokens each in ChatML.
std::string short_records(int n) {
  std::string lines;
  for (int i = 0; i < n; ++i)
    lines += "{\"instruction\": \"Count to " + std::to_string(i) + "\", \"output\": \"" + std::to_string(i) +
             "\"}\n";
  return lines;
}

forja::TrainConfig base_config(const fs::path& model, const fs::path& out) {
  forja::TrainConfig c;
  c.model_dir = model.string();
  c.tokenizer_dir = kTokenizer.string();
  c.output_dir = out.string();
  c.device = "cpu";
  c.dtype = "fp32";
  c.train_file = kDemoData.string();
  c.eval_fraction = 0.1;
  c.batch_size = 4;
  c.max_length = 96;
  c.max_steps = 6;
  c.checkpoint_every = 2;
  c.lora.rank = 4;
  c.lora.alpha = 8;
  c.lora.dropout = 0.1;
  c.optimizer.learning_rate = 1e-2;
  return c;
}

struct Trace {
  std::vector<double> loss;
  std::vector<int64_t> tokens, trained, positions;
  std::vector<std::string> messages;
  std::optional<double> final_eval;
  forja::TrainResult result;
};

Trace train(const forja::TrainConfig& c, int64_t pause_after = 0) {
  Trace t;
  forja::train::RunHooks hooks;
  hooks.on_message = [&](const std::string& m) { t.messages.push_back(m); };
  hooks.on_progress = [&](const forja::TrainProgress& p) {
    t.loss.push_back(p.loss);
    t.tokens.push_back(p.tokens);
    t.trained.push_back(p.trained_tokens);
    t.positions.push_back(p.positions);
    if (p.eval_loss) t.final_eval = p.eval_loss;
    return p.step == pause_after ? forja::TrainControl::Pause : forja::TrainControl::Continue;
  };
  t.result = forja::train::run_training_from_files(c, hooks);
  return t;
}

}  // namespace

class TestTrainDataset : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;
  fs::path model_;

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(tmp_.isValid());
    // The NF4 cache of the 4-bit runs goes under the test's folder.
    qputenv("FORJA_CACHE_DIR", (tmp_.path() + QStringLiteral("/qlora/cache")).toUtf8());
    model_ = fs::path(tmp_.path().toStdString()) / "model";
    write_widened_model(model_, 1605);
  }

  void trimPaddingCutsUnusedColumns() {
    forja::Batch b;
    b.rows = 2;
    b.seq_len = 20;
    b.input_ids.assign(40, 0);
    b.labels.assign(40, forja::kIgnoreIndex);
    b.position_ids.assign(40, 0);
    b.segment_ids.assign(40, 0);
    for (int t = 0; t < 3; ++t) b.segment_ids[t] = 1, b.input_ids[t] = 10 + t;
    for (int t = 0; t < 11; ++t)
      b.segment_ids[20 + t] = 1, b.input_ids[20 + t] = 30 + t, b.position_ids[20 + t] = t;
    b.labels[20 + 9] = 40;
    const forja::Batch c = forja::train::trim_padding(b);
    QCOMPARE(c.seq_len, 16);  // 11 used, rounded up to 8s
    QCOMPARE(c.input_ids.size(), size_t(32));
    QCOMPARE(c.input_ids[2], 12);
    QCOMPARE(c.input_ids[16 + 10], 40);
    QCOMPARE(c.labels[16 + 9], 40);
    QCOMPARE(c.position_ids[16 + 10], 10);
    QCOMPARE(c.segment_ids[16 + 11], 0);
    // A batch that fills its rows is left alone.
    b.segment_ids[39] = 1;
    QCOMPARE(forja::train::trim_padding(b).seq_len, 20);
  }

  void tellsPreTokenizedFromRecords() {
    forja_test::TempFiles files;
    QVERIFY(
        forja::train::looks_pre_tokenized(files.write("a.jsonl", "\n{\"input_ids\": [1, 2]}\n").string()));
    QVERIFY(!forja::train::looks_pre_tokenized(files.write("b.jsonl", "{\"text\": \"hi\"}\n").string()));
    QVERIFY(!forja::train::looks_pre_tokenized(files.write("c.json", "[{\"text\": \"hi\"}]").string()));
    forja_test::expect_error(
        [&] { forja::train::looks_pre_tokenized((files.dir() / "missing.jsonl").string()); },
        {"missing.jsonl", "cannot open"});
  }

  void trainsWithA4BitBase() {
    // base_quant = nf4 (QLoRA) through the whole run, as forja-cli train and the Train pane start it: on the
    // CPU in fp32 over the dequantized NF4 weights. The loss falls as the plain run's does, and the adapter
    // is saved.
    const fs::path root = tmp_.path().toStdString();
    forja::TrainConfig c = base_config(model_, root / "qlora");
    c.base_quant = "nf4";
    Trace q = train(c);
    QCOMPARE(q.result.outcome, forja::TrainOutcome::Finished);
    QCOMPARE(q.loss.size(), size_t(6));
    for (double l : q.loss) QVERIFY(std::isfinite(l) && l > 0);
    QVERIFY2(q.loss.back() < q.loss.front(), "the QLoRA loss did not go down in 6 steps at lr 1e-2");
    QVERIFY(fs::exists(fs::path(q.result.adapter_dir) / "adapter_model.safetensors"));
    // The quantized base went into the cache (FORJA_CACHE_DIR here), and a second run reads it: no quantizing
    // note, the same losses bit for bit, and the file is not rewritten.
    const fs::path cache = forja::default_nf4_cache_path(model_, forja::quant::Nf4Options{64, true, 256});
    QVERIFY2(cache.string().rfind((root / "qlora" / "cache" / "nf4").string(), 0) == 0,
             cache.string().c_str());
    QVERIFY2(fs::exists(cache), cache.string().c_str());
    const auto written = fs::last_write_time(cache);
    c.output_dir = (root / "qlora-cached").string();
    Trace again = train(c);
    QCOMPARE(again.loss, q.loss);
    QCOMPARE(fs::last_write_time(cache), written);
    for (const auto& m : again.messages) QVERIFY2(m.find("NF4 cache") == std::string::npos, m.c_str());
    // A damaged cache is rebuilt, with a note saying so, and the run is the same.
    forja::write_file_atomic(cache, "not a safetensors file");
    c.output_dir = (root / "qlora-rebuilt").string();
    Trace rebuilt = train(c);
    QCOMPARE(rebuilt.loss, q.loss);
    bool noted = false;
    for (const auto& m : rebuilt.messages) noted = noted || m.find("NF4 cache") != std::string::npos;
    QVERIFY2(noted, "no note about the rebuilt NF4 cache");
    QVERIFY(forja::quant::load_nf4_cache(cache).tensors.size() > 0);
    // A compute dtype NF4 does not run in is refused before anything loads.
    c.dtype = "fp16";
    c.output_dir = (root / "qlora-fp16").string();
    forja_test::expect_error([&] { train(c); }, {"base_quant = nf4", "fp16"});
  }

  void trainsOnChatRecordsAndResumesExactly() {
    const fs::path root = tmp_.path().toStdString();
    Trace full = train(base_config(model_, root / "full"));
    QCOMPARE(full.loss.size(), size_t(6));
    QCOMPARE(full.result.outcome, forja::TrainOutcome::Finished);
    QVERIFY(fs::exists(fs::path(full.result.adapter_dir) / "adapter_model.safetensors"));
    // The summary says what was read: 80 chat records, 8 held out for eval.
    QVERIFY(!full.messages.empty());
    QVERIFY2(full.messages.front().find("72 train examples") != std::string::npos,
             full.messages.front().c_str());
    QVERIFY(full.messages.front().find("8 eval examples") != std::string::npos);
    QVERIFY(full.final_eval.has_value());  // evaluated after the last step
    for (double l : full.loss) QVERIFY(std::isfinite(l) && l > 0);
    QVERIFY2(full.loss.back() < full.loss.front(), "the loss did not go down in 6 steps at lr 1e-2");

    // Pause after step 3 (checkpoint holds the data cursor), resume to the end: the same losses, bit for bit.
    const auto c = base_config(model_, root / "paused");
    Trace first = train(c, 3);
    QCOMPARE(first.result.outcome, forja::TrainOutcome::Paused);
    Trace rest = train(c);
    QCOMPARE(rest.result.resumed_from_step, int64_t(3));
    std::vector<double> joined = first.loss;
    joined.insert(joined.end(), rest.loss.begin(), rest.loss.end());
    QCOMPARE(joined.size(), full.loss.size());
    for (size_t i = 0; i < joined.size(); ++i) QCOMPARE(joined[i], full.loss[i]);
  }

  void packingPutsSeveralExamplesInARow() {
    // Short alpaca records (about 20 tokens each in ChatML) in rows of 96: packing fills each row with
    // several.
    forja_test::TempFiles files;
    auto c = base_config(model_, files.dir() / "plain");
    c.train_file = files.write("short.jsonl", short_records(40)).string();
    c.max_steps = 2;
    c.eval_fraction = 0;
    Trace plain = train(c);
    c.output_dir = (files.dir() / "packed").string();
    c.packing = true;
    Trace packed = train(c);
    QCOMPARE(packed.loss.size(), size_t(2));
    for (double l : packed.loss) QVERIFY(std::isfinite(l) && l > 0);
    // Same rows per step, several examples in each: at least three times the real tokens.
    QVERIFY2(packed.tokens[0] > 3 * plain.tokens[0],
             (std::to_string(packed.tokens[0]) + " vs " + std::to_string(plain.tokens[0])).c_str());
    // Each count apart: trained tokens are some of the real ones, and padding shows only in the positions.
    for (const Trace* t : {&plain, &packed})
      for (size_t i = 0; i < t->tokens.size(); ++i) {
        const std::string counts = std::to_string(t->trained[i]) + " trained, " +
                                   std::to_string(t->tokens[i]) + " tokens, " +
                                   std::to_string(t->positions[i]) + " positions";
        QVERIFY2(0 < t->trained[i] && t->trained[i] < t->tokens[i] && t->tokens[i] <= t->positions[i],
                 counts.c_str());
      }
    // Packed rows are filled greedily and rarely end exactly at max_length: the row ends are padding.
    QVERIFY2(packed.tokens[0] < packed.positions[0],
             (std::to_string(packed.tokens[0]) + " of " + std::to_string(packed.positions[0])).c_str());
  }

  void epochsSetTheSteps() {
    // 40 records, 4 rows per micro-batch, 2 micro-batches per step: 1.5 epochs are 60 rows, 7.5 steps, so 8.
    forja_test::TempFiles files;
    auto c = base_config(model_, files.dir() / "plain");
    c.train_file = files.write("short.jsonl", short_records(40)).string();
    c.eval_fraction = 0;
    c.grad_accum = 2;
    c.max_steps = 1000;  // epochs decide
    c.epochs = 1.5;
    c.checkpoint_every = 0;
    Trace plain = train(c);
    QCOMPARE(plain.result.steps_done, int64_t{8});
    QCOMPARE(plain.loss.size(), size_t{8});
    QVERIFY(std::find(plain.messages.begin(), plain.messages.end(), "epochs: 1.5 of 40 rows = 8 steps") !=
            plain.messages.end());
    // Packed, an epoch is the rows the examples fill together: fewer of them, so fewer steps.
    c.output_dir = (files.dir() / "packed").string();
    c.packing = true;
    Trace packed = train(c);
    QVERIFY2(packed.result.steps_done < 8, std::to_string(packed.result.steps_done).c_str());
    QVERIFY(packed.result.steps_done >= 1);
    // Workers share the rows: two workers take half the steps (rounded up).
    c.packing = false;
    QCOMPARE(forja::train::steps_for_epochs(c, 40, 2), int64_t{4});
    c.epochs = 0.01;
    QCOMPARE(forja::train::steps_for_epochs(c, 40, 1), int64_t{1});  // at least one step
  }

  void badRecordsStopOrAreSkipped() {
    forja_test::TempFiles files;
    const std::string good = R"({"instruction": "Say hi", "output": "hi"})";
    const fs::path data =
        files.write("bad.jsonl", good + "\n" + good + "\n{\"instruction\": 3}\n" + good + "\n");
    auto c = base_config(model_, files.dir() / "out");
    c.train_file = data.string();
    c.eval_fraction = 0;
    c.max_steps = 1;
    forja_test::expect_error([&] { train(c); }, {"bad.jsonl:3"});
    c.on_bad_record = "skip";
    Trace t = train(c);
    QCOMPARE(t.loss.size(), size_t(1));
    QVERIFY2(t.messages.front().find("1 bad records skipped (first: ") != std::string::npos,
             t.messages.front().c_str());
    QVERIFY(t.messages.front().find("bad.jsonl:3") != std::string::npos);
  }

  void aTokenizerBiggerThanTheModelIsRefused() {
    forja_test::TempFiles files;
    auto c = base_config(kFixtures / "models" / "smollm", files.dir() / "out");  // 320 rows, 1605 tokens
    forja_test::expect_error([&] { train(c); }, {"qwen2_bpe", "1605", "320"});
    // Pre-tokenized ids beyond the vocabulary are named with file:line too.
    c.train_file =
        files.write("ids.jsonl", "{\"input_ids\": [1, 2, 3]}\n{\"input_ids\": [1, 999]}\n").string();
    c.eval_fraction = 0;
    forja_test::expect_error([&] { train(c); }, {"ids.jsonl:2", "999", "320"});
  }

  void badPreTokenizedDataIsNamed() {
    forja_test::TempFiles files;
    auto c = base_config(model_, files.dir() / "out");
    c.eval_fraction = 0;
    c.data_format = "tokenized";
    const auto load = [&](const std::string& name, const std::string& text) {
      c.train_file = files.write(name, text).string();
      forja::train::load_training_data(c, 1605);
    };
    load("ok.jsonl", "{\"input_ids\": [1, 2, 3], \"labels\": [-100, 2, 3]}\n");
    forja_test::expect_error([&] { load("l.jsonl", "{\"input_ids\": [1, 2], \"labels\": [1, 5000]}\n"); },
                             {"l.jsonl:1", "labels[1]", "5000", "1605"});
    forja_test::expect_error([&] { load("f.jsonl", "\n{\"input_ids\": [1, 2.5, 3]}\n"); },
                             {"f.jsonl:2", "input_ids[1]", "2.5", "whole"});
    forja_test::expect_error(
        [&] { load("n.jsonl", "{\"input_ids\": [1, 2, 3], \"labels\": [-100, -100, -100]}\n"); },
        {"n.jsonl", "no trainable tokens"});
  }

  void preTokenizedDataPacks() {
    // packing: true on a pre-tokenized file packs its examples into rows like any dataset's: each example
    // keeps its own positions, segments and shifted labels; a label that is not its token cannot be packed.
    forja_test::TempFiles files;
    auto c = base_config(model_, files.dir() / "out");
    c.eval_fraction = 0;
    c.data_format = "tokenized";
    c.packing = true;
    c.shuffle = false;
    c.batch_size = 2;
    c.max_length = 32;
    std::string lines;
    const std::vector<int> lengths = {6, 9, 12, 7,
                                      10};  // 6 + 9 + 12 = 27 in the first row, 7 + 10 in the second
    int next_id = 10;
    for (int n : lengths) {
      nlohmann::json ids = nlohmann::json::array(), labels = nlohmann::json::array();
      for (int t = 0; t < n; ++t, ++next_id) {
        ids.push_back(next_id);
        labels.push_back(t < 2 ? forja::kIgnoreIndex : next_id);
      }
      lines += nlohmann::json({{"input_ids", ids}, {"labels", labels}}).dump() + "\n";
    }
    c.train_file = files.write("packed.jsonl", lines).string();
    auto data = forja::train::load_training_data(c, 1605);
    const forja::Batch b = data.train->next();
    QVERIFY(b.packed);
    QCOMPARE(b.rows, int64_t{2});
    QCOMPARE(forja::real_token_count(b), int64_t{44});
    // Second row: the example of 7 tokens (ids 37..43), then the one of 10 (44..53), then padding.
    const size_t row = static_cast<size_t>(b.seq_len);
    QCOMPARE(b.segment_ids[row + 6], 1);
    QCOMPARE(b.segment_ids[row + 7], 2);
    QCOMPARE(b.position_ids[row + 7], 0);
    QCOMPARE(b.input_ids[row + 7], 44);
    QCOMPARE(b.labels[row + 1], 39);                   // position 1 predicts the example's third token
    QCOMPARE(b.labels[row + 0], forja::kIgnoreIndex);  // the prompt's second token is not learned
    QCOMPARE(b.labels[row + 6], forja::kIgnoreIndex);  // never across into the next example
    QCOMPARE(b.segment_ids[row + 17], 0);
    c.train_file =
        files
            .write("odd.jsonl",
                   "{\"input_ids\": [1, 2, 3]}\n{\"input_ids\": [4, 5, 6], \"labels\": [-100, 9, 6]}\n")
            .string();
    forja_test::expect_error([&] { forja::train::load_training_data(c, 1605); },
                             {"odd.jsonl", "example 2", "label 9", "packing"});
  }

  void trainFileMustBeARegularFile() {
    forja_test::TempFiles files;
    auto c = base_config(model_, files.dir() / "out");
    c.eval_fraction = 0;
    fs::create_directories(files.dir() / "folder");
    c.train_file = (files.dir() / "folder").string();
    forja_test::expect_error([&] { forja::train::load_training_data(c, 1605); }, {"folder", "is a folder"});
    // A FIFO is refused before any open (which would block until a writer came).
    const fs::path fifo = files.dir() / "pipe.jsonl";
    QCOMPARE(::mkfifo(fifo.c_str(), 0600), 0);
    c.train_file = fifo.string();
    forja_test::expect_error([&] { forja::train::load_training_data(c, 1605); },
                             {"pipe.jsonl", "not a regular"});
    c.data_format = "chat";
    forja_test::expect_error([&] { forja::train::load_training_data(c, 1605); },
                             {"pipe.jsonl", "not a regular"});
  }

  void anAddedTokenBeyondTheModelIsRefused() {
    // A tokenizer whose base vocabulary fits the model but with an added token past the embedding table.
    forja_test::TempFiles files;
    const fs::path tok = files.dir() / "tok";
    fs::create_directories(tok);
    for (const char* f : {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"})
      fs::copy_file(kTokenizer / f, tok / f);
    json t = json::parse(forja::read_text_file(tok / "tokenizer.json"));
    t["added_tokens"].push_back({{"id", 4000},
                                 {"content", "<|zz|>"},
                                 {"single_word", false},
                                 {"lstrip", false},
                                 {"rstrip", false},
                                 {"normalized", false},
                                 {"special", false}});
    forja::write_file_atomic(tok / "tokenizer.json", t.dump());
    auto c = base_config(model_, files.dir() / "out");
    c.tokenizer_dir = tok.string();
    c.eval_fraction = 0;
    c.data_format = "text";
    c.train_file = files.write("t.jsonl", "{\"text\": \"hello <|zz|> world\"}\n").string();
    // 1606 tokens in all fit a vocabulary of 1700, but id 4000 does not.
    forja_test::expect_error([&] { forja::train::load_training_data(c, 1700); },
                             {"t.jsonl:1", "4000", "1700"});
  }

  void startsFromAGivenAdapter() {
    forja_test::TempFiles files;
    auto c = base_config(model_, files.dir() / "a");
    c.max_steps = 2;
    c.eval_fraction = 0;
    Trace a = train(c);
    // From A's adapter at learning rate 0: the adapter written is A's, tensor for tensor.
    c.output_dir = (files.dir() / "b").string();
    c.init_adapter = a.result.adapter_dir;
    c.max_steps = 1;
    c.optimizer.learning_rate = 0;
    c.optimizer.warmup_steps = 0;
    Trace b = train(c);
    auto fa = forja::io::SafetensorsFile::open(fs::path(a.result.adapter_dir) / "adapter_model.safetensors");
    auto fb = forja::io::SafetensorsFile::open(fs::path(b.result.adapter_dir) / "adapter_model.safetensors");
    QCOMPARE(fa.tensors().size(), fb.tensors().size());
    QVERIFY(fa.tensors().size() > 0);
    for (const auto& t : fa.tensors()) {
      const auto x = fa.bytes(t), y = fb.bytes(fb.at(t.name));
      QVERIFY2(x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size()) == 0, t.name.c_str());
    }
    // Loss of B's first step = what A's adapter gives, not a fresh init's (which has B = 0: the base's loss).
    QVERIFY(b.loss[0] != a.loss[0]);
    c.output_dir = (files.dir() / "c").string();
    c.lora.rank = 8;
    forja_test::expect_error([&] { train(c); }, {"adapter", "rank 4"});
  }

  void outOfMemoryPausesWithAMeasuredSetting() {
    // CUDA's out-of-memory error, injected (FORJA_TEST_OOM_ABOVE_TOKENS: more than 150 tokens per micro-batch
    // fail, 600 with activation checkpointing). 8 rows of up to 96 tokens fail; so do 8 rows with
    // checkpointing and 4 rows without; 4 rows with checkpointing fit.
    forja_test::TempFiles files;
    auto c = base_config(model_, files.dir() / "oom");
    c.batch_size = 8;
    c.eval_fraction = 0;
    c.max_steps = 3;
    qputenv("FORJA_TEST_OOM_ABOVE_TOKENS", "150");
    Trace t = train(c);
    QCOMPARE(t.result.outcome, forja::TrainOutcome::Paused);
    QCOMPARE(t.result.steps_done, int64_t(0));
    QVERIFY(t.loss.empty());
    QVERIFY(t.result.out_of_memory.has_value());
    const auto& a = *t.result.out_of_memory;
    QVERIFY(a.found);
    QCOMPARE(a.batch_size, int64_t(4));
    QCOMPARE(a.grad_accum, int64_t(2));
    QVERIFY(a.activation_checkpointing);
    QVERIFY2(
        a.message.find("batch_size 4, grad_accum 2 and activation checkpointing on") != std::string::npos,
        a.message.c_str());
    QVERIFY(a.error.find("out of memory") != std::string::npos);
    // The suggested setting resumes the same run (same global batch) and finishes.
    c.batch_size = a.batch_size;
    c.grad_accum = a.grad_accum;
    c.activation_checkpointing = a.activation_checkpointing;
    Trace rest = train(c);
    QCOMPARE(rest.result.outcome, forja::TrainOutcome::Finished);
    QCOMPARE(rest.loss.size(), size_t(3));
    // Nothing fits at all: said so, the process goes on.
    c.output_dir = (files.dir() / "oom2").string();
    qputenv("FORJA_TEST_OOM_ABOVE_TOKENS", "1");
    Trace none = train(c);
    qunsetenv("FORJA_TEST_OOM_ABOVE_TOKENS");
    QVERIFY(none.result.out_of_memory && !none.result.out_of_memory->found);
    QVERIFY(none.result.out_of_memory->message.find("Lower max_length") != std::string::npos);
  }

  void fileOrderWhenNotShuffled() {
    std::vector<forja::train::TokenizedExample> ex;
    for (int i = 0; i < 5; ++i) ex.push_back({{1, 10 + i}, {1, 10 + i}});
    forja::train::TokenizedJsonlSource in_order(ex, 2, 42, false), shuffled(ex, 2, 42, true);
    std::vector<int> seen, seen_shuffled;
    for (int k = 0; k < 5; ++k) {
      const forja::Batch b = in_order.next(), s2 = shuffled.next();
      for (int64_t r = 0; r < b.rows; ++r)
        seen.push_back(b.input_ids[static_cast<size_t>(r * b.seq_len + 1)]);
      for (int64_t r = 0; r < s2.rows; ++r)
        seen_shuffled.push_back(s2.input_ids[static_cast<size_t>(r * s2.seq_len + 1)]);
    }
    QCOMPARE(seen, (std::vector<int>{10, 11, 12, 13, 14, 10, 11, 12, 13, 14}));
    QVERIFY(seen_shuffled != seen);
  }

  void configKeysForData() {
    forja::TrainConfig c;
    c.model_dir = "m";
    c.output_dir = "o";
    c.data_format = "chat";
    c.packing = true;
    c.eval_fraction = 0.25;
    c.on_bad_record = "skip";
    c.tokenizer_dir = "t";
    const auto back = forja::train_config_from_json(forja::train_config_to_json(c), "c.json");
    QCOMPARE(back.data_format, std::string("chat"));
    QVERIFY(back.packing);
    QCOMPARE(back.eval_fraction, 0.25);
    QCOMPARE(back.on_bad_record, std::string("skip"));
    QCOMPARE(back.tokenizer_dir, std::string("t"));
    forja_test::expect_error(
        [] {
          forja::train_config_from_json(R"({"model_dir":"m","output_dir":"o","data_format":"csv"})",
                                        "x.json");
        },
        {"x.json", "data_format", "csv"});
    forja_test::expect_error(
        [] {
          forja::train_config_from_json(R"({"model_dir":"m","output_dir":"o","eval_fraction":1.5})",
                                        "x.json");
        },
        {"x.json", "eval_fraction"});
  }
};

QTEST_GUILESS_MAIN(TestTrainDataset)
#include "test_train_dataset.moc"
