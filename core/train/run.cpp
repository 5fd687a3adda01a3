#include "run.h"

#include <torch/cuda.h>

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>
#include <set>

#include <c10/util/Exception.h>
#include "causal_lm.h"
#include "data_parallel.h"
#include "dataset_source.h"
#include "env/torch_facts.h"

#include <algorithm>
#include <cstdio>

#include "forja/error.h"
#include "forja/fault.h"
#include "forja/file_util.h"
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
// The micro-batch split (batch_size × grad_accum at the same product) and activation checkpointing may
// change (and selective checkpointing): that is what the out-of-memory advice asks for, and the data cursor
// counts examples, not batches. So may the number of data-parallel processes ("world_size", written by such
// runs only) at the same global batch.
nlohmann::json resume_relevant(const std::string& config_json) {
  nlohmann::json j = nlohmann::json::parse(config_json);
  j["global_batch"] = j.value("batch_size", int64_t{0}) * j.value("grad_accum", int64_t{1}) *
                      j.value("world_size", int64_t{1});
  for (const char* k :
       {"world_size", "checkpoint_every", "keep_checkpoints", "eval_every", "early_stopping_patience",
        "early_stopping_min_delta", "output_dir", "run_name", "notes", "device", "batch_size", "grad_accum",
        "activation_checkpointing", "selective_checkpointing", "nf4_cache"})
    j.erase(k);
  return j;
}

// The rows of `b` in batches of `rows` (the last may hold fewer).
std::vector<Batch> split_rows(const Batch& b, int64_t rows) {
  std::vector<Batch> out;
  const auto cells = static_cast<size_t>(b.seq_len);
  for (int64_t r0 = 0; r0 < b.rows; r0 += rows) {
    const int64_t n = std::min(rows, b.rows - r0);
    Batch p;
    p.rows = n;
    p.seq_len = b.seq_len;
    p.packed = b.packed;
    auto part = [&](const auto& v, auto& dst) {
      if (v.empty()) return;
      dst.assign(v.begin() + static_cast<ptrdiff_t>(static_cast<size_t>(r0) * cells),
                 v.begin() + static_cast<ptrdiff_t>(static_cast<size_t>(r0 + n) * cells));
    };
    part(b.input_ids, p.input_ids);
    part(b.labels, p.labels);
    part(b.position_ids, p.position_ids);
    part(b.segment_ids, p.segment_ids);
    for (int32_t l : p.labels) p.loss_tokens += l != kIgnoreIndex;
    out.push_back(std::move(p));
  }
  return out;
}

double peak_gib() {
  double peak = 0;
  for (const auto& s : env::torch_allocator_samples())
    peak = std::max(peak, double(s.peak_allocated) / (1 << 30));
  return peak;
}

void release_memory(const at::Device& device) {
  if (device.is_cuda()) env::release_cuda_memory(device.index() < 0 ? 0 : device.index());
}

