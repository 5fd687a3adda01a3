// The fine-tuning run as the UI and the CLI see it: plain C++ (no LibTorch, no Qt), so that the Qt window can
// include it. A TrainConfig is the whole run ("export config" in the GUI, `forja-cli train config.json`); the
// trainer reports a TrainProgress per optimizer step to a callback that can pause or cancel the run.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace forja {

struct LoraSettings {
  int64_t rank = 16;
  double alpha = 32;
  double dropout = 0.05;
  bool use_rslora = false;  // scale alpha / sqrt(r) instead of alpha / r
  std::vector<std::string> target_modules = {"q_proj",    "k_proj",  "v_proj",   "o_proj",
                                             "gate_proj", "up_proj", "down_proj"};
};

enum class LrSchedule { Constant, Linear, Cosine };

struct OptimizerSettings {
  double learning_rate = 2e-4;
  double weight_decay = 0.0;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  double max_grad_norm = 1.0;  // <= 0: no clipping
  LrSchedule schedule = LrSchedule::Cosine;
  int64_t warmup_steps = 0;
};

struct TrainConfig {
  std::string model_dir;   // a Hugging Face model folder
  std::string output_dir;  // checkpoints/ and the final adapter/ go here
  std::string run_name;    // the run's name in the journal and the Runs pane; empty: output_dir's folder name
  std::string notes;       // the user's words about the run, kept with it in the journal
  std::string device = "auto";  // auto (cuda when visible), cpu, cuda, cuda:N
  std::string dtype = "auto";   // of the frozen base: auto (bf16 on CUDA, fp32 on CPU), fp32, bf16, fp16
  // The frozen base's projections: "none" (as `dtype` says) or "nf4" (QLoRA: 4-bit NormalFloat, block 64;
  // embeddings, norms and the LM head stay in `dtype`). nf4_double_quant stores the block absmax in 8 bits.
  std::string base_quant = "none";
  bool nf4_double_quant = true;
  // With nf4: keep the quantized base in the user's cache (default_nf4_cache_path) so that the next load of
  // the same checkpoint skips quantizing.
  bool nf4_cache = true;

  // Data. train_file is a dataset in one of the shapes forja/dataset.h reads (JSONL or a JSON array of
  // alpaca, chat, ShareGPT or text records), rendered through the model's chat template with the loss on the
  // answers; or a pre-tokenized JSONL file, one {"input_ids": [...], "labels": [...]} per line (labels
  // unshifted as in transformers, -100 = no loss; when absent every token but the first is trained on).
  std::string train_file;
  std::string eval_file;               // optional held-out file, same shape as train_file
  std::string data_format = "auto";    // auto (per record; "input_ids" = tokenized), tokenized, alpaca, chat,
                                       // sharegpt, text
  std::string tokenizer_dir;           // where tokenizer.json / tokenizer.model are; empty: model_dir
  double eval_fraction = 0.0;          // held out of train_file when there is no eval_file, in [0, 1)
  bool packing = false;                // several short examples per row (attention stays inside each)
  bool train_on_prompt = false;        // loss on every token, not only the assistant's / output's
  bool shuffle = true;                 // a new order every epoch (by seed); false: file order
  std::string on_bad_record = "stop";  // stop: a bad line ends the run with file:line; skip: skip and count
  int64_t batch_size = 4;              // rows per micro-batch
  int64_t max_length = 1024;           // tokens per example (longer ones are cut) and per packed row

  LoraSettings lora;
  // A PEFT adapter folder to start from instead of PEFT's random init (same rank, alpha and targets):
  // continue an earlier fine-tune, or start two trainers from the same weights.
  std::string init_adapter;
  OptimizerSettings optimizer;
  int64_t max_steps = 100;  // optimizer steps
  // > 0: train this many passes over the training rows instead; max_steps is then derived from the data
  // (rounded up to whole steps) when the run starts.
  double epochs = 0;
  int64_t grad_accum = 1;  // micro-batches per optimizer step
  bool activation_checkpointing = false;
  // Recompute only the cheap memory-bound parts of each block (norms, RoPE, activations) in backward and keep
  // the GEMM outputs; lighter than activation_checkpointing, which recomputes whole blocks.
  bool selective_checkpointing = false;
  int64_t eval_every = 0;               // steps; 0: no periodic eval
  int64_t early_stopping_patience = 0;  // evals without improvement before stopping; 0: off
  double early_stopping_min_delta = 0.0;
  int64_t checkpoint_every = 50;  // steps; 0: only when the run stops
  int64_t keep_checkpoints = 3;
  uint64_t seed = 42;
};

// JSON (the file `forja-cli train` reads and the GUI exports). Unknown keys are errors that name the key, so
// a typo never silently trains with a default. `source` names the file in messages.
TrainConfig train_config_from_json(const std::string& json_text, const std::string& source);
std::string train_config_to_json(const TrainConfig& config);
// A config file's text: YAML when `source` ends in .yaml or .yml (the plain subset configs use), else JSON.
TrainConfig train_config_from_text(const std::string& text, const std::string& source);

struct TrainProgress {
  int64_t step = 0;  // optimizer steps done
  int64_t total_steps = 0;
  double loss = 0;                  // mean CE over this step's loss tokens
  std::optional<double> eval_loss;  // set on the steps that evaluated
  double learning_rate = 0;         // the rate this step used
  double grad_norm = 0;             // global 2-norm before clipping
  // This step's counts: `tokens` are the examples' own tokens, `trained_tokens` those with a loss, and
  // `positions` every row position the model ran, padding included (rows x seq_len).
  int64_t tokens = 0;
  int64_t trained_tokens = 0;
  int64_t positions = 0;
  double tokens_per_second = 0;                        // real tokens over this step's time
  double positions_per_second = 0;                     // positions (padding included) over the same time
  double gpu_allocated_gib = 0, gpu_reserved_gib = 0;  // 0 on the CPU
  double elapsed_seconds = 0;
  double eta_seconds = 0;
};

enum class TrainControl { Continue, Pause, Cancel };
// Called after every optimizer step. Pause and Cancel both end the run with a checkpoint; a paused run
// resumes from it with the same config.
using TrainCallback = std::function<TrainControl(const TrainProgress&)>;

enum class TrainOutcome { Finished, EarlyStopped, Paused, Cancelled };

// What a CUDA out-of-memory error in a step led to: the run paused with a checkpoint of the steps before it,
// and a setting measured to fit (a probe ran the same step's data at it).
struct OutOfMemoryAdvice {
  std::string error;       // what ran out, as CUDA's allocator said it
  bool found = false;      // a setting that fits was found
  int64_t batch_size = 0;  // rows per micro-batch that fit
  int64_t grad_accum = 0;  // accumulation that keeps the global batch
  bool activation_checkpointing = false;
  double peak_gib = 0;  // measured peak of the probe step (0 on the CPU)
  std::string message;  // for people: what happened and what to change
};

struct TrainResult {
  TrainOutcome outcome = TrainOutcome::Finished;
  int64_t steps_done = 0;
  int64_t resumed_from_step = 0;  // 0: a fresh start
  std::string adapter_dir;        // the final adapter (PEFT format)
  std::string last_checkpoint;
  std::string device;                              // where it trained, as LibTorch names it: "cuda:0", "cpu"
  std::vector<std::string> warnings;               // e.g. a corrupt checkpoint that was skipped
  std::optional<OutOfMemoryAdvice> out_of_memory;  // set when the run paused because memory ran out
};

}  // namespace forja
