// forja-cli's command registry. Each command lives in app/cli/cmd_<name>.cpp and registers itself:
//
//   static int run_info(forja::cli::Args& args) { ... }
//   FORJA_CLI_COMMAND(info, "Show a model folder's facts", "info <model-dir> [--json]", run_info, {"json"});
//
// Commands throw forja::Error for anything the user can fix; main() prints it with its hint.
#pragma once

#include <initializer_list>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace forja::cli {

// Parsed arguments after the command name: positionals, `--key value` / `--key=value` options, and the
// boolean flags the command declared (a declared flag never swallows the next word).
class Args {
 public:
  Args(const std::vector<std::string>& words, const std::set<std::string>& flags);

  bool flag(const std::string& name) const { return flags_.count(name) > 0; }
  std::optional<std::string> option(const std::string& name) const;
  std::string option_or(const std::string& name, const std::string& fallback) const;
  const std::vector<std::string>& positionals() const { return positionals_; }
  // The i-th positional; throws forja::Error naming `what` when it is missing.
  const std::string& positional(size_t i, const char* what) const;
  // Removes the first positional (a sub-command's name) so the sub-command sees its own arguments from 0.
  void drop_first_positional() {
    if (!positionals_.empty()) positionals_.erase(positionals_.begin());
  }
  // Throws forja::Error for any option or flag the command does not know.
  void reject_unknown(std::initializer_list<const char*> known_options) const;

 private:
  std::vector<std::string> positionals_;
  std::map<std::string, std::string> options_;
  std::set<std::string> flags_;
  std::set<std::string> declared_flags_;
};

struct Command {
  std::string name;
  std::string summary;
  std::string usage;
  int (*run)(Args&);
  std::set<std::string> flags;
  std::string (*more_help)() = nullptr;  // printed after the usage by --help
};

std::map<std::string, Command>& registry();

// The i-th positional as a model folder: a folder as it is, or a Hugging Face repo id (org/name[@revision])
// found in the Hub cache, downloaded first when the command was given --pull (its "pull" flag).
std::string model_dir_arg(const Args& args, size_t i);

// A byte count for people: "812 B", "3.42 GiB" (binary units, `decimals` after the point above bytes).
std::string human_bytes(double bytes, int decimals = 2);

struct Registrar {
  explicit Registrar(Command c) { registry().emplace(c.name, std::move(c)); }
  Registrar(const char* name, std::string (*more_help)()) { registry().at(name).more_help = more_help; }
};

}  // namespace forja::cli

#define FORJA_CLI_COMMAND(name, summary, usage, fn, ...)                      \
  static const ::forja::cli::Registrar forja_cli_registrar_##name {           \
    ::forja::cli::Command {                                                   \
#name, summary, usage, fn, std::set < std::string> __VA_ARGS__, nullptr \
    }                                                                         \
  }
// After FORJA_CLI_COMMAND(name, ...) in the same file: `forja-cli name --help` prints more_help() too.
#define FORJA_CLI_MORE_HELP(name, more_help)                        \
  static const ::forja::cli::Registrar forja_cli_more_help_##name { \
#name, more_help                                                \
  }