// After an out-of-memory error in a step: the same step's data at smaller micro-batches and with activation
// checkpointing, largest first, until one fits. Gradients are thrown away; nothing is updated.
OutOfMemoryAdvice probe_fitting_setting(Trainer& trainer, const std::vector<Batch>& micro,
                                        const TrainConfig& config, const at::Device& device,
                                        const std::string& error) {
  OutOfMemoryAdvice a;
  a.error = error;
  const int64_t rows = micro.front().rows;
  const bool was_recompute = trainer.recompute();
  std::vector<std::pair<int64_t, bool>> candidates;
  for (int64_t r = rows; r >= 1; r /= 2)
    for (bool rc : {false, true})
      if (!(r == rows && rc == was_recompute) && (rc || !was_recompute)) candidates.push_back({r, rc});
  // Same rows with checkpointing first (nothing else changes), then halving the rows.
  std::stable_sort(candidates.begin(), candidates.end(),
                   [&](const auto& x, const auto& y) { return (x.first == rows) > (y.first == rows); });
  for (const auto& [r, rc] : candidates) {
    std::vector<Batch> parts;
    for (const Batch& b : micro)
      for (Batch& p : split_rows(b, r)) parts.push_back(std::move(p));
    trainer.set_recompute(rc);
    release_memory(device);
    try {
      trainer.backward(parts);
      if (device.is_cuda()) torch::cuda::synchronize();
      a.found = true;
      a.batch_size = r;
      a.grad_accum = config.grad_accum * ((rows + r - 1) / r);
      a.activation_checkpointing = rc;
      a.peak_gib = peak_gib();
    } catch (const c10::OutOfMemoryError&) {
    }
    trainer.optimizer().zero_grad();
    if (a.found) break;
  }
  trainer.set_recompute(was_recompute);
  release_memory(device);
  const std::string shape = std::to_string(rows) + " rows of up to " + std::to_string(micro.front().seq_len) +
                            " tokens per micro-batch";
  if (a.found) {
    char peak[64] = "";
    if (a.peak_gib > 0) std::snprintf(peak, sizeof peak, " (measured peak %.1f GiB)", a.peak_gib);
    a.message =
        "The GPU ran out of memory at " + shape + ". A step fits with batch_size " +
        std::to_string(a.batch_size) + ", grad_accum " + std::to_string(a.grad_accum) +
        (a.activation_checkpointing ? " and activation checkpointing on" : "") + peak +
        ", the same global batch. The run paused with a checkpoint: set those and start it again to resume.";
  } else {
    a.message =
        "The GPU ran out of memory at " + shape +
        ", and even one row with activation checkpointing does not fit. Lower max_length, or use a smaller "
        "model. The run paused with a checkpoint.";
  }
  return a;
}

void gpu_memory(double& allocated_gib, double& reserved_gib) {
  allocated_gib = reserved_gib = 0;
  for (const auto& s : env::torch_allocator_samples()) {
    allocated_gib += static_cast<double>(s.allocated) / (1 << 30);
    reserved_gib += static_cast<double>(s.reserved) / (1 << 30);
  }
}

std::vector<SavedCheckpoint> checkpoints_on_disk(const fs::path& root, int64_t up_to_step) {
  std::vector<SavedCheckpoint> out;
  for (const fs::path& p : list_checkpoints(root)) {
    const std::string name = p.filename().string();
    const int64_t step = std::stoll(name.substr(name.find('-') + 1));  // list_checkpoints parsed it already
    if (step <= up_to_step) out.push_back({step, p.string()});
  }
  return out;
}

// The final adapter goes to a temporary sibling first and replaces <output_dir>/adapter by a rename: a kill
// halfway leaves the old adapter or the new one, never a folder holding half of each.
void save_final_adapter(const LoraAdapters& adapters, const fs::path& out, const std::string& base_model) {
  const fs::path dir = out / "adapter";
  const fs::path tmp = out / (".adapter-tmp-" + std::to_string(::getpid()));
  const fs::path old = out / (".adapter-old-" + std::to_string(::getpid()));
  std::error_code ec;
  // What a killed save left (the output folder's lock says no one else writes here).
  std::vector<fs::path> stale;
  for (const auto& e : fs::directory_iterator(out, ec))
    if (e.path().filename().string().rfind(".adapter-", 0) == 0) stale.push_back(e.path());
  for (const auto& p : stale) fs::remove_all(p, ec);
  fs::create_directories(tmp, ec);
  if (ec) throw_file_error(tmp.string(), "cannot create: " + ec.message());
  fault_point("adapter.begin");
  save_peft_adapter(adapters, tmp, base_model);
  fsync_directory(tmp);
  fault_point("adapter.written");
  fs::remove_all(old, ec);
  if (fs::exists(dir)) fs::rename(dir, old, ec);
  fs::rename(tmp, dir, ec);
  if (ec) throw_file_error(dir.string(), "cannot move the new adapter into place: " + ec.message());
  fsync_directory(out);
  fault_point("adapter.renamed");
  fs::remove_all(old, ec);
}

// Adapters that are no longer finite (a huge learning rate) must never reach a checkpoint: the last finite
// one stays the newest.
bool adapters_finite(const LoraAdapters& adapters) {
  at::NoGradGuard no_grad;
  for (const at::Tensor& p : adapters.parameters())
    if (!at::isfinite(p).all().item<bool>()) return false;
  return true;
}

}  // namespace

