// forja-cli bench model --shape tinyllama|mistral7b|qwen3_1_7b|gemma3_1b|gemma2_2b --out DIR [--seed 0]
// A benchmark shape's random weights written as a model folder (forja::bench::write_random_model), for the
// benchmarks that start from a checkpoint on disk: GGUF export and quantization against llama.cpp's.
#include <charconv>
#include <cstdio>

#include "bench.h"
#include "forja/bench.h"
#include "forja/error.h"

namespace forja::cli {
namespace {

int run_bench_model(Args& args) {
  args.reject_unknown({"shape", "out", "seed"});
  const std::string shape = args.option_or("shape", "tinyllama");
  const auto out = args.option("out");
  if (!out) throw Error("bench model needs --out DIR", "Give a new folder for the model.");
  const std::string seed_text = args.option_or("seed", "0");
  uint64_t seed = 0;
  const auto [end, ec] = std::from_chars(seed_text.data(), seed_text.data() + seed_text.size(), seed);
  if (ec != std::errc{} || end != seed_text.data() + seed_text.size())
    throw Error("--seed takes a whole number, got '" + seed_text + "'");
  const int64_t bytes = bench::write_random_model(bench::shape_config_json(shape), *out, seed);
  std::printf("wrote %s: %s with random bf16 weights, %.2f GB (no tokenizer)\n", out->c_str(), shape.c_str(),
              static_cast<double>(bytes) / 1e9);
  return 0;
}

}  // namespace
}  // namespace forja::cli

FORJA_BENCH(model, "Write a real shape's random weights as a model folder (for the export benchmarks)",
            "bench model --shape tinyllama|mistral7b|qwen3_1_7b|gemma3_1b|gemma2_2b --out DIR [--seed 0]",
            forja::cli::run_bench_model);
