// forja-cli bench train --shape tinyllama|mistral7b|qwen3_1_7b|gemma3_1b [--batch 8] [--seq 1024] [--steps
// 10] [--warmup 3]
//                       [--recompute off|on|selective] [--json]
// LoRA training throughput at a real model shape without its weights: random bf16 weights (RandomWeights),
// LoRA r16 alpha32 on all 7 projections, random tokens trained on every position, AdamW — the settings of
// bench/hf_peft_baseline.py, so that bench/train_bench.sh can put both numbers side by side.
#include <torch/cuda.h>

#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>

#include "bench.h"
#include "bench_shapes.h"
#include "causal_lm.h"
#include "env/torch_facts.h"
#include "forja/error.h"
#include "forja/model_config.h"
#include "lora_linear.h"
#include "trainer.h"
#include "weights.h"

namespace {

forja::Batch random_batch(int64_t rows, int64_t seq, int64_t vocab, std::mt19937_64& rng) {
  forja::Batch b;
  b.rows = rows;
  b.seq_len = seq;
  b.input_ids.resize(static_cast<size_t>(rows * seq));
  for (auto& id : b.input_ids) id = static_cast<forja::TokenId>(rng() % static_cast<uint64_t>(vocab));
  // labels = input_ids, as the baseline passes them; shifted here as Batch wants them.
  b.labels.assign(b.input_ids.size(), forja::kIgnoreIndex);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t t = 0; t + 1 < seq; ++t) b.labels[r * seq + t] = b.input_ids[r * seq + t + 1];
  b.loss_tokens = rows * (seq - 1);
  return b;
}

int run_bench_train(forja::cli::Args& args) {
  args.reject_unknown({"shape", "batch", "seq", "steps", "warmup", "recompute", "device", "base-quant"});
  const std::string shape = args.option_or("shape", "tinyllama");
  const int64_t batch = std::stoll(args.option_or("batch", "8"));
  const int64_t seq = std::stoll(args.option_or("seq", "1024"));
  const int64_t steps = std::stoll(args.option_or("steps", "10"));
  const int64_t warmup = std::stoll(args.option_or("warmup", "3"));
  const std::string recompute_mode = args.option_or("recompute", "off");
  if (recompute_mode != "off" && recompute_mode != "on" && recompute_mode != "selective")
    throw forja::Error("--recompute takes off, on or selective, got '" + recompute_mode + "'");
  const bool recompute = recompute_mode == "on";
  const bool selective = recompute_mode == "selective";  // selective activation checkpointing
  const at::Device device = forja::parse_device(args.option_or("device", "cuda"));
  const at::ScalarType dtype = device.is_cuda() ? at::kBFloat16 : at::kFloat;

  forja::ModelConfig config = forja::parse_model_config_text(forja::cli::bench_shape_config(shape), shape);
  forja::RandomWeights weights(0, dtype, device);
  const std::string base_quant = args.option_or("base-quant", "none");
  if (base_quant == "nf4") {
    forja::quant::Nf4Options nf4;  // QLoRA as training runs it: block 64, double quantization on
    nf4.double_quant = true;
    weights.set_nf4(nf4);
  } else if (base_quant != "none") {
    throw forja::Error("--base-quant takes none or nf4, got '" + base_quant + "'");
  }
  auto model = forja::make_causal_lm(config, weights);
  forja::LoraOptions lo;  // r16 alpha32 on q/k/v/o/gate/up/down: the defaults
  auto adapters = forja::LoraAdapters::attach(*model, lo);
  forja::OptimizerSettings opt;
  opt.learning_rate = 2e-4;
  opt.weight_decay = 0.01;  // torch.optim.AdamW's default, which the baseline keeps
  opt.max_grad_norm = 0;    // the baseline does not clip (the norm is still measured)
  opt.schedule = forja::LrSchedule::Constant;
  forja::train::Trainer trainer(*model, *adapters, opt, warmup + steps, recompute);
  trainer.set_selective_checkpointing(selective);

  std::mt19937_64 rng(0);
  forja::Batch b = random_batch(batch, seq, config.vocab_size, rng);
  auto sync = [&] {
    if (device.is_cuda()) torch::cuda::synchronize();
  };
  double first_loss = 0, last_loss = 0;
  for (int64_t i = 0; i < warmup; ++i) first_loss = trainer.step({b}).loss;
  sync();
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < steps; ++i) last_loss = trainer.step({b}).loss;
  sync();
  const double step_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() /
                        static_cast<double>(std::max<int64_t>(1, steps));
  double peak_gib = 0;
  for (const auto& s : forja::env::torch_allocator_samples())
    peak_gib += double(s.peak_allocated) / (1 << 30);
  const double tok_s = double(batch * seq) / step_s;
  if (args.flag("json")) {
    nlohmann::ordered_json j = {{"bench", "train"},
                                {"shape", shape},
                                {"batch", batch},
                                {"seq", seq},
                                {"steps", steps},
                                {"recompute", recompute},
                                {"selective_checkpointing", selective},
                                {"base_quant", base_quant},
                                {"step_s", step_s},
                                {"tokens_per_s", tok_s},
                                {"peak_gib", peak_gib},
                                {"lora_params", adapters->parameter_count()},
                                {"loss_first", first_loss},
                                {"loss_last", last_loss}};
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf(
        "forja train %s%s %lldx%lld%s: %.0f tokens/s (%.3f s/step), peak %.1f GiB allocated, loss %.3f -> "
        "%.3f\n",
        shape.c_str(), base_quant == "nf4" ? " (nf4 base)" : "", (long long)batch, (long long)seq,
        recompute ? " (recompute)" : "", tok_s, step_s, peak_gib, first_loss, last_loss);
  }
  return 0;
}

}  // namespace

FORJA_BENCH(train, "LoRA training tokens/s and peak GPU memory at a real shape (random weights)",
            "bench train --shape tinyllama|mistral7b|qwen3_1_7b|gemma3_1b [--batch 8] [--seq 1024] [--steps "
            "10] [--recompute on|selective] "
            "[--base-quant none|nf4] [--json]",
            run_bench_train);