class OutputDirLock {
 public:
  OutputDirLock(fs::path dir, int fd) : dir_(std::move(dir)), fd_(fd) {}
  ~OutputDirLock() { ::close(fd_); }
  OutputDirLock(const OutputDirLock&) = delete;
  OutputDirLock& operator=(const OutputDirLock&) = delete;

 private:
  fs::path dir_;
  int fd_;
};

std::shared_ptr<OutputDirLock> lock_output_dir(const std::string& output_dir) {
  static std::mutex mutex;
  static std::map<fs::path, std::weak_ptr<OutputDirLock>> held;
  std::error_code ec;
  fs::create_directories(output_dir, ec);
  if (ec || !fs::is_directory(output_dir))
    throw_file_error(output_dir, "cannot be used as the output folder: " +
                                     (ec ? ec.message() : std::string("it is not a folder")));
  const fs::path key = fs::canonical(output_dir, ec);
  std::lock_guard<std::mutex> guard(mutex);
  if (auto h = held[key].lock()) return h;
  const fs::path file = key / ".lock";
  const int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) throw_file_error(file.string(), std::string("cannot create: ") + std::strerror(errno));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    char pid[32] = {};
    const ssize_t n = ::pread(fd, pid, sizeof pid - 1, 0);
    ::close(fd);
    throw_file_error(
        output_dir,
        "another training run" +
            (n > 0 ? " (process " + std::string(pid, static_cast<size_t>(n)) + ")" : std::string()) +
            " is writing to this folder",
        "Wait for it to end or pause it, or give this run another output_dir.");
  }
  const std::string me = std::to_string(::getpid());
  // The pid only feeds the message above; the lock is held whether or not it could be written (a full disk).
  const bool pid_written = ::ftruncate(fd, 0) == 0 && ::pwrite(fd, me.data(), me.size(), 0) >= 0;
  static_cast<void>(pid_written);
  auto h = std::make_shared<OutputDirLock>(key, fd);
  held[key] = h;
  return h;
}

