// TrainConfig <-> JSON. Every key is optional (the defaults are TrainConfig's) but an unknown key is an
// error, so that "learning_rat" never trains silently at the default rate.
#include <nlohmann/json.hpp>

#include <set>

#include "forja/error.h"
#include "forja/train.h"
#include "yaml_subset.h"

namespace forja {
using nlohmann::json;

namespace {

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
    try {
      out = j_.at(key).get<T>();
    } catch (const json::exception&) {
      fail(std::string("\"") + key + "\" has the wrong type (" + j_.at(key).dump() + ")");
    }
  }
  const json* object(const char* key) {
    seen_.insert(key);
    return j_.contains(key) ? &j_.at(key) : nullptr;
  }
  void finish() {
    for (auto it = j_.begin(); it != j_.end(); ++it)
      if (!seen_.count(it.key())) fail("unknown key \"" + it.key() + "\"");
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
    if (sched == "constant")
      c.optimizer.schedule = LrSchedule::Constant;
    else if (sched == "linear")
      c.optimizer.schedule = LrSchedule::Linear;
    else if (sched == "cosine")
      c.optimizer.schedule = LrSchedule::Cosine;
    else
      orr.fail("schedule \"" + sched + "\" is not constant, linear or cosine");
    orr.finish();
  }
  r.finish();
  if (c.model_dir.empty()) r.fail("\"model_dir\" is required");
  if (c.output_dir.empty()) r.fail("\"output_dir\" is required");
  if (c.max_steps <= 0 || c.grad_accum <= 0 || c.batch_size <= 0 || c.max_length <= 1)
    r.fail("max_steps, grad_accum and batch_size must be positive and max_length above 1");
  static const std::set<std::string> formats = {"auto", "tokenized", "alpaca", "chat", "sharegpt", "text"};
  if (!formats.count(c.data_format))
    r.fail("data_format \"" + c.data_format + "\" is not auto, tokenized, alpaca, chat, sharegpt or text");
  if (c.on_bad_record != "stop" && c.on_bad_record != "skip")
    r.fail("on_bad_record \"" + c.on_bad_record + "\" is not stop or skip");
  if (c.base_quant != "none" && c.base_quant != "nf4")
    r.fail("base_quant \"" + c.base_quant + "\" is not none or nf4");
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
