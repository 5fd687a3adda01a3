// The train config's reference table and what is rendered from it. Defaults are not written here: they are
// read from a default TrainConfig through train_config_to_json, so the table cannot disagree with the struct.
#include "forja/config_reference.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "forja/error.h"

namespace forja {
using nlohmann::json;

namespace {

ConfigKey k(std::string section, std::string name, std::string type, std::string allowed, std::string meaning,
            bool required = false, std::vector<std::string> choices = {}) {
  ConfigKey key;
  key.section = std::move(section);
  key.name = std::move(name);
  key.type = std::move(type);
  key.allowed = std::move(allowed);
  key.meaning = std::move(meaning);
  key.required = required;
  key.choices = std::move(choices);
  return key;
}

std::vector<ConfigKey> make_table() {
  std::vector<ConfigKey> t = {
      k("", "model_dir", "string", "a folder",
        "The Hugging Face model folder to fine-tune (config.json, weights).", true),
      k("", "output_dir", "string", "a folder, or empty",
        "Where checkpoints/ and the final adapter/ go; empty: a new folder in $XDG_DATA_HOME/forja/runs "
        "(~/.local/share/forja/runs) named after the model and the time, as the window names it."),
      k("", "run_name", "string", "text, or empty",
        "The run's name in the Runs pane and the journal; empty: output_dir's folder name."),
      k("", "notes", "string", "text", "Your notes on the run, kept with it in the journal."),
      k("", "device", "string", "auto, cpu, cuda, cuda:N",
        "Where to train; auto takes CUDA when a GPU is visible."),
      k("", "dtype", "string", "auto, fp32, bf16, fp16",
        "The frozen base's dtype; auto is bf16 on CUDA and fp32 on the CPU."),
      k("", "base_quant", "string", "none, nf4",
        "nf4 quantizes the base's projections to 4 bits (QLoRA); none keeps them in dtype.", false,
        {"none", "nf4"}),
      k("", "nf4_double_quant", "boolean", "true, false", "With nf4: store the block scales in 8 bits too."),
      k("", "nf4_cache", "boolean", "true, false",
        "With nf4: keep the quantized base in the user's cache so the next run skips quantizing."),
      k("", "train_file", "string", "a file",
        "The dataset: JSONL or a JSON array of alpaca, chat, ShareGPT or text records, or pre-tokenized "
        "JSONL.",
        true),
      k("", "eval_file", "string", "a file, or empty", "A held-out dataset in the same shape as train_file."),
      k("", "data_format", "string", "auto, tokenized, alpaca, chat, sharegpt, text",
        "The records' shape; auto decides per record.", false,
        {"auto", "tokenized", "alpaca", "chat", "sharegpt", "text"}),
      k("", "tokenizer_dir", "string", "a folder, or empty",
        "Where tokenizer.json or tokenizer.model are; empty: model_dir."),
      k("", "eval_fraction", "number", "in [0, 1)",
        "The share of train_file held out for eval when there is no eval_file."),
      k("", "packing", "boolean", "true, false",
        "Several short examples per row (attention stays inside each)."),
      k("", "train_on_prompt", "boolean", "true, false", "Loss on every token, not only the answers'."),
      k("", "on_bad_record", "string", "stop, skip",
        "stop: a bad record ends the run naming file:line; skip: it is skipped and counted.", false,
        {"stop", "skip"}),
      k("", "shuffle", "boolean", "true, false",
        "A new order every epoch (by seed); false keeps the file's order."),
      k("", "init_adapter", "string", "a PEFT adapter folder, or empty",
        "Start from this adapter (same rank, alpha and targets) instead of a random init."),
      k("", "batch_size", "integer", "at least 1", "Rows per micro-batch."),
      k("", "max_length", "integer", "in [2, 1048576]",
        "Tokens per example (longer ones are cut) and per packed row."),
      k("", "max_steps", "integer", "at least 1", "Optimizer steps to train."),
      k("", "epochs", "number", "in [0, 1000000]",
        "Passes over the training rows instead of max_steps, rounded up to whole steps; 0: use max_steps."),
      k("", "grad_accum", "integer", "in [1, 65536]", "Micro-batches per optimizer step."),
      k("", "activation_checkpointing", "boolean", "true, false",
        "Recompute each block in backward: less memory, about a third more compute."),
      k("", "selective_checkpointing", "boolean", "true, false",
        "Recompute only norms, RoPE and activations in backward; lighter than activation_checkpointing."),
      k("", "eval_every", "integer", "0 or more", "Steps between evals; 0: no periodic eval."),
      k("", "early_stopping_patience", "integer", "0 or more",
        "Evals without improvement before stopping; 0: off."),
      k("", "early_stopping_min_delta", "number", "0 or more",
        "The eval loss drop that counts as an improvement."),
      k("", "checkpoint_every", "integer", "0 or more",
        "Steps between checkpoints; 0: only when the run stops."),
      k("", "keep_checkpoints", "integer", "at least 1", "How many checkpoints stay on disk."),
      k("", "seed", "integer", "0 or more", "Seeds the LoRA init, the data order and dropout."),
      k("lora", "rank", "integer", "in [1, 4096]", "The LoRA rank r."),
      k("lora", "alpha", "number", "positive",
        "The LoRA scale's numerator: the update is scaled by alpha / r."),
      k("lora", "dropout", "number", "in [0, 1)", "Dropout on the LoRA branch's input."),
      k("lora", "use_rslora", "boolean", "true, false", "Scale by alpha / sqrt(r) instead of alpha / r."),
      k("lora", "target_modules", "list of strings", "projection names of the model",
        "The linear layers that get an adapter (for example q_proj, v_proj)."),
      k("optimizer", "learning_rate", "number", "positive", "AdamW's peak learning rate."),
      k("optimizer", "weight_decay", "number", "0 or more", "AdamW's decoupled weight decay."),
      k("optimizer", "beta1", "number", "in [0, 1)", "AdamW's first-moment decay."),
      k("optimizer", "beta2", "number", "in [0, 1)", "AdamW's second-moment decay."),
      k("optimizer", "eps", "number", "positive", "AdamW's denominator epsilon."),
      k("optimizer", "max_grad_norm", "number", "any; 0 or less: no clipping",
        "Clip the global gradient norm to this."),
      k("optimizer", "schedule", "string", "constant, linear, cosine",
        "The learning rate's decay after warm-up.", false, {"constant", "linear", "cosine"}),
      k("optimizer", "warmup_steps", "integer", "0 or more", "Steps of linear warm-up from 0."),
  };
  const json defaults = json::parse(train_config_to_json(TrainConfig{}));
  for (ConfigKey& k : t) {
    const json& scope = k.section.empty() ? defaults : defaults.at(k.section);
    k.default_json = scope.at(k.name).dump();
  }
  return t;
}

// Levenshtein distance, for "did you mean".
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string where(const std::string& section) {
  return section.empty() ? "at the top level" : "under \"" + section + "\"";
}

// Shown in --help and the README for a key's default.
std::string default_text(const ConfigKey& k) {
  if (k.required) return "(required)";
  if (k.default_json == "\"\"") return "(empty)";
  return k.default_json;
}

void wrap(std::ostringstream& out, const std::string& text, const std::string& lead, size_t width) {
  std::istringstream words(text);
  std::string word, line;
  while (words >> word) {
    if (!line.empty() && lead.size() + line.size() + 1 + word.size() > width) {
      out << lead << line << "\n";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
  }
  if (!line.empty()) out << lead << line << "\n";
}

// A value as YAML's flow style writes it: JSON's scalars are valid YAML, lists as [a, b].
std::string yaml_value(const json& v) {
  if (!v.is_array()) return v.dump();
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i].dump();
  return s + "]";
}

}  // namespace

const std::vector<ConfigKey>& train_config_keys() {
  static const std::vector<ConfigKey> table = make_table();
  return table;
}

const ConfigKey* find_config_key(const std::string& section, const std::string& name) {
  for (const ConfigKey& k : train_config_keys())
    if (k.section == section && k.name == name) return &k;
  return nullptr;
}

std::string unknown_config_key_hint(const std::string& section, const std::string& name) {
  for (const ConfigKey& k : train_config_keys())
    if (k.name == name && k.section != section) return "\"" + name + "\" belongs " + where(k.section) + ".";
  const ConfigKey* best = nullptr;
  size_t best_distance = 0;
  for (const ConfigKey& k : train_config_keys()) {
    size_t d = edit_distance(name, k.name);
    // "model" for "model_dir": a key's own first word is as good as a one-letter slip.
    if (k.name.rfind(name + "_", 0) == 0) d = 1;
    if (k.section != section) ++d;  // prefer the section the key was written in
    if (!best || d < best_distance) best = &k, best_distance = d;
  }
  if (best && best_distance <= std::max<size_t>(2, name.size() / 4))
    return "Did you mean \"" + best->name + "\"" +
           (best->section == section ? "" : " " + where(best->section)) +
           "? `forja-cli train --help` lists the config keys.";
  return "`forja-cli train --help` lists the config keys.";
}

std::string train_config_reference_text() {
  std::ostringstream out;
  out << "Config keys (a JSON or YAML file; every key but model_dir and train_file is optional):\n";
  std::string section = "-";
  for (const ConfigKey& k : train_config_keys()) {
    if (k.section != section) {
      section = k.section;
      out << "\n" << (section.empty() ? std::string("top level") : section + ":") << "\n";
    }
    out << "  " << k.path() << "  (" << k.type << (k.required ? ", required" : ", default " + default_text(k))
        << "; " << k.allowed << ")\n";
    wrap(out, k.meaning, "      ", 100);
  }
  out << "\n`forja-cli train --print-config --model DIR --train-file FILE` writes all of them as YAML.\n";
  return out.str();
}

std::string train_config_reference_markdown() {
  const auto cell = [](std::string s) {
    for (size_t i = 0; (i = s.find('|', i)) != std::string::npos; i += 2) s.replace(i, 1, "\\|");
    return s;
  };
  std::ostringstream out;
  out << "| key | type | default | accepted | meaning |\n| --- | --- | --- | --- | --- |\n";
  for (const ConfigKey& k : train_config_keys())
    out << "| `" << k.path() << "` | " << k.type << " | " << cell(default_text(k)) << " | " << cell(k.allowed)
        << " | " << cell(k.meaning) << " |\n";
  return out.str();
}

std::string train_config_to_commented_yaml(const TrainConfig& config) {
  const json j = json::parse(train_config_to_json(config));
  std::ostringstream out;
  out << "# A forja-cli train config (YAML). Each key says what it does and what it accepts; the values are "
         "the\n"
         "# defaults unless the command line set them.\n";
  std::string section = "-";
  for (const ConfigKey& k : train_config_keys()) {
    const std::string lead = k.section.empty() ? "" : "  ";
    if (k.section != section) {
      section = k.section;
      if (!section.empty()) out << "\n" << section << ":\n";
    }
    out << "\n";
    wrap(out, k.meaning + " Accepts: " + k.allowed + ".", lead + "# ", 100);
    const json& v = k.section.empty() ? j.at(k.name) : j.at(k.section).at(k.name);
    out << lead << k.name << ": " << yaml_value(v) << "\n";
  }
  return out.str();
}

std::filesystem::path default_runs_root() {
  const char* xdg = std::getenv("XDG_DATA_HOME");
  // The XDG spec says a relative XDG_DATA_HOME is invalid and must be ignored.
  if (xdg && *xdg && std::filesystem::path(xdg).is_absolute())
    return std::filesystem::path(xdg) / "forja" / "runs";
  const char* home = std::getenv("HOME");
  if (!home || !*home || !std::filesystem::path(home).is_absolute())
    throw Error(
        "neither XDG_DATA_HOME nor HOME is set, so there is no runs folder for a config without output_dir",
        "Set output_dir in the config, or set HOME.");
  return std::filesystem::path(home) / ".local" / "share" / "forja" / "runs";
}

std::filesystem::path new_run_dir(const std::filesystem::path& runs_root, const std::string& model_dir,
                                  std::time_t now) {
  std::string name = std::filesystem::path(model_dir).lexically_normal().filename().string();
  if (name.empty() || name == ".")
    name = std::filesystem::path(model_dir).lexically_normal().parent_path().filename().string();
  if (name.empty()) name = "run";
  std::tm local{};
  localtime_r(&now, &local);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &local);
  const std::string base = name + "-" + stamp;
  std::filesystem::path p = runs_root / base;
  for (int n = 2; std::filesystem::exists(p); ++n) p = runs_root / (base + "-" + std::to_string(n));
  return p;
}

}  // namespace forja