TrainResult run_training(const TrainConfig& config, BatchSource& data, const std::vector<Batch>& eval_data,
                         const RunHooks& hooks) {
  auto say = [&](const std::string& m) {
    if (hooks.on_message) hooks.on_message(m);
  };
  DataParallel* dp = hooks.data_parallel;
  const int world = dp ? dp->world_size() : 1;
  bool writes = !dp || dp->rank() == 0;  // checkpoints and the adapter
  const std::string config_json = [&] {
    std::string j = train_config_to_json(config);
    if (world == 1) return j;
    nlohmann::json with_world = nlohmann::json::parse(j);
    with_world["world_size"] = world;
    return with_world.dump(2);
  }();
  const at::Device device = config.device == "auto" ? (torch::cuda::is_available() ? at::Device(at::kCUDA, 0)
                                                                                   : at::Device(at::kCPU))
                                                    : parse_device(config.device);
  const at::ScalarType dtype = config.dtype == "auto" ? (device.is_cuda() ? at::kBFloat16 : at::kFloat)
                                                      : parse_dtype_name(config.dtype);
  at::manual_seed(config.seed);
  LoadOptions load{dtype, device};
  if (config.base_quant == "nf4") {
    // QLoRA: the projections in 4 bits, computed in `dtype` (bf16 on CUDA, fp32 on the CPU).
    if (dtype != at::kFloat && dtype != at::kBFloat16)
      throw Error("base_quant = nf4 computes in fp32 or bf16, not " + config.dtype,
                  "Set dtype to auto, bf16 or fp32.");
    load.nf4 = quant::Nf4Options{};
    load.nf4->double_quant = config.nf4_double_quant;
    if (config.nf4_cache) load.nf4_cache = default_nf4_cache_path(config.model_dir, *load.nf4);
    load.notes = say;
  }
  auto model = load_causal_lm(config.model_dir, load);
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
  trainer.set_selective_checkpointing(config.selective_checkpointing);

  const fs::path out = config.output_dir;
  const fs::path ckpt_root = out / "checkpoints";
  const auto lock = writes ? lock_output_dir(config.output_dir) : nullptr;
  if (writes) tidy_checkpoint_root(ckpt_root);
  TrainResult result;
  result.device = device.str();
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
    } else if (writes && fs::exists(out / "adapter")) {
      throw_file_error((out / "adapter").string(),
                       "holds the adapter of an earlier run, and there is no checkpoint to continue it from",
                       "Give this run a new output_dir, or move the old adapter away first.");
    }
  }
  if (writes && hooks.on_start) hooks.on_start(state.step, checkpoints_on_disk(ckpt_root, state.step));
  // The same seed gives every rank the same adapters, and each resumes from the same checkpoint; rank 0's
  // copy makes that certain (and is the first collective: every rank has loaded its model by then).
  if (dp) copy_from_rank0(*dp, adapters->parameters());

  double last_loss = 0;
  auto retrying = [&](const auto& save) {
    for (;;) {
      try {
        return save();
      } catch (const Error& e) {
        if (!hooks.on_save_failed || !hooks.on_save_failed(e)) throw;
      }
    }
  };
  auto checkpoint = [&]() {
    if (!writes) return std::string();
    if (!adapters_finite(*adapters))
      throw Error(
          "the adapter's weights are no longer finite after step " + std::to_string(state.step) +
              (result.last_checkpoint.empty() ? std::string()
                                              : "; the last finite checkpoint is " + result.last_checkpoint),
          "Lower the learning rate (and keep max_grad_norm on), then start a new run.");
    state.data_cursor = data.cursor();
    const fs::path p = retrying([&] {
      return save_run_checkpoint(ckpt_root, *adapters, trainer.optimizer(), state, config.model_dir,
                                 config.keep_checkpoints);
    });
    result.last_checkpoint = p.string();
    fault_point("step.checkpointed");
    if (hooks.on_checkpoint)
      hooks.on_checkpoint({state.step, p.string()}, last_loss, checkpoints_on_disk(ckpt_root, state.step));
    fault_point("step.checkpoint_recorded");
    return p.string();
  };

  const auto start = Clock::now();
  const int64_t first_step = state.step;
  std::string saved_at;  // checkpoint written after the latest step
  result.outcome = TrainOutcome::Finished;
  while (state.step < config.max_steps) {
    const auto t0 = Clock::now();
    const std::string cursor_before = data.cursor();
    std::vector<Batch> micro;
    for (int64_t i = 0; i < config.grad_accum * world; ++i) micro.push_back(data.next());
    // A data-parallel step that fails on this rank (out of memory, a peer gone, a collective timed out) ends
    // the run: rank 0 keeps a checkpoint of the last completed step, the others just stop.
    auto stop_on_failure = [&](const std::exception& e, bool step_applied) {
      trainer.optimizer().zero_grad();
      if (!step_applied) data.seek(cursor_before);
      const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
      std::string what = c10_error ? c10_error->what_without_backtrace() : e.what();
      what = what.substr(0, what.find('\n'));
      // Every rank holds the same adapters and optimizer state: when rank 0 is gone, rank 1 writes instead.
      if (!writes && dp->rank() == 1 && !dp->rank0_alive()) writes = true;
      std::string kept;
      if (writes && state.step > first_step && saved_at.empty()) kept = checkpoint();
      if (writes && kept.empty()) kept = result.last_checkpoint;
      throw Error(
          "rank " + std::to_string(dp->rank()) + " of " + std::to_string(world) + " stopped after step " +
              std::to_string(state.step) + ": " + what,
          kept.empty() ? "" : "The last completed step is in " + kept + "; run the same command to resume.");
    };
    StepStats s;
    try {
      s = dp ? data_parallel_backward(trainer, *dp, micro) : trainer.backward(micro);
    } catch (const c10::OutOfMemoryError& e) {
      if (dp) stop_on_failure(e, false);
      // Nothing of this step was applied: the checkpoint holds the steps before it, with the data cursor
      // before its batches, so a resume redoes exactly this step.
      trainer.optimizer().zero_grad();
      release_memory(device);
      const std::string what = e.what_without_backtrace();
      say("out of memory at step " + std::to_string(state.step + 1) + ": " + what.substr(0, what.find('\n')));
      data.seek(cursor_before);
      if (state.step > first_step && saved_at.empty()) checkpoint();
      result.out_of_memory = probe_fitting_setting(trainer, micro, config, device, what);
      say(result.out_of_memory->message);
      result.outcome = TrainOutcome::Paused;
      result.steps_done = state.step;
      return result;
    } catch (const std::exception& e) {
      if (!dp) throw;
      stop_on_failure(e, false);
    }
    if (!std::isfinite(s.loss) || !trainer.update(s)) {
      // Nothing of this step was applied; the adapters still hold the last step's finite weights.
      trainer.optimizer().zero_grad();
      data.seek(cursor_before);
      std::string kept;
      if (state.step > first_step && saved_at.empty()) kept = checkpoint();
      if (kept.empty()) kept = result.last_checkpoint;
      throw Error("the training diverged at step " + std::to_string(state.step + 1) + ": the " +
                      (std::isfinite(s.loss) ? "gradient norm" : "loss") + " is " +
                      std::to_string(std::isfinite(s.loss) ? s.grad_norm : s.loss) +
                      (kept.empty() ? std::string() : "; the last finite state is " + kept),
                  "Lower the learning rate, keep max_grad_norm on, check the data for broken records, "
                  "then start a new run.");
    }
    if (device.is_cuda()) torch::cuda::synchronize();
    ++state.step;
    last_loss = s.loss;
    fault_point("step.updated");
    const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
    TrainProgress p;
    p.step = state.step;
    p.total_steps = config.max_steps;
    p.loss = s.loss;
    p.learning_rate = s.learning_rate;
    p.grad_norm = s.grad_norm;
    p.tokens = s.tokens;
    p.trained_tokens = s.loss_tokens;
    p.positions = s.positions;
    p.tokens_per_second = dt > 0 ? static_cast<double>(s.tokens) / dt : 0;
    p.positions_per_second = dt > 0 ? static_cast<double>(s.positions) / dt : 0;
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
    // Write-ahead: the step's record first, then the checkpoint that lets a resume skip the step.
    TrainControl control = hooks.on_progress ? hooks.on_progress(p) : TrainControl::Continue;
    fault_point("step.recorded");
    saved_at.clear();
    if (config.checkpoint_every > 0 && state.step % config.checkpoint_every == 0) saved_at = checkpoint();
    if (dp) {
      try {
        control = static_cast<TrainControl>(
            agree_on_max(*dp, static_cast<int>(control), static_cast<int>(TrainControl::Cancel)));
      } catch (const std::exception& e) {
        stop_on_failure(e, true);
      }
    }
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
  if (writes && (result.outcome == TrainOutcome::Finished || result.outcome == TrainOutcome::EarlyStopped)) {
    retrying([&] { save_final_adapter(*adapters, out, config.model_dir); });
    result.adapter_dir = (out / "adapter").string();
  }
  return result;
}

