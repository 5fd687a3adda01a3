// forja-cli train <config.json|yaml> [--json-progress] [--journal PATH | --no-journal]
// Runs a whole LoRA fine-tune headless: the config is what the GUI's "export config" writes (forja/train.h).
// A progress line per step, or with --json-progress one JSON object per line (the GUI supervises this process
// and reads them). SIGINT / SIGTERM pause the run: it checkpoints and exits 0, and the same command resumes
// it. The run, its metrics and checkpoints go into the run journal (the window's Runs pane): the default one,
// or --journal PATH; <output_dir>/journal.json remembers which row is this run's, so a resume continues it.
// --nproc N (CPU, Gloo) or --gpus N (one GPU each, NCCL) trains data-parallel: this process starts N workers
// (itself, with torchrun's RANK / WORLD_SIZE / ... environment; --nnodes, --node-rank, --master-addr and
// --master-port as torchrun means them) and watches them. Each step then takes batch_size × grad_accum × N
// examples; rank 0 prints, keeps the journal and writes checkpoints and the adapter.
// A config without output_dir trains into a new folder under the runs folder (as the window names it), with
// the config written there so that the same run can be resumed. --help lists every config key;
// --print-config --model DIR --train-file FILE prints a complete commented YAML config.
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "command.h"
#include "forja/config_reference.h"
#include "forja/error.h"
#include "forja/file_util.h"
#include "forja/hub.h"
#include "forja/train.h"
#include "forja/train_run.h"
#if FORJA_HAS_STORE
#include "forja/run_recorder.h"
#endif
#if FORJA_HAS_DIST
#include "forja/dist.h"
#endif

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

#if FORJA_HAS_DIST
int count_option(const forja::cli::Args& args, const char* name, int fallback, int lowest) {
  const auto v = args.option(name);
  if (!v) return fallback;
  char* end = nullptr;
  const long n = std::strtol(v->c_str(), &end, 10);
  if (v->empty() || *end != '\0' || n < lowest || n > 65535)
    throw forja::Error(std::string("--") + name + " " + *v + " is not a count of at least " +
                       std::to_string(lowest));
  return static_cast<int>(n);
}
#endif

// --nproc / --gpus: start the workers and wait for them.
int launch_training(const forja::cli::Args& args, const std::string& config_path) {
#if FORJA_HAS_DIST
  forja::dist::LaunchOptions o;
  o.gpus = args.option("gpus").has_value();
  if (o.gpus && args.option("nproc")) throw forja::Error("--nproc and --gpus exclude each other");
  o.nproc = count_option(args, o.gpus ? "gpus" : "nproc", 1, 1);
  if (o.gpus && !forja::dist::has_nccl())
    throw forja::Error(
        "this build of forja-cli has no NCCL process group, so --gpus cannot be used",
        "Build with a LibTorch that has CUDA and NCCL's headers, or train on CPUs with --nproc.");
  if (!o.gpus && !forja::dist::has_gloo())
    throw forja::Error(
        "this build of forja-cli has no Gloo process group, so --nproc cannot be used",
        "Train on GPUs with --gpus, or build with a LibTorch that has Gloo (Debian: libgloo-dev).");
  o.nnodes = count_option(args, "nnodes", 1, 1);
  o.node_rank = count_option(args, "node-rank", 0, 0);
  o.master_addr = args.option_or("master-addr", "127.0.0.1");
  o.master_port = count_option(args, "master-port", 0, 1);
  o.program = std::filesystem::read_symlink("/proc/self/exe").string();
  o.args = {"train", config_path};
  for (const char* f : {"json-progress", "no-journal"})
    if (args.flag(f)) o.args.push_back(std::string("--") + f);
  if (const auto j = args.option("journal")) o.args.insert(o.args.end(), {"--journal", *j});
  o.stop = &g_stop;
  o.on_message = [](const std::string& m) { std::fprintf(stderr, "forja-cli train: %s\n", m.c_str()); };
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
  const forja::dist::LaunchResult r = forja::dist::launch_workers(o);
  if (r.ok()) return 0;
  std::string report = r.report();
  while (!report.empty() && report.back() == '\n') report.pop_back();
  throw forja::Error(
      "the run stopped: " + report.substr(0, report.find('\n')) +
          (report.find('\n') + 1 < report.size() ? "\n" + report.substr(report.find('\n') + 1) : ""),
      "Rank 0 keeps the last completed step's checkpoint under the output folder's checkpoints/ "
      "(rank 1 writes it when rank 0 is the one that failed); the same command resumes.");
#else
  (void)args;
  (void)config_path;
  throw forja::Error(
      "this build of forja-cli has no torch.distributed (c10d with Gloo), so --nproc and --gpus "
      "cannot be used",
      "On Debian install libgloo-dev and build again.");
#endif
}

