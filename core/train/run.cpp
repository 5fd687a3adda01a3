#include "run.h"

#include <torch/cuda.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <set>

#include "causal_lm.h"
#include "dataset_source.h"
#include "env/torch_facts.h"
#include "forja/error.h"
#include "forja/model_config.h"
#include "lora_peft.h"
#include "run_checkpoint.h"
#include "trainer.h"

namespace forja::train {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

// The settings that decide what a step computes: a checkpoint may only be resumed by a config that agrees on
// all of them (how often to checkpoint or evaluate may change).
nlohmann::json resume_relevant(const std::string& config_json) {
  nlohmann::json j = nlohmann::json::parse(config_json);
  for (const char* k : {"checkpoint_every", "keep_checkpoints", "eval_every", "early_stopping_patience",
                        "early_stopping_min_delta", "output_dir", "device"})
    j.erase(k);
  return j;
}

void gpu_memory(double& allocated_gib, double& reserved_gib) {
  allocated_gib = reserved_gib = 0;
  for (const auto& s : env::torch_allocator_samples()) {
    allocated_gib += static_cast<double>(s.allocated) / (1 << 30);
    reserved_gib += static_cast<double>(s.reserved) / (1 << 30);
  }
}

}  // namespace

TrainResult run_training(const TrainConfig& config, BatchSource& data, const std::vector<Batch>& eval_data,
                         const RunHooks& hooks) {
  auto say = [&](const std::string& m) {
    if (hooks.on_message) hooks.on_message(m);
  };
  const std::string config_json = train_config_to_json(config);
  const at::Device device = config.device == "auto" ? (torch::cuda::is_available() ? at::Device(at::kCUDA, 0)
                                                                                   : at::Device(at::kCPU))
                                                    : parse_device(config.device);
  const at::ScalarType dtype = config.dtype == "auto" ? (device.is_cuda() ? at::kBFloat16 : at::kFloat)
                                                      : parse_dtype_name(config.dtype);
  at::manual_seed(config.seed);
  auto model = load_causal_lm(config.model_dir, {dtype, device});
  LoraOptions lo;
  lo.rank = config.lora.rank;
  lo.alpha = config.lora.alpha;
  lo.dropout = config.lora.dropout;
  lo.use_rslora = config.lora.use_rslora;
  lo.target_modules = config.lora.target_modules;
  lo.seed = config.seed;
  auto adapters = LoraAdapters::attach(*model, lo);
  if (!config.init_adapter.empty()) {
    const LoraOptions given = read_peft_config(config.init_adapter);
    if (given.rank != lo.rank || given.alpha != lo.alpha ||
        std::set<std::string>(given.target_modules.begin(), given.target_modules.end()) !=
            std::set<std::string>(lo.target_modules.begin(), lo.target_modules.end()))
      throw_file_error(config.init_adapter,
                       "has LoRA rank " + std::to_string(given.rank) + ", alpha " +
                           std::to_string(given.alpha) + " or target modules other than the config's",
                       "Set lora.rank, lora.alpha and lora.target_modules as the adapter has them.");
    load_peft_weights(*adapters, config.init_adapter);  // a resumed run then loads its checkpoint over it
  }
  Trainer trainer(*model, *adapters, config.optimizer, config.max_steps, config.activation_checkpointing);

  const fs::path out = config.output_dir;
  const fs::path ckpt_root = out / "checkpoints";
  TrainResult result;
  RunState state;
  state.total_steps = config.max_steps;
  state.config_json = config_json;
  {
    auto latest = latest_valid_checkpoint(ckpt_root, result.warnings);
    for (const auto& w : result.warnings) say(w);
    if (latest) {
      RunState saved = load_run_checkpoint(*latest, *adapters, trainer.optimizer());
      if (resume_relevant(saved.config_json) != resume_relevant(config_json))
        throw_file_error(latest->string(),
                         "was written by a run with other settings (model, data, LoRA, "
                         "optimizer, steps or seed differ)",
                         "Use a new output_dir for a new run, or the original config to resume this one.");
      data.seek(saved.data_cursor);
      state.step = saved.step;
      state.best_eval_loss = saved.best_eval_loss;
      state.evals_without_improvement = saved.evals_without_improvement;
      result.resumed_from_step = saved.step;
      result.last_checkpoint = latest->string();
      say("resumed from " + latest->string() + " at step " + std::to_string(saved.step));
    }
  }

  auto checkpoint = [&]() {
    state.data_cursor = data.cursor();
    fs::path p = save_run_checkpoint(ckpt_root, *adapters, trainer.optimizer(), state, config.model_dir,
                                     config.keep_checkpoints);
    result.last_checkpoint = p.string();
    return p.string();
  };

  const auto start = Clock::now();
  const int64_t first_step = state.step;
  std::string saved_at;  // checkpoint written after the latest step
  result.outcome = TrainOutcome::Finished;
  while (state.step < config.max_steps) {
    const auto t0 = Clock::now();
    std::vector<Batch> micro;
    for (int64_t i = 0; i < config.grad_accum; ++i) micro.push_back(data.next());
    StepStats s = trainer.step(micro);
    if (device.is_cuda()) torch::cuda::synchronize();
    ++state.step;
    const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
    TrainProgress p;
    p.step = state.step;
    p.total_steps = config.max_steps;
    p.loss = s.loss;
    p.learning_rate = s.learning_rate;
    p.grad_norm = s.grad_norm;
    p.tokens = s.tokens;
    p.tokens_per_second = dt > 0 ? static_cast<double>(s.tokens) / dt : 0;
    p.elapsed_seconds = std::chrono::duration<double>(Clock::now() - start).count();
    p.eta_seconds = p.elapsed_seconds / static_cast<double>(state.step - first_step) *
                    static_cast<double>(config.max_steps - state.step);
    gpu_memory(p.gpu_allocated_gib, p.gpu_reserved_gib);

    bool stop_early = false;
    // Periodically when asked, and always after the last step when there is eval data.
    if (!eval_data.empty() &&
        ((config.eval_every > 0 && state.step % config.eval_every == 0) || state.step == config.max_steps)) {
      const double e = trainer.evaluate(eval_data);
      p.eval_loss = e;
      if (!state.best_eval_loss || e < *state.best_eval_loss - config.early_stopping_min_delta) {
        state.best_eval_loss = e;
        state.evals_without_improvement = 0;
      } else if (++state.evals_without_improvement >= config.early_stopping_patience &&
                 config.early_stopping_patience > 0) {
        stop_early = true;
      }
    }
    saved_at.clear();
    if (config.checkpoint_every > 0 && state.step % config.checkpoint_every == 0) saved_at = checkpoint();
    p.checkpoint = saved_at;
    TrainControl control = hooks.on_progress ? hooks.on_progress(p) : TrainControl::Continue;
    if (stop_early) {
      result.outcome = TrainOutcome::EarlyStopped;
      say("early stopping: eval loss has not improved for " +
          std::to_string(state.evals_without_improvement) + " evaluations");
      break;
    }
    if (control == TrainControl::Pause || control == TrainControl::Cancel) {
      result.outcome = control == TrainControl::Pause ? TrainOutcome::Paused : TrainOutcome::Cancelled;
      break;
    }
  }
  if (saved_at.empty() && state.step > first_step) checkpoint();
  result.steps_done = state.step;
  if (result.outcome == TrainOutcome::Finished || result.outcome == TrainOutcome::EarlyStopped) {
    save_peft_adapter(*adapters, out / "adapter", config.model_dir);
    result.adapter_dir = (out / "adapter").string();
  }
  return result;
}

TrainResult run_training_from_files(const TrainConfig& config, const RunHooks& hooks) {
  const ModelConfig model = parse_model_config(fs::path(config.model_dir) / "config.json");
  TrainingData data = load_training_data(config, model.vocab_size);
  if (hooks.on_message) hooks.on_message(data.summary);
  return run_training(config, *data.train, data.eval, hooks);
}

}  // namespace forja::train
