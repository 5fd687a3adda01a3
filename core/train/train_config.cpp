// TrainConfig <-> JSON. Every key is optional (the defaults are TrainConfig's) but an unknown key is an
// error, so that "learning_rat" never trains silently at the default rate.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <set>
#include <type_traits>

#include "forja/config_reference.h"
#include "forja/error.h"
#include "forja/train.h"
#include "yaml_subset.h"

namespace forja {
using nlohmann::json;

namespace {

// Sanity caps: past them a typo (1e15, 10000000) becomes an allocation that fails far from the config.
constexpr int64_t kMaxLoraRank = 4096;
constexpr int64_t kMaxGradAccum = 65536;
constexpr int64_t kMaxTrainLength = int64_t(1) << 20;

const char* schedule_name(LrSchedule s) {
  switch (s) {
    case LrSchedule::Constant:
      return "constant";
    case LrSchedule::Linear:
      return "linear";
    case LrSchedule::Cosine:
      return "cosine";
  }
  return "cosine";
}

class Reader {
 public:
  Reader(const json& j, std::string source, std::string section)
      : j_(j), source_(std::move(source)), section_(std::move(section)) {
    if (!j_.is_object()) fail("must be a JSON object");
  }
  template <typename T>
  void get(const char* key, T& out) {
    seen_.insert(key);
    if (!j_.contains(key)) return;
    const json& v = j_.at(key);
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      // json's get<> truncates 2.7 to 2 and wraps -1 into an unsigned seed; neither is what was meant.
      if (!v.is_number()) fail(std::string("\"") + key + "\" has the wrong type (" + v.dump() + ")");
      if (v.is_number_float()) {
        const double d = v.get<double>();
        if (!(std::floor(d) == d && std::abs(d) < 9.0e18))
          fail(std::string("\"") + key + "\" must be a whole number, not " + v.dump());
      }
      if (std::is_unsigned_v<T> && v.get<double>() < 0)
        fail(std::string("\"") + key + "\" must not be negative, not " + v.dump());
      out = v.is_number_float() ? static_cast<T>(v.get<double>()) : v.get<T>();
      return;
    }
    try {
      out = v.get<T>();
    } catch (const json::exception&) {
      fail(std::string("\"") + key + "\" has the wrong type (" + v.dump() + ")");
    }
  }
  const json* object(const char* key) {
    seen_.insert(key);
    return j_.contains(key) ? &j_.at(key) : nullptr;
  }
  void finish() {
    for (auto it = j_.begin(); it != j_.end(); ++it) {
      if (seen_.count(it.key())) continue;
      throw_file_error(source_,
                       (section_.empty() ? "unknown key \"" + it.key() + "\" at the top level"
                                         : section_ + ": unknown key \"" + it.key() + "\""),
                       unknown_config_key_hint(section_, it.key()));
    }
  }
  // A key whose table entry lists its words (forja/config_reference.h): the value must be one of them.
  void check_choice(const char* key, const std::string& value) const {
    const ConfigKey* k = find_config_key(section_, key);
    if (!k || k->choices.empty()) return;
    if (std::find(k->choices.begin(), k->choices.end(), value) != k->choices.end()) return;
    fail(std::string(key) + " \"" + value + "\" is not " + k->allowed);
  }
  // Range checks: the message names the key, the allowed range and the value found.
  void check(bool ok, const char* key, const std::string& range, const json& value) const {
    if (!ok) fail(std::string("\"") + key + "\" must be " + range + ", not " + value.dump());
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw_file_error(source_, (section_.empty() ? "" : section_ + ": ") + what,
                     "See `forja-cli train --help` for the config keys.");
  }

 private:
  const json& j_;
  std::string source_, section_;
  std::set<std::string> seen_;
};

}  // namespace