TrainResult run_training_from_files(const TrainConfig& config, const RunHooks& hooks) {
  const ModelConfig model = parse_model_config(fs::path(config.model_dir) / "config.json");
  TrainingData data = load_training_data(config, model.vocab_size);
  if (hooks.on_message) hooks.on_message(data.summary);
  if (config.epochs <= 0) return run_training(config, *data.train, data.eval, hooks);
  TrainConfig by_epochs = config;
  by_epochs.max_steps = steps_for_epochs(config, data.train->rows_per_epoch(),
                                         hooks.data_parallel ? hooks.data_parallel->world_size() : 1);
  if (hooks.on_message)
    hooks.on_message("epochs: " + nlohmann::json(config.epochs).dump() + " of " +
                     std::to_string(data.train->rows_per_epoch()) +
                     " rows = " + std::to_string(by_epochs.max_steps) + " steps");
  return run_training(by_epochs, *data.train, data.eval, hooks);
}

int64_t steps_for_epochs(const TrainConfig& config, int64_t rows_per_epoch, int world_size) {
  const double rows_per_step = static_cast<double>(config.batch_size) *
                               static_cast<double>(config.grad_accum) *
                               static_cast<double>(std::max(1, world_size));
  const double steps = std::ceil(config.epochs * static_cast<double>(rows_per_epoch) / rows_per_step);
  return std::max<int64_t>(1, static_cast<int64_t>(std::min(steps, 1e12)));
}

}  // namespace forja::train
