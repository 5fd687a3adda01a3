// The engine's benchmarks at real model shapes with random weights: what `forja-cli bench decode` and
// `forja-cli bench train` run. The shapes are the real models' config.json fields, read by the loader's own
// parser, so every family option (q/k norms, local layers and their RoPE, the attention scale) is the real
// model's; bench/decode_bench.py and bench/hf_peft_baseline.py build the peer's models from the same fields
// and print both numbers from one run.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "forja/model_config.h"

namespace forja::bench {

// "tinyllama, mistral7b, qwen3_1_7b and gemma3_1b": for usage lines and messages.
extern const char* const kShapeNames;
// A shape's config.json text, and that text parsed; an unknown shape is a forja::Error listing the shapes.
std::string shape_config_json(const std::string& shape);
ModelConfig shape_config(const std::string& shape);

// A random-weight checkpoint of `config_json` (a config.json text, e.g. shape_config_json's) written as a
// Hugging Face folder: config.json and bf16 safetensors in shards of about `shard_bytes` with their index,
// the values RandomWeights draws from `seed` (norms 1, matrices N(0, 1/fan_in), embeddings N(0, 1)); one
// shard is in memory at a time. `dir` must be new or empty. No tokenizer is written. Returns the bytes of
// weights.
int64_t write_random_model(const std::string& config_json, const std::filesystem::path& dir,
                           uint64_t seed = 0, int64_t shard_bytes = int64_t{2} << 30);

// Batch-1 greedy decode of a random prompt, a fixed number of new tokens per run (EOS ignored), after one
// warm-up run that captures every CUDA graph the runs need.
struct DecodeOptions {
  std::string shape = "tinyllama";
  int64_t prompt_tokens = 128;
  int64_t new_tokens = 256;
  int runs = 3;
  std::string device = "auto";  // as forja-cli takes it: auto, cpu, cuda, cuda:N
  std::string dtype = "bf16";
  bool cuda_graphs = true;
  bool nf4_base = false;  // QLoRA's 4-bit base, plain fp32 absmax: the bytes read are the bytes counted
};

struct DecodeResult {
  std::string device, dtype;
  bool cuda_graphs = false;
  int64_t parameters = 0, weight_bytes = 0, kv_cache_bytes = 0;
  // Device-to-device copy of 1 GiB, bytes read and written per second (0 on the CPU); every decode step
  // reads every weight once, so copy_bandwidth / weight_bytes is the roofline.
  double copy_bandwidth = 0;
  double roofline_tok_s = 0;
  double decode_tok_s = 0, first_token_s = 0;  // medians of the runs
  std::vector<double> decode_tok_s_runs, first_token_s_runs;
};

DecodeResult decode(const DecodeOptions& options);

// LoRA training steps on random tokens, trained on every position: r16 alpha32 on all 7 projections, AdamW
// (lr 2e-4, weight decay 0.01, no clipping), constant schedule: the peer baseline's settings.
struct TrainOptions {
  std::string shape = "tinyllama";
  int64_t batch = 8;
  int64_t seq = 1024;
  int64_t steps = 10;
  int64_t warmup = 3;
  bool recompute = false;                // activation checkpointing of every layer
  bool selective_checkpointing = false;  // of the cheap, memory-heavy parts only
  std::string device = "cuda";
  bool nf4_base = false;  // QLoRA as training runs it: block 64, double quantization
};

struct TrainResult {
  double step_s = 0, tokens_per_s = 0;
  double peak_gib = 0;  // the allocator's peak over the visible devices
  int64_t lora_params = 0;
  double loss_first = 0, loss_last = 0;  // the last warm-up step's, the last timed step's
};

TrainResult train(const TrainOptions& options);

}  // namespace forja::bench