TrainConfig train_config_from_json(const std::string& text, const std::string& source) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw_file_error(source, std::string("is not valid JSON: ") + e.what());
  }
  TrainConfig c;
  Reader r(j, source, "");
  r.get("model_dir", c.model_dir);
  r.get("output_dir", c.output_dir);
  r.get("device", c.device);
  r.get("dtype", c.dtype);
  r.get("base_quant", c.base_quant);
  r.get("nf4_double_quant", c.nf4_double_quant);
  r.get("nf4_cache", c.nf4_cache);
  r.get("run_name", c.run_name);
  r.get("notes", c.notes);
  r.get("train_file", c.train_file);
  r.get("eval_file", c.eval_file);
  r.get("data_format", c.data_format);
  r.get("tokenizer_dir", c.tokenizer_dir);
  r.get("eval_fraction", c.eval_fraction);
  r.get("packing", c.packing);
  r.get("train_on_prompt", c.train_on_prompt);
  r.get("on_bad_record", c.on_bad_record);
  r.get("shuffle", c.shuffle);
  r.get("init_adapter", c.init_adapter);
  r.get("batch_size", c.batch_size);
  r.get("max_length", c.max_length);
  r.get("max_steps", c.max_steps);
  r.get("epochs", c.epochs);
  r.get("grad_accum", c.grad_accum);
  r.get("activation_checkpointing", c.activation_checkpointing);
  r.get("selective_checkpointing", c.selective_checkpointing);
  r.get("eval_every", c.eval_every);
  r.get("early_stopping_patience", c.early_stopping_patience);
  r.get("early_stopping_min_delta", c.early_stopping_min_delta);
  r.get("checkpoint_every", c.checkpoint_every);
  r.get("keep_checkpoints", c.keep_checkpoints);
  r.get("seed", c.seed);
  if (const json* l = r.object("lora")) {
    Reader lr(*l, source, "lora");
    lr.get("rank", c.lora.rank);
    lr.get("alpha", c.lora.alpha);
    lr.get("dropout", c.lora.dropout);
    lr.get("use_rslora", c.lora.use_rslora);
    lr.get("target_modules", c.lora.target_modules);
    lr.finish();
    lr.check(c.lora.rank >= 1 && c.lora.rank <= kMaxLoraRank, "rank",
             "in [1, " + std::to_string(kMaxLoraRank) + "]", c.lora.rank);
    lr.check(c.lora.alpha > 0, "alpha", "positive", c.lora.alpha);
    lr.check(c.lora.dropout >= 0 && c.lora.dropout < 1, "dropout", "in [0, 1)", c.lora.dropout);
    if (c.lora.target_modules.empty())
      lr.fail("\"target_modules\" is empty: name at least one module (for example q_proj, v_proj)");
    for (const auto& m : c.lora.target_modules)
      if (m.empty()) lr.fail("\"target_modules\" has an empty name");
  }
  if (const json* o = r.object("optimizer")) {
    Reader orr(*o, source, "optimizer");
    orr.get("learning_rate", c.optimizer.learning_rate);
    orr.get("weight_decay", c.optimizer.weight_decay);
    orr.get("beta1", c.optimizer.beta1);
    orr.get("beta2", c.optimizer.beta2);
    orr.get("eps", c.optimizer.eps);
    orr.get("max_grad_norm", c.optimizer.max_grad_norm);
    orr.get("warmup_steps", c.optimizer.warmup_steps);
    std::string sched = schedule_name(c.optimizer.schedule);
    orr.get("schedule", sched);
    orr.check_choice("schedule", sched);
    if (sched == "constant")
      c.optimizer.schedule = LrSchedule::Constant;
    else if (sched == "linear")
      c.optimizer.schedule = LrSchedule::Linear;
    else
      c.optimizer.schedule = LrSchedule::Cosine;
    orr.finish();
    const OptimizerSettings& os = c.optimizer;
    orr.check(os.learning_rate > 0, "learning_rate", "positive", os.learning_rate);
    orr.check(os.weight_decay >= 0, "weight_decay", "zero or positive", os.weight_decay);
    orr.check(os.beta1 >= 0 && os.beta1 < 1, "beta1", "in [0, 1)", os.beta1);
    orr.check(os.beta2 >= 0 && os.beta2 < 1, "beta2", "in [0, 1)", os.beta2);
    orr.check(os.eps > 0, "eps", "positive", os.eps);
    orr.check(os.warmup_steps >= 0, "warmup_steps", "zero or positive", os.warmup_steps);
  }
  r.finish();
  if (c.model_dir.empty()) r.fail("\"model_dir\" is required");
  r.check(c.max_steps >= 1, "max_steps", "positive", c.max_steps);
  r.check(std::isfinite(c.epochs) && c.epochs >= 0 && c.epochs <= 1e6, "epochs", "in [0, 1000000]", c.epochs);
  r.check(c.batch_size >= 1, "batch_size", "positive", c.batch_size);
  // Every micro-batch of a step is built before the backward passes, so grad_accum bounds memory too.
  r.check(c.grad_accum >= 1 && c.grad_accum <= kMaxGradAccum, "grad_accum",
          "in [1, " + std::to_string(kMaxGradAccum) + "]", c.grad_accum);
  r.check(c.max_length >= 2 && c.max_length <= kMaxTrainLength, "max_length",
          "in [2, " + std::to_string(kMaxTrainLength) + "]", c.max_length);
  r.check(c.eval_every >= 0, "eval_every", "zero or positive", c.eval_every);
  r.check(c.early_stopping_patience >= 0, "early_stopping_patience", "zero or positive",
          c.early_stopping_patience);
  r.check(c.early_stopping_min_delta >= 0, "early_stopping_min_delta", "zero or positive",
          c.early_stopping_min_delta);
  r.check(c.checkpoint_every >= 0, "checkpoint_every", "zero or positive", c.checkpoint_every);
  r.check(c.keep_checkpoints >= 1, "keep_checkpoints", "positive", c.keep_checkpoints);
  r.check_choice("data_format", c.data_format);
  r.check_choice("on_bad_record", c.on_bad_record);
  r.check_choice("base_quant", c.base_quant);
  if (!(c.eval_fraction >= 0.0 && c.eval_fraction < 1.0))
    r.fail("eval_fraction must be in [0, 1), not " + std::to_string(c.eval_fraction));
  return c;
}

