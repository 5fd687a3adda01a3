// Checkpoints of runs on a machine with a GPU. A run on cuda paused at a checkpoint and resumed with the
// generators scrambled (as a new process would find them) repeats the uninterrupted run's losses: the
// checkpoint holds the GPU's generator, which LoRA dropout draws from. A run on the CPU on the same machine
// saves and resumes without ever opening a CUDA context (which costs GPU memory and start-up time).
#include <ATen/ATen.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <torch/cuda.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>

#include "forja/train.h"
#include "forja/train_run.h"
#include "gpu_harness.h"
#include "train_data.h"
#include "train_run_config.h"

namespace fs = std::filesystem;

namespace {

struct Losses {
  std::map<int64_t, double> by_step;
  forja::TrainResult result;
};

// Runs (or resumes) the run of `config`; `pause_at` > 0 pauses there, which writes a checkpoint.
Losses run(const forja::TrainConfig& config, int64_t pause_at) {
  Losses out;
  forja::train::RunHooks hooks;
  hooks.on_progress = [&](const forja::TrainProgress& p) {
    out.by_step[p.step] = p.loss;
    return p.step == pause_at ? forja::TrainControl::Pause : forja::TrainControl::Continue;
  };
  out.result = forja::train::run_training_from_files(config, hooks);
  return out;
}

// What a fresh process would find instead of the state the pause left: other draws from both generators.
void scramble_generators(bool cuda) {
  (void)at::rand({97});
  if (cuda) (void)at::rand({97}, at::TensorOptions().device(at::kCUDA, 0));
}

forja::TrainConfig config_for(const fs::path& root, const std::string& name, const std::string& device) {
  forja::TrainConfig c;
  forja_test::write_run_config(root / name, root, 10, [&](forja::TrainConfig& e) {
    e.device = device;
    e.checkpoint_every = 0;  // the pause is the only checkpoint
    e.eval_every = 0;
    e.optimizer.learning_rate = 2e-2;  // adapters that move, so that a dropout mask shows in the loss
    c = e;
  });
  return c;
}

double worst_difference(const Losses& whole, const Losses& resumed, int64_t from) {
  double worst = 0;
  for (const auto& [step, loss] : resumed.by_step)
    if (step > from)
      worst = std::max(worst, std::abs(loss - whole.by_step.at(step)) / whole.by_step.at(step));
  return worst;
}

void check_resume(const fs::path& root, const std::string& device, double tolerance) {
  const bool cuda = device != "cpu";
  const Losses whole = run(config_for(root, device + "-whole", device), 0);
  const forja::TrainConfig split = config_for(root, device + "-split", device);
  const Losses first = run(split, 4);
  FORJA_CHECK(first.result.outcome == forja::TrainOutcome::Paused, "%s: the run did not pause",
              device.c_str());
  scramble_generators(cuda);
  const Losses second = run(split, 0);
  FORJA_CHECK(second.result.resumed_from_step == 4, "%s: resumed from step %lld", device.c_str(),
              static_cast<long long>(second.result.resumed_from_step));
  FORJA_CHECK(second.by_step.size() == 6 && second.by_step.begin()->first == 5,
              "%s: the resumed run did %zu steps", device.c_str(), second.by_step.size());
  FORJA_CHECK(whole.result.device == (cuda ? "cuda:0" : "cpu"), "%s: trained on %s", device.c_str(),
              whole.result.device.c_str());
  const double worst = worst_difference(whole, second, 4);
  std::printf("%s: steps 5-10 resumed vs uninterrupted, worst relative loss difference %.3g\n",
              device.c_str(), worst);
  FORJA_CHECK(worst <= tolerance, "%s: resumed losses differ by %g", device.c_str(), worst);
}

}  // namespace

int main() {
  if (!torch::cuda::is_available()) forja_test::skip("no CUDA GPU visible (or this LibTorch has no CUDA)");
  at::globalContext().setAllowTF32CuBLAS(false);
  const fs::path root = fs::temp_directory_path() / "forja_gpu_train_resume";
  fs::remove_all(root);
  fs::create_directories(root);
  forja_test::write_dataset(root / "train.jsonl", 7, 48);
  forja_test::write_dataset(root / "eval.jsonl", 8, 8);

  // First, before anything here touches the GPU: the CPU run must leave it untouched.
  const bool context_before = at::detail::getCUDAHooks().hasPrimaryContext(0);
  check_resume(root, "cpu", 0.0);
  if (context_before) {
    std::printf("note: a CUDA context existed before the CPU run; its check does not apply\n");
  } else {
    FORJA_CHECK(!at::detail::getCUDAHooks().hasPrimaryContext(0),
                "the CPU run (training, checkpoint, resume) opened a CUDA context");
  }
  // Dropout masks drawn from a generator other than the checkpoint's change the loss by far more than this;
  // the bound leaves room only for the GPU's own reduction-order noise.
  check_resume(root, "cuda", 1e-6);
  fs::remove_all(root);
  return forja_test::finish("gpu train resume");
}
