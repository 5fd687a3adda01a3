// forja-cli train --nproc N / --gpus N: the launcher of a data-parallel run (train_cli.h).
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "forja/error.h"
#include "train_cli.h"
#if FORJA_HAS_DIST
#include "forja/dist.h"
#endif

namespace forja::cli {

namespace {

#if FORJA_HAS_DIST
int count_option(const Args& args, const char* name, int fallback, int lowest) {
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

}  // namespace

int launch_train_workers(const Args& args, const std::string& config_path) {
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
  o.stop = &train_stop_requested();
  o.on_message = [](const std::string& m) { std::fprintf(stderr, "forja-cli train: %s\n", m.c_str()); };
  stop_training_on_signals();
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

}  // namespace forja::cli
