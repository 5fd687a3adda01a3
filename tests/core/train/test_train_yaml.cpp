// Training configs written as YAML (the subset configs use) read exactly as their JSON; what the subset does
// not cover is an error with file:line, never a guess.
#include <QtTest>

#include "forja/error.h"
#include "forja/train.h"
#include "qtest_util.h"
#include "yaml_subset.h"

using forja::train::parse_yaml_subset;
using nlohmann::json;

class TestTrainYaml : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void scalarsMappingsAndLists() {
    const json j = parse_yaml_subset(R"(# a comment line
---
name: plain text   # trailing comment
quoted: "a: b # not a comment"
single: 'it''s'
int: 42
negative: -3
float: 2e-4
dot: .5
yes: true
no: false
nothing:
tilde: ~
nested:
  inner: 1
  deeper:
    x: "y"
flow: [q_proj, "v_proj", 3]
empty_flow: []
block:
  - a
  - 'b c'
block_same_indent:
- 1
- 2
)",
                                     "c.yaml");
    QCOMPARE(j.at("name").get<std::string>(), std::string("plain text"));
    QCOMPARE(j.at("quoted").get<std::string>(), std::string("a: b # not a comment"));
    QCOMPARE(j.at("single").get<std::string>(), std::string("it's"));
    QVERIFY(j.at("int").is_number_integer() && j.at("int").get<int>() == 42);
    QCOMPARE(j.at("negative").get<int>(), -3);
    QVERIFY(j.at("float").is_number_float());
    QCOMPARE(j.at("float").get<double>(), 2e-4);
    QCOMPARE(j.at("dot").get<double>(), 0.5);
    QCOMPARE(j.at("yes").get<bool>(), true);
    QCOMPARE(j.at("no").get<bool>(), false);
    QVERIFY(j.at("nothing").is_null() && j.at("tilde").is_null());
    QCOMPARE(j.at("nested").at("inner").get<int>(), 1);
    QCOMPARE(j.at("nested").at("deeper").at("x").get<std::string>(), std::string("y"));
    QCOMPARE(j.at("flow"), json::parse(R"(["q_proj", "v_proj", 3])"));
    QCOMPARE(j.at("empty_flow"), json::array());
    QCOMPARE(j.at("block"), json::parse(R"(["a", "b c"])"));
    QCOMPARE(j.at("block_same_indent"), json::parse("[1, 2]"));
  }

  void aYamlConfigEqualsItsJson() {
    const std::string yaml = R"(model_dir: models/TinyLlama
output_dir: runs/first
train_file: data/chats.jsonl
data_format: chat
eval_fraction: 0.05
packing: true
batch_size: 8
max_length: 2048
max_steps: 500
lora:
  rank: 32
  alpha: 64
  target_modules: [q_proj, k_proj, v_proj, o_proj]
optimizer:
  learning_rate: 1e-4
  schedule: linear
  warmup_steps: 20
)";
    const forja::TrainConfig y = forja::train_config_from_text(yaml, "run.yaml");
    QCOMPARE(y.model_dir, std::string("models/TinyLlama"));
    QCOMPARE(y.data_format, std::string("chat"));
    QCOMPARE(y.eval_fraction, 0.05);
    QVERIFY(y.packing);
    QCOMPARE(y.batch_size, int64_t(8));
    QCOMPARE(y.lora.rank, int64_t(32));
    QCOMPARE(y.lora.target_modules, (std::vector<std::string>{"q_proj", "k_proj", "v_proj", "o_proj"}));
    QCOMPARE(y.optimizer.learning_rate, 1e-4);
    QCOMPARE(y.optimizer.schedule, forja::LrSchedule::Linear);
    // The same settings as JSON give the same config, key for key.
    const forja::TrainConfig j = forja::train_config_from_text(forja::train_config_to_json(y), "run.json");
    QCOMPARE(forja::train_config_to_json(j), forja::train_config_to_json(y));
    // A typo is the same error as in JSON, naming the file.
    forja_test::expect_error(
        [] { forja::train_config_from_text("model_dir: m\noutput_dir: o\nlearning_rat: 1\n", "t.yml"); },
        {"t.yml", "learning_rat"});
  }

  void outOfRangeSettingsNameTheKeyAndTheRange() {
    // Each bad value, through YAML and through JSON: the error names the file, the key and the range.
    const auto both = [](const std::string& section, const std::string& key, const std::string& value,
                         std::initializer_list<std::string> parts) {
      std::string yaml = "model_dir: m\noutput_dir: o\n";
      json j = {{"model_dir", "m"}, {"output_dir", "o"}};
      if (section.empty()) {
        yaml += key + ": " + value + "\n";
        j[key] = json::parse(value);
      } else {
        yaml += section + ":\n  " + key + ": " + value + "\n";
        j[section][key] = json::parse(value);
      }
      forja_test::expect_error([&] { forja::train_config_from_text(yaml, "t.yaml"); }, parts);
      forja_test::expect_error([&] { forja::train_config_from_text(j.dump(), "t.json"); }, parts);
    };
    both("optimizer", "learning_rate", "-1e-4", {"learning_rate", "positive"});
    both("optimizer", "learning_rate", "0", {"learning_rate", "positive"});
    both("optimizer", "beta1", "1.0", {"beta1", "[0, 1)"});
    both("optimizer", "beta2", "-0.5", {"beta2", "[0, 1)"});
    both("optimizer", "weight_decay", "-0.1", {"weight_decay", "zero or positive"});
    both("optimizer", "warmup_steps", "-3", {"warmup_steps", "zero or positive"});
    both("optimizer", "eps", "0", {"eps", "positive"});
    both("", "checkpoint_every", "-1", {"checkpoint_every", "zero or positive"});
    both("", "keep_checkpoints", "-2", {"keep_checkpoints", "positive"});
    both("", "eval_every", "-1", {"eval_every", "zero or positive"});
    both("", "batch_size", "2.7", {"batch_size", "whole number", "2.7"});
    both("", "seed", "-1", {"seed", "negative"});
    both("", "grad_accum", "1e15", {"grad_accum", "65536"});
    both("", "max_length", "1e12", {"max_length", "1048576"});
    both("", "max_length", "1", {"max_length", "[2, "});
    both("", "max_steps", "0", {"max_steps", "positive"});
    both("lora", "rank", "10000000", {"rank", "[1, 4096]"});
    both("lora", "rank", "0", {"rank", "[1, 4096]"});
    both("lora", "alpha", "0", {"alpha", "positive"});
    both("lora", "dropout", "1", {"dropout", "[0, 1)"});
    both("lora", "dropout", "-0.1", {"dropout", "[0, 1)"});
    both("lora", "target_modules", "[]", {"target_modules", "empty"});
    // Whole numbers written as floats still read.
    QCOMPARE(
        forja::train_config_from_text("model_dir: m\noutput_dir: o\nbatch_size: 4.0\nseed: 7\n", "t.yaml")
            .batch_size,
        int64_t(4));
    // An optimizer or LoRA key at the top level is pointed to its section.
    try {
      forja::train_config_from_text("model_dir: m\noutput_dir: o\nlearning_rate: 1e-4\n", "t.yaml");
      QFAIL("expected forja::Error");
    } catch (const forja::Error& e) {
      QVERIFY2(e.message().find("learning_rate") != std::string::npos, e.message().c_str());
      QVERIFY2(e.hint().find("optimizer") != std::string::npos, e.hint().c_str());
    }
  }

  void unsupportedYamlIsAnErrorWithTheLine() {
    forja_test::expect_error([] { parse_yaml_subset("a: 1\nb: &anchor 2\n", "x.yaml"); }, {"x.yaml:2", "&"});
    forja_test::expect_error([] { parse_yaml_subset("a: |\n  text\n", "x.yaml"); }, {"x.yaml:1", "|"});
    forja_test::expect_error([] { parse_yaml_subset("a: 1\n\tb: 2\n", "x.yaml"); }, {"x.yaml:2", "tabs"});
    forja_test::expect_error([] { parse_yaml_subset("a: 1\na: 2\n", "x.yaml"); }, {"x.yaml:2", "twice"});
    forja_test::expect_error([] { parse_yaml_subset("a:\n  b: 1\n    c: 2\n", "x.yaml"); },
                             {"x.yaml:3", "indentation"});
    forja_test::expect_error([] { parse_yaml_subset("just words\n", "x.yaml"); }, {"x.yaml:1", "key: value"});
    forja_test::expect_error([] { parse_yaml_subset("a: \"open\n", "x.yaml"); }, {"x.yaml:1", "not closed"});
    forja_test::expect_error([] { parse_yaml_subset("a: [1, 2\n", "x.yaml"); }, {"x.yaml:1", "not closed"});
    forja_test::expect_error([] { parse_yaml_subset("l:\n  - a: 1\n", "x.yaml"); },
                             {"x.yaml:2", "mappings inside list"});
    forja_test::expect_error([] { parse_yaml_subset("a: 1\n---\nb: 2\n", "x.yaml"); },
                             {"x.yaml:2", "documents"});
  }
};

QTEST_GUILESS_MAIN(TestTrainYaml)
#include "test_train_yaml.moc"