TrainConfig train_config_from_text(const std::string& text, const std::string& source) {
  const auto ends_with = [&](const char* ext) {
    const std::string e(ext);
    return source.size() >= e.size() && source.compare(source.size() - e.size(), e.size(), e) == 0;
  };
  if (ends_with(".yaml") || ends_with(".yml"))
    return train_config_from_json(train::parse_yaml_subset(text, source).dump(), source);
  return train_config_from_json(text, source);
}

std::string train_config_to_json(const TrainConfig& c) {
  json j = {{"model_dir", c.model_dir},
            {"output_dir", c.output_dir},
            {"device", c.device},
            {"dtype", c.dtype},
            {"base_quant", c.base_quant},
            {"nf4_double_quant", c.nf4_double_quant},
            {"nf4_cache", c.nf4_cache},
            {"run_name", c.run_name},
            {"notes", c.notes},
            {"train_file", c.train_file},
            {"eval_file", c.eval_file},
            {"data_format", c.data_format},
            {"tokenizer_dir", c.tokenizer_dir},
            {"eval_fraction", c.eval_fraction},
            {"packing", c.packing},
            {"train_on_prompt", c.train_on_prompt},
            {"on_bad_record", c.on_bad_record},
            {"shuffle", c.shuffle},
            {"init_adapter", c.init_adapter},
            {"batch_size", c.batch_size},
            {"max_length", c.max_length},
            {"max_steps", c.max_steps},
            {"epochs", c.epochs},
            {"grad_accum", c.grad_accum},
            {"activation_checkpointing", c.activation_checkpointing},
            {"selective_checkpointing", c.selective_checkpointing},
            {"eval_every", c.eval_every},
            {"early_stopping_patience", c.early_stopping_patience},
            {"early_stopping_min_delta", c.early_stopping_min_delta},
            {"checkpoint_every", c.checkpoint_every},
            {"keep_checkpoints", c.keep_checkpoints},
            {"seed", c.seed},
            {"lora",
             {{"rank", c.lora.rank},
              {"alpha", c.lora.alpha},
              {"dropout", c.lora.dropout},
              {"use_rslora", c.lora.use_rslora},
              {"target_modules", c.lora.target_modules}}},
            {"optimizer",
             {{"learning_rate", c.optimizer.learning_rate},
              {"weight_decay", c.optimizer.weight_decay},
              {"beta1", c.optimizer.beta1},
              {"beta2", c.optimizer.beta2},
              {"eps", c.optimizer.eps},
              {"max_grad_norm", c.optimizer.max_grad_norm},
              {"schedule", schedule_name(c.optimizer.schedule)},
              {"warmup_steps", c.optimizer.warmup_steps}}}};
  return j.dump(2) + "\n";
}

}  // namespace forja
