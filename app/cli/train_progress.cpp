// forja-cli train's stop flag and the printing of a run's progress (train_cli.h).
#include <csignal>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "train_cli.h"

namespace forja::cli {

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

// [#########...............] for `done` of `total`.
std::string progress_bar(int64_t done, int64_t total, int width) {
  const int filled =
      total > 0 ? static_cast<int>(static_cast<double>(done) / static_cast<double>(total) * width) : 0;
  return "[" + std::string(static_cast<size_t>(filled), '#') +
         std::string(static_cast<size_t>(width - filled), '.') + "]";
}

void emit(const nlohmann::ordered_json& j) {
  std::printf("%s\n", j.dump().c_str());
  std::fflush(stdout);
}

}  // namespace

std::atomic<bool>& train_stop_requested() {
  return g_stop;
}

void stop_training_on_signals() {
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
}

void TrainProgressPrinter::message(const std::string& text) const {
  if (json_)
    emit({{"event", "message"}, {"text", text}});
  else
    std::fprintf(stderr, "%s\n", text.c_str());
}

void TrainProgressPrinter::run_id(int64_t journal_run_id) const {
  if (json_) emit({{"event", "run"}, {"journal_run_id", journal_run_id}});
}

void TrainProgressPrinter::checkpoint(const forja::train::SavedCheckpoint& saved) const {
  if (json_)
    emit({{"event", "checkpoint"}, {"step", saved.step}, {"path", saved.path}});
  else
    std::printf("%scheckpoint at step %lld: %s\n", tty_ ? "\n" : "", static_cast<long long>(saved.step),
                saved.path.c_str());
}

void TrainProgressPrinter::step(const TrainProgress& p) const {
  if (json_) {
    nlohmann::ordered_json j = {{"event", "step"},
                                {"step", p.step},
                                {"total_steps", p.total_steps},
                                {"loss", p.loss},
                                {"lr", p.learning_rate},
                                {"grad_norm", p.grad_norm},
                                {"tokens", p.tokens},
                                {"trained_tokens", p.trained_tokens},
                                {"positions", p.positions},
                                {"tokens_per_s", p.tokens_per_second},
                                {"positions_per_s", p.positions_per_second},
                                {"gpu_allocated_gib", p.gpu_allocated_gib},
                                {"gpu_reserved_gib", p.gpu_reserved_gib},
                                {"elapsed_s", p.elapsed_seconds},
                                {"eta_s", p.eta_seconds}};
    if (p.eval_loss) j["eval_loss"] = *p.eval_loss;
    emit(j);
  } else {
    // On a terminal: one progress bar redrawn in place, with a line kept for each eval and checkpoint.
    // Elsewhere (a log file): a line per step.
    const std::string lead = tty_ ? "\r" + progress_bar(p.step, p.total_steps, 24) + " " : std::string();
    // Real tokens and their rate first; the trained count and the padded positions say what else ran.
    std::printf(
        "%sstep %lld/%lld  loss %.4f%s  lr %.3g  |g| %.3g  %.0f tok/s (%lld tok, %lld trained, %lld pos)  "
        "%.1f GiB  ETA %s%s",
        lead.c_str(), static_cast<long long>(p.step), static_cast<long long>(p.total_steps), p.loss,
        p.eval_loss ? ("  eval " + std::to_string(*p.eval_loss)).c_str() : "", p.learning_rate, p.grad_norm,
        p.tokens_per_second, static_cast<long long>(p.tokens), static_cast<long long>(p.trained_tokens),
        static_cast<long long>(p.positions), p.gpu_reserved_gib, duration(p.eta_seconds).c_str(),
        tty_ ? "\033[K" : "\n");
    if (tty_ && (p.eval_loss || p.step == p.total_steps)) std::printf("\n");
    std::fflush(stdout);
  }
}

void TrainProgressPrinter::done(const TrainResult& r) const {
  if (json_) {
    nlohmann::ordered_json done = {{"event", "done"},          {"outcome", outcome_name(r.outcome)},
                                   {"steps", r.steps_done},    {"resumed_from_step", r.resumed_from_step},
                                   {"adapter", r.adapter_dir}, {"checkpoint", r.last_checkpoint},
                                   {"device", r.device}};
    if (const auto& o = r.out_of_memory) {
      done["out_of_memory"] = {{"message", o->message}, {"error", o->error}, {"found", o->found}};
      if (o->found)
        done["out_of_memory"]["suggested"] = {{"batch_size", o->batch_size},
                                              {"grad_accum", o->grad_accum},
                                              {"activation_checkpointing", o->activation_checkpointing},
                                              {"peak_gib", o->peak_gib}};
    }
    emit(done);
  } else {
    std::printf("%s after %lld steps%s%s\n", outcome_name(r.outcome), static_cast<long long>(r.steps_done),
                r.adapter_dir.empty() ? "" : "; adapter: ", r.adapter_dir.c_str());
  }
}

}  // namespace forja::cli