// --print-config: the defaults, with the model and dataset of the command line.
int print_config(const forja::cli::Args& args) {
  args.reject_unknown({"model", "train-file"});
  const auto model = args.option("model");
  const auto train_file = args.option("train-file");
  if (!model || !train_file)
    throw forja::Error(
        "--print-config needs --model DIR and --train-file FILE",
        "For example: forja-cli train --print-config --model models/x --train-file data.jsonl");
  forja::TrainConfig c;
  c.model_dir = *model;
  c.train_file = *train_file;
  std::printf("%s", forja::train_config_to_commented_yaml(c).c_str());
  return 0;
}

// A config without output_dir gets a new folder under the runs folder, with the completed config written
// there: every rank of a data-parallel run reads that one, and the same run resumes from it.
std::string choose_output_dir(forja::TrainConfig& config, const std::string& path) {
  if (config.train_file.empty())
    forja::throw_file_error(path, "\"train_file\" is required (the dataset to train on)",
                            "`forja-cli train --help` lists the config keys.");
  if (!config.output_dir.empty()) return path;
  config.output_dir =
      forja::new_run_dir(forja::default_runs_root(), config.model_dir, std::time(nullptr)).string();
  std::error_code ec;
  std::filesystem::create_directories(config.output_dir, ec);
  if (ec)
    forja::throw_file_error(config.output_dir,
                            "cannot be created as the run's output folder: " + ec.message(),
                            "Set output_dir in the config to a folder that can be written.");
  const std::string written = (std::filesystem::path(config.output_dir) / "config.json").string();
  forja::write_file_atomic(written, forja::train_config_to_json(config));
  std::fprintf(stderr, "forja-cli train: training into %s (resume with forja-cli train %s)\n",
               config.output_dir.c_str(), written.c_str());
  return written;
}

