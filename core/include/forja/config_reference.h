// The train config's keys in one table (forja/train.h's TrainConfig): the reader checks keys and choices
// against it, `forja-cli train --help` prints it, `--print-config` writes a commented YAML config from it and
// the README's "Config reference" is rendered from it. Also the one rule for a new run's output folder, which
// the window and `forja-cli train` (a config without output_dir) share.
#pragma once

#include <ctime>
#include <filesystem>
#include <string>
#include <vector>

#include "forja/train.h"

namespace forja {

struct ConfigKey {
  std::string section;  // "" (the top level), "lora" or "optimizer"
  std::string name;
  std::string type;     // string, boolean, integer, number, list of strings
  std::string allowed;  // the accepted values or range, for people
  std::string meaning;  // one sentence
  bool required = false;
  std::vector<std::string> choices;  // when only these words are accepted (checked by the reader)
  std::string default_json;          // TrainConfig{}'s value as JSON
  std::string path() const { return section.empty() ? name : section + "." + name; }
};

const std::vector<ConfigKey>& train_config_keys();
// The key in `section` ("" for the top level), or null.
const ConfigKey* find_config_key(const std::string& section, const std::string& name);

// The hint for a key the reader does not know in `section`: where it belongs when another section has it
// ("learning_rate" belongs under "optimizer"), else the closest key's name, else where the keys are listed.
std::string unknown_config_key_hint(const std::string& section, const std::string& name);

// The table for a terminal (train --help) and as Markdown (the README's "Config reference").
std::string train_config_reference_text();
std::string train_config_reference_markdown();
// `config` as a complete YAML config, each key under a comment with its meaning and accepted values; the YAML
// reader (train_config_from_text with a .yaml source) reads it back to the same config.
std::string train_config_to_commented_yaml(const TrainConfig& config);

// Where new runs go: $XDG_DATA_HOME/forja/runs ($HOME/.local/share/forja/runs). Throws forja::Error when
// neither variable gives an absolute folder.
std::filesystem::path default_runs_root();
// A new run's output folder under `runs_root`: "<model folder's name>-<yyyyMMdd-HHmmss>" in local time
// (`run` when there is no model), with "-2", "-3", … added when that name is already taken.
std::filesystem::path new_run_dir(const std::filesystem::path& runs_root, const std::string& model_dir,
                                  std::time_t now);

}  // namespace forja
