// forja-cli pull <repo-id>[@revision]: a model from the Hugging Face Hub into the cache huggingface_hub uses.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "command.h"
#include "forja/hub.h"

namespace {

std::vector<std::string> split_globs(const std::optional<std::string>& text) {
  std::vector<std::string> out;
  if (!text) return out;
  std::stringstream in(*text);
  std::string item;
  while (std::getline(in, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

void print_plan(const forja::hub::PullPlan& p) {
  std::printf("Repository  %s @ %s (commit %s)\n", p.repo_id.c_str(), p.revision.c_str(), p.commit.c_str());
  std::printf(
      "Model       %s: %s\n", p.model_type.empty() ? "?" : p.model_type.c_str(),
      p.architecture_supported ? p.support_note.c_str() : ("not loadable: " + p.support_note).c_str());
  std::printf("Tokenizer   %s\n",
              p.tokenizer.empty() ? "none (Forja cannot chat with or train it)" : p.tokenizer.c_str());
  std::printf("Files       %zu, %s (%s to download, %s free in the cache)\n", p.files.size(),
              forja::cli::human_bytes(double(p.total_bytes), 1).c_str(),
              forja::cli::human_bytes(double(p.download_bytes), 1).c_str(),
              forja::cli::human_bytes(double(p.free_bytes), 1).c_str());
  for (const auto& f : p.files)
    std::printf("  %10s  %s\n", forja::cli::human_bytes(double(f.size), 1).c_str(), f.path.c_str());
  if (!p.left_out.empty()) {
    std::printf("Left out    %zu file(s):\n", p.left_out.size());
    for (const auto& f : p.left_out) std::printf("              %s\n", f.c_str());
  }
}

int run_pull(forja::cli::Args& args) {
  args.reject_unknown({"include", "exclude"});
  forja::hub::PullOptions o;
  o.ref = forja::hub::parse_repo_ref(args.positional(0, "<repo-id>"));
  o.include = split_globs(args.option("include"));
  o.exclude = split_globs(args.option("exclude"));
  o.settings = forja::hub::settings_from_environment();
  const bool json_progress = args.flag("json-progress");
  if (args.flag("dry-run")) {
    const auto plan = forja::hub::plan_pull(o);
    if (json_progress) {
      nlohmann::ordered_json j = {{"repo_id", plan.repo_id},
                                  {"revision", plan.revision},
                                  {"commit", plan.commit},
                                  {"model_type", plan.model_type},
                                  {"supported", plan.architecture_supported},
                                  {"support_note", plan.support_note},
                                  {"tokenizer", plan.tokenizer},
                                  {"total_bytes", plan.total_bytes},
                                  {"download_bytes", plan.download_bytes},
                                  {"free_bytes", plan.free_bytes},
                                  {"left_out", plan.left_out}};
      for (const auto& f : plan.files) j["files"].push_back({{"path", f.path}, {"size", f.size}});
      std::printf("%s\n", j.dump().c_str());
    } else {
      print_plan(plan);
    }
    return 0;
  }
  const bool tty = !json_progress && isatty(fileno(stderr));
  auto last = std::chrono::steady_clock::time_point{};
  const auto progress = [&](const forja::hub::PullProgress& p) {
    const auto now = std::chrono::steady_clock::now();
    const bool end = p.file.empty();
    if (!end && now - last < std::chrono::milliseconds(json_progress ? 250 : 100)) return;
    last = now;
    if (json_progress) {
      nlohmann::ordered_json j = {{"event", end ? "done" : "progress"},
                                  {"file", p.file},
                                  {"file_done", p.file_done},
                                  {"file_total", p.file_total},
                                  {"done", p.done},
                                  {"total", p.total},
                                  {"bytes_per_second", p.bytes_per_second}};
      std::printf("%s\n", j.dump().c_str());
      std::fflush(stdout);
    } else if (tty && !end) {
      const double eta = p.bytes_per_second > 0 ? double(p.total - p.done) / p.bytes_per_second : 0;
      const int width = 24;
      const int filled = p.total ? int(double(p.done) / double(p.total) * width) : 0;
      std::fprintf(stderr, "\r[%s%s] %5.1f%%  %s/s  ETA %ds  %-40.40s",
                   std::string(size_t(filled), '#').c_str(), std::string(size_t(width - filled), '.').c_str(),
                   p.total ? 100.0 * double(p.done) / double(p.total) : 100.0,
                   forja::cli::human_bytes(p.bytes_per_second, 1).c_str(), int(eta), p.file.c_str());
    }
  };
  const auto plan = forja::hub::plan_pull(o);
  if (!json_progress) {
    std::printf("Pulling %s @ %s: %zu file(s), %s to download\n", plan.repo_id.c_str(), plan.commit.c_str(),
                plan.files.size(), forja::cli::human_bytes(double(plan.download_bytes), 1).c_str());
    if (!plan.architecture_supported)
      std::printf("Note: Forja cannot load this model yet: %s\n", plan.support_note.c_str());
    std::fflush(stdout);
  }
  const auto dir = forja::hub::pull(o, progress);
  if (tty) std::fprintf(stderr, "\n");
  if (json_progress) {
    std::printf("%s\n", nlohmann::ordered_json{{"event", "pulled"}, {"dir", dir.string()}}.dump().c_str());
  } else {
    std::printf("Model folder: %s\n", dir.string().c_str());
  }
  return 0;
}

}  // namespace

FORJA_CLI_COMMAND(
    pull, "Download a model from the Hugging Face Hub into its cache",
    "pull <org/name>[@revision] [--include GLOBS] [--exclude GLOBS] [--dry-run] [--json-progress]\n"
    "  GLOBS: comma-separated fnmatch patterns, as huggingface_hub's allow/ignore patterns.\n"
    "  Without --include: config, tokenizer and chat template files and the safetensors weights\n"
    "  (never .bin / .pt pickles). The cache is huggingface_hub's: $HF_HUB_CACHE, else\n"
    "  $HF_HOME/hub, else ~/.cache/huggingface/hub. HF_ENDPOINT (mirror), HF_TOKEN or\n"
    "  $HF_HOME/token (gated models), HF_HUB_OFFLINE=1 and https_proxy are honoured.\n"
    "  An interrupted pull resumes where it stopped when run again.",
    run_pull, {"dry-run", "json-progress"});
