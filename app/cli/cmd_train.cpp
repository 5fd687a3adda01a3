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

#include <cstdio>
#include <ctime>
#include <filesystem>
#include <memory>

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
#include "train_cli.h"

namespace {

using forja::cli::train_stop_requested;

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
  if (args.option("nproc") || args.option("gpus")) return forja::cli::launch_train_workers(args, path);

  forja::cli::stop_training_on_signals();
  const forja::cli::TrainProgressPrinter print(json_progress, tty);
  forja::train::RunHooks hooks;
  // A worker of a data-parallel run (started by --nproc / --gpus, or by hand with torchrun's variables).
#if FORJA_HAS_DIST
  const auto worker = forja::dist::join_data_parallel_run(config);
  if (worker) hooks.data_parallel = worker->group.get();
  // The other ranks train in silence: rank 0 speaks for the run (their errors still reach stderr).
  if (worker && worker->rank != 0) {
    hooks.on_progress = [](const forja::TrainProgress&) {
      return train_stop_requested().load() ? forja::TrainControl::Pause : forja::TrainControl::Continue;
    };
    forja::train::run_training_from_files(config, hooks);
    return 0;
  }
#endif
  hooks.on_message = [&](const std::string& m) { print.message(m); };
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
    for (int i = 0; i < 100 && !train_stop_requested().load(); ++i) usleep(100000);
    return !train_stop_requested().load();
  };
  hooks.on_checkpoint = [&](const forja::train::SavedCheckpoint& saved, double loss,
                            const std::vector<forja::train::SavedCheckpoint>& on_disk) {
    if (journal) journal->checkpoint(saved, loss, on_disk);
    print.checkpoint(saved);
  };
  if (journal && journal->id() > 0) print.run_id(journal->id());
  hooks.on_progress = [&](const forja::TrainProgress& p) {
    if (journal) journal->step(p);
    print.step(p);
    return train_stop_requested().load() ? forja::TrainControl::Pause : forja::TrainControl::Continue;
  };
  forja::TrainResult r;
  try {
    r = forja::train::run_training_from_files(config, hooks);
  } catch (const forja::Error& e) {
    if (journal) journal->failed(e);
    throw;
  }
  if (journal) journal->done(r);
  print.done(r);
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
