// forja-cli bench train --shape tinyllama|mistral7b|qwen3_1_7b|gemma3_1b|gemma2_2b
//                       [--batch 8] [--seq 1024] [--steps 10] [--warmup 3] [--recompute off|on|selective]
//                       [--base-quant none|nf4] [--json]
// LoRA training throughput at a real model shape without its weights (forja::bench::train), with the settings
// of bench/hf_peft_baseline.py, so that bench/train_bench.sh can put both numbers side by side.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "bench.h"
#include "forja/bench.h"
#include "forja/error.h"

namespace forja::cli {
namespace {

int run_bench_train(Args& args) {
  args.reject_unknown({"shape", "batch", "seq", "steps", "warmup", "recompute", "device", "base-quant"});
  bench::TrainOptions o;
  o.shape = args.option_or("shape", "tinyllama");
  o.batch = std::stoll(args.option_or("batch", "8"));
  o.seq = std::stoll(args.option_or("seq", "1024"));
  o.steps = std::stoll(args.option_or("steps", "10"));
  o.warmup = std::stoll(args.option_or("warmup", "3"));
  const std::string recompute = args.option_or("recompute", "off");
  if (recompute != "off" && recompute != "on" && recompute != "selective")
    throw Error("--recompute takes off, on or selective, got '" + recompute + "'");
  o.recompute = recompute == "on";
  o.selective_checkpointing = recompute == "selective";
  o.device = args.option_or("device", "cuda");
  const std::string base_quant = args.option_or("base-quant", "none");
  if (base_quant != "none" && base_quant != "nf4")
    throw Error("--base-quant takes none or nf4, got '" + base_quant + "'");
  o.nf4_base = base_quant == "nf4";

  const bench::TrainResult r = bench::train(o);
  if (args.flag("json")) {
    nlohmann::ordered_json j = {{"bench", "train"},
                                {"shape", o.shape},
                                {"batch", o.batch},
                                {"seq", o.seq},
                                {"steps", o.steps},
                                {"recompute", o.recompute},
                                {"selective_checkpointing", o.selective_checkpointing},
                                {"base_quant", base_quant},
                                {"step_s", r.step_s},
                                {"tokens_per_s", r.tokens_per_s},
                                {"peak_gib", r.peak_gib},
                                {"lora_params", r.lora_params},
                                {"loss_first", r.loss_first},
                                {"loss_last", r.loss_last}};
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf(
        "forja train %s%s %lldx%lld%s: %.0f tokens/s (%.3f s/step), peak %.1f GiB allocated, loss %.3f -> "
        "%.3f\n",
        o.shape.c_str(), o.nf4_base ? " (nf4 base)" : "", static_cast<long long>(o.batch),
        static_cast<long long>(o.seq), o.recompute ? " (recompute)" : "", r.tokens_per_s, r.step_s,
        r.peak_gib, r.loss_first, r.loss_last);
  }
  return 0;
}

}  // namespace
}  // namespace forja::cli

FORJA_BENCH(train, "LoRA training tokens/s and peak GPU memory at a real shape (random weights)",
            "bench train --shape tinyllama|mistral7b|qwen3_1_7b|gemma3_1b|gemma2_2b [--batch 8] [--seq 1024] "
            "[--steps 10] [--recompute on|selective] [--base-quant none|nf4] [--json]",
            forja::cli::run_bench_train);
