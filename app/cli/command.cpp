#include "command.h"

#include <cstdio>

#include "forja/error.h"
#include "forja/hub.h"

namespace forja::cli {

std::map<std::string, Command>& registry() {
  static std::map<std::string, Command> commands;
  return commands;
}

Args::Args(const std::vector<std::string>& words, const std::set<std::string>& flags)
    : declared_flags_(flags) {
  for (size_t i = 0; i < words.size(); ++i) {
    const std::string& w = words[i];
    if (w.size() > 2 && w.rfind("--", 0) == 0) {
      std::string key = w.substr(2);
      auto eq = key.find('=');
      if (eq != std::string::npos) {
        options_[key.substr(0, eq)] = key.substr(eq + 1);
      } else if (declared_flags_.count(key) || key == "help") {
        flags_.insert(key);
      } else if (i + 1 < words.size()) {
        options_[key] = words[++i];
      } else {
        throw Error("option --" + key + " needs a value");
      }
    } else {
      positionals_.push_back(w);
    }
  }
}

std::optional<std::string> Args::option(const std::string& name) const {
  auto it = options_.find(name);
  if (it == options_.end()) return std::nullopt;
  return it->second;
}

std::string Args::option_or(const std::string& name, const std::string& fallback) const {
  return option(name).value_or(fallback);
}

const std::string& Args::positional(size_t i, const char* what) const {
  if (i >= positionals_.size()) throw Error(std::string("missing argument: ") + what);
  return positionals_[i];
}

void Args::reject_unknown(std::initializer_list<const char*> known_options) const {
  std::set<std::string> known(known_options.begin(), known_options.end());
  for (const auto& [key, value] : options_) {
    if (!known.count(key)) throw Error("unknown option --" + key, "Run forja-cli help to see the options.");
  }
  for (const auto& f : flags_) {
    if (f != "help" && !declared_flags_.count(f)) throw Error("unknown flag --" + f);
  }
}

std::string model_dir_arg(const Args& args, size_t i) {
  const std::string& text = args.positional(i, "<model-dir>");
  int last_percent = -1;
  const auto progress = [&](const hub::PullProgress& p) {
    const int percent = p.total ? int(100 * p.done / p.total) : 100;
    if (percent == last_percent) return;
    last_percent = percent;
    std::fprintf(stderr, "\rPulling %s: %3d%%", text.c_str(), percent);
    if (p.file.empty()) std::fprintf(stderr, "\n");
  };
  return hub::resolve_model_dir(text, args.flag("pull"), progress).string();
}

std::string human_bytes(double bytes, int decimals) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) bytes /= 1024, ++u;
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f %s", u == 0 ? 0 : decimals, bytes, units[u]);
  return buf;
}

}  // namespace forja::cli