int run_train(forja::cli::Args& args) {
  if (args.flag("print-config")) return print_config(args);
  if (args.flag("config-reference-md")) {
    std::printf("%s", forja::train_config_reference_markdown().c_str());
    return 0;
  }
  args.reject_unknown({"journal", "nproc", "gpus", "nnodes", "node-rank", "master-addr", "master-port"});
  std::string path = args.positional(0, "<config.json|yaml>");
  const bool json_progress = args.flag("json-progress");
  const bool no_journal = args.flag("no-journal");
  const bool tty = !json_progress && isatty(fileno(stdout));
  forja::TrainConfig config = forja::train_config_from_text(forja::read_text_file(path), path);
  // Named after the model as typed (a repo id's name, not its snapshot's commit hash).
  path = choose_output_dir(config, path);
  // model_dir may name a Hub repo (org/name): its snapshot in the cache is the folder the run reads.
  config.model_dir = forja::hub::resolve_model_dir(config.model_dir, args.flag("pull")).string();
  if (!config.tokenizer_dir.empty())
    config.tokenizer_dir = forja::hub::resolve_model_dir(config.tokenizer_dir, args.flag("pull")).string();
  if (args.option("nproc") || args.option("gpus")) return launch_training(args, path);

  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
  forja::train::RunHooks hooks;
  // A worker of a data-parallel run (started by --nproc / --gpus, or by hand with torchrun's variables).
#if FORJA_HAS_DIST
  const auto worker = forja::dist::join_data_parallel_run(config);
  if (worker) hooks.data_parallel = worker->group.get();
  // The other ranks train in silence: rank 0 speaks for the run (their errors still reach stderr).
  if (worker && worker->rank != 0) {
    hooks.on_progress = [](const forja::TrainProgress&) {
      return g_stop.load() ? forja::TrainControl::Pause : forja::TrainControl::Continue;
    };
    forja::train::run_training_from_files(config, hooks);
    return 0;
  }
#endif
  hooks.on_message = [&](const std::string& m) {
    if (json_progress)
      emit({{"event", "message"}, {"text", m}});
    else
      std::fprintf(stderr, "%s\n", m.c_str());
  };
  // Before the journal's marker is read or written: a second run on this folder stops here.
  const auto lock = forja::train::lock_output_dir(config.output_dir);
#if FORJA_HAS_STORE
  std::unique_ptr<forja::RunRecorder> journal;
  if (!no_journal) {
    forja::NewRun r;
    r.name = config.run_name.empty() ? std::filesystem::path(config.output_dir).filename().string()
                                     : config.run_name;
    r.notes = config.notes;
    r.model_dir = config.model_dir;
    r.dataset_path = config.train_file;
    r.config_json = forja::train_config_to_json(config);
    r.total_steps = config.max_steps;
    r.worker_pid = getpid();
    journal = std::make_unique<forja::RunRecorder>(args.option_or("journal", ""), config.output_dir, r,
                                                   hooks.on_message);
  }
#else
  // No SQLite in this build: the run keeps no history (the recorder's calls below are never made).
  struct NoRecorder {
    int64_t id() const { return 0; }
    void start(int64_t, const std::vector<forja::train::SavedCheckpoint>&) {}
    void step(const forja::TrainProgress&) {}
    void checkpoint(const forja::train::SavedCheckpoint&, double,
                    const std::vector<forja::train::SavedCheckpoint>&) {}
    void done(const forja::TrainResult&) {}
    void failed(const forja::Error&) {}
  };
  std::unique_ptr<NoRecorder> journal;
  (void)no_journal;
#endif
  hooks.on_start = [&](int64_t step, const std::vector<forja::train::SavedCheckpoint>& on_disk) {
    if (journal) journal->start(step, on_disk);
  };
  hooks.on_save_failed = [&](const forja::Error& e) {
    hooks.on_message("cannot save the run: " + e.message() +
                     ". Its state is kept in memory: free some space and the save is retried every 10 s; "
                     "stop the run (Ctrl-C) to give up on the steps since the last checkpoint.");
    for (int i = 0; i < 100 && !g_stop.load(); ++i) usleep(100000);
    return !g_stop.load();
  };
  hooks.on_checkpoint = [&](const forja::train::SavedCheckpoint& saved, double loss,
                            const std::vector<forja::train::SavedCheckpoint>& on_disk) {
    if (journal) journal->checkpoint(saved, loss, on_disk);
    if (json_progress)
      emit({{"event", "checkpoint"}, {"step", saved.step}, {"path", saved.path}});
    else
      std::printf("%scheckpoint at step %lld: %s\n", tty ? "\n" : "", static_cast<long long>(saved.step),
                  saved.path.c_str());
  };
  if (json_progress && journal && journal->id() > 0)
    emit({{"event", "run"}, {"journal_run_id", journal->id()}});
  hooks.on_progress = [&](const forja::TrainProgress& p) {
    if (journal) journal->step(p);
    if (json_progress) {
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
      const std::string lead = tty ? "\r" + progress_bar(p.step, p.total_steps, 24) + " " : std::string();
      // Real tokens and their rate first; the trained count and the padded positions say what else ran.
      std::printf(
          "%sstep %lld/%lld  loss %.4f%s  lr %.3g  |g| %.3g  %.0f tok/s (%lld tok, %lld trained, %lld pos)  "
          "%.1f GiB  ETA %s%s",
          lead.c_str(), static_cast<long long>(p.step), static_cast<long long>(p.total_steps), p.loss,
          p.eval_loss ? ("  eval " + std::to_string(*p.eval_loss)).c_str() : "", p.learning_rate, p.grad_norm,
          p.tokens_per_second, static_cast<long long>(p.tokens), static_cast<long long>(p.trained_tokens),
          static_cast<long long>(p.positions), p.gpu_reserved_gib, duration(p.eta_seconds).c_str(),
          tty ? "\033[K" : "\n");
      if (tty && (p.eval_loss || p.step == p.total_steps)) std::printf("\n");
      std::fflush(stdout);
    }
    return g_stop.load() ? forja::TrainControl::Pause : forja::TrainControl::Continue;
  };
  forja::TrainResult r;
  try {
    r = forja::train::run_training_from_files(config, hooks);
  } catch (const forja::Error& e) {
    if (journal) journal->failed(e);
    throw;
  }
  if (journal) journal->done(r);
  if (json_progress) {
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
  return 0;
}

}  // namespace

FORJA_CLI_COMMAND(
    train, "Fine-tune a model with LoRA, headless (resumes from its last checkpoint)",
    "train <config.json|yaml> [--pull] [--json-progress] [--journal PATH | --no-journal] [--nproc N | --gpus N "
    "[--nnodes N --node-rank R --master-addr HOST --master-port PORT]]\n"
    "       forja-cli train --print-config --model DIR --train-file FILE   (a complete commented YAML "
    "config)\n"
    "       forja-cli train --config-reference-md   (the config keys as the README's Markdown table)",
    run_train, {"json-progress", "no-journal", "print-config", "config-reference-md", "pull"});
FORJA_CLI_MORE_HELP(train, forja::train_config_reference_text);
