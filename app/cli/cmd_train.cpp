// forja-cli train <config.json> [--json-progress]
// Runs a whole LoRA fine-tune headless: the config is what the GUI's "export config" writes (forja/train.h).
// A progress line per step, or with --json-progress one JSON object per line (the GUI supervises this process
// and reads them). SIGINT / SIGTERM pause the run: it checkpoints and exits 0, and the same command resumes
// it.
#include <atomic>
#include <csignal>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "command.h"
#include "forja/error.h"
#include "forja/file_util.h"
#include "forja/train.h"
#include "run.h"

namespace {

std::atomic<bool> g_stop{false};

extern "C" void on_stop_signal(int) {
  g_stop.store(true);
}

const char* outcome_name(forja::TrainOutcome o) {
  switch (o) {
    case forja::TrainOutcome::Finished:
      return "finished";
    case forja::TrainOutcome::EarlyStopped:
      return "early_stopped";
    case forja::TrainOutcome::Paused:
      return "paused";
    case forja::TrainOutcome::Cancelled:
      return "cancelled";
  }
  return "finished";
}

std::string duration(double s) {
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%dh%02dm", int(s / 3600), int(s / 60) % 60);
  else
    std::snprintf(buf, sizeof buf, "%dm%02ds", int(s / 60), int(s) % 60);
  return buf;
}

void emit(const nlohmann::ordered_json& j) {
  std::printf("%s\n", j.dump().c_str());
  std::fflush(stdout);
}

int run_train(forja::cli::Args& args) {
  args.reject_unknown({});
  const std::string path = args.positional(0, "<config.json>");
  const bool json_progress = args.flag("json-progress");
  forja::TrainConfig config = forja::train_config_from_json(forja::read_text_file(path), path);

  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
  forja::train::RunHooks hooks;
  hooks.on_message = [&](const std::string& m) {
    if (json_progress)
      emit({{"event", "message"}, {"text", m}});
    else
      std::fprintf(stderr, "%s\n", m.c_str());
  };
  hooks.on_progress = [&](const forja::TrainProgress& p) {
    if (json_progress) {
      nlohmann::ordered_json j = {{"event", "step"},
                                  {"step", p.step},
                                  {"total_steps", p.total_steps},
                                  {"loss", p.loss},
                                  {"lr", p.learning_rate},
                                  {"grad_norm", p.grad_norm},
                                  {"tokens", p.tokens},
                                  {"tokens_per_s", p.tokens_per_second},
                                  {"gpu_allocated_gib", p.gpu_allocated_gib},
                                  {"gpu_reserved_gib", p.gpu_reserved_gib},
                                  {"elapsed_s", p.elapsed_seconds},
                                  {"eta_s", p.eta_seconds}};
      if (p.eval_loss) j["eval_loss"] = *p.eval_loss;
      if (!p.checkpoint.empty()) j["checkpoint"] = p.checkpoint;
      emit(j);
    } else {
      std::printf("step %lld/%lld  loss %.4f%s  lr %.3g  |g| %.3g  %.0f tok/s  %.1f GiB  ETA %s%s\n",
                  static_cast<long long>(p.step), static_cast<long long>(p.total_steps), p.loss,
                  p.eval_loss ? ("  eval " + std::to_string(*p.eval_loss)).c_str() : "", p.learning_rate,
                  p.grad_norm, p.tokens_per_second, p.gpu_reserved_gib, duration(p.eta_seconds).c_str(),
                  p.checkpoint.empty() ? "" : "  [checkpoint]");
      std::fflush(stdout);
    }
    return g_stop.load() ? forja::TrainControl::Pause : forja::TrainControl::Continue;
  };
  forja::TrainResult r = forja::train::run_training_from_files(config, hooks);
  if (json_progress) {
    emit({{"event", "done"},
          {"outcome", outcome_name(r.outcome)},
          {"steps", r.steps_done},
          {"resumed_from_step", r.resumed_from_step},
          {"adapter", r.adapter_dir},
          {"checkpoint", r.last_checkpoint}});
  } else {
    std::printf("%s after %lld steps%s%s\n", outcome_name(r.outcome), static_cast<long long>(r.steps_done),
                r.adapter_dir.empty() ? "" : "; adapter: ", r.adapter_dir.c_str());
  }
  return 0;
}

}  // namespace

FORJA_CLI_COMMAND(train, "Fine-tune a model with LoRA, headless (resumes from its last checkpoint)",
                  "train <config.json> [--json-progress]", run_train, {"json-progress"});
