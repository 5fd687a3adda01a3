// forja-cli bench decode --shape tinyllama|mistral7b|qwen3_1_7b|gemma3_1b [--prompt 128] [--new 256] [--runs
// 3] [--graphs on|off]
//                        [--json]
// Batch-1 greedy decode at a real model shape (random bf16 weights made on the device): decode tokens/s, time
// to the first token, and the device-to-device copy bandwidth measured in the same run, which gives the
// roofline (bandwidth / weight bytes: every decode step reads every weight once). bench/decode_bench.py runs
// transformers' generate in the same run and prints the side-by-side table.
#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "bench.h"
#include "bench_shapes.h"
#include "causal_lm.h"
#include "engine.h"
#include "forja/error.h"
#include "forja/model_config.h"
#include "weights.h"

namespace forja::cli {
namespace {

// The shared shapes (bench_shapes.h), with room for the 2048-token prompt and the new tokens (the positions'
// limit changes nothing a step computes).
ModelConfig shape_config(const std::string& shape) {
  ModelConfig c = parse_model_config_text(bench_shape_config(shape), "bench:" + shape);
  c.max_position_embeddings = std::max<int64_t>(c.max_position_embeddings, 4096);
  return c;
}

// Random weights made directly on the device (CPU generation of 7B values would take longer than the
// benchmark): norms 1, biases 0, matrices N(0, 1/fan_in), embeddings N(0, 1), as RandomWeights does.
class DeviceRandomWeights final : public WeightProvider {
 public:
  DeviceRandomWeights(at::ScalarType dtype, at::Device device) : WeightProvider(dtype, device) {}
  at::Tensor get(const std::string& name, const std::vector<int64_t>& shape) override {
    auto opts = at::TensorOptions().dtype(dtype_).device(device_);
    if (name.find("norm") != std::string::npos) return at::ones(shape, opts);
    if (shape.size() == 1) return at::zeros(shape, opts);
    if (name.find("embed") != std::string::npos) return at::randn(shape, opts);
    return at::randn(shape, opts) * (1.0 / std::sqrt(static_cast<double>(shape[1])));
  }
  bool has(const std::string&) const override { return true; }
};

// Device-to-device copy bandwidth (bytes read + written per second) of a 1 GiB buffer.
double copy_bandwidth(const at::Device& device) {
  if (!device.is_cuda()) return 0;
  constexpr int64_t kBytes = int64_t{1} << 30;
  constexpr int kCopies = 20;
  at::Tensor src = at::ones({kBytes / 2}, at::TensorOptions().dtype(at::kBFloat16).device(device));
  at::Tensor dst = at::empty_like(src);
  dst.copy_(src);
  dst[0].item<float>();  // waits for the device
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kCopies; ++i) dst.copy_(src);
  dst[0].item<float>();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return 2.0 * static_cast<double>(kBytes) * kCopies / s;
}

int run_decode_bench(Args& args) {
  args.reject_unknown({"shape", "prompt", "new", "runs", "device", "dtype", "graphs", "base-quant"});
  const std::string shape = args.option_or("shape", "tinyllama");
  const int64_t prompt_len = std::stoll(args.option_or("prompt", "128"));
  const int64_t new_tokens = std::stoll(args.option_or("new", "256"));
  const int runs = std::max(1, std::stoi(args.option_or("runs", "3")));
  const at::Device device = resolve_device(args.option_or("device", "auto"));
  const at::ScalarType dtype = resolve_dtype(args.option_or("dtype", "bf16"), device);
  at::NoGradGuard no_grad;
  at::manual_seed(0);

  const double bandwidth = copy_bandwidth(device);
  DeviceRandomWeights weights(dtype, device);
  const std::string base_quant = args.option_or("base-quant", "none");
  if (base_quant == "nf4") {
    // QLoRA's 4-bit base, quantized on the device layer by layer. Plain fp32 absmax (no double quantization):
    // what the decode GEMV then reads is exactly the weight bytes counted below, so the roofline is honest.
    weights.set_nf4(quant::Nf4Options{});
  } else if (base_quant != "none") {
    throw Error("--base-quant takes none or nf4, got '" + base_quant + "'");
  }
  std::shared_ptr<CausalLM> model = make_causal_lm(shape_config(shape), weights);
  EngineOptions options;
  options.max_context = prompt_len + new_tokens + 1;
  const std::string graphs =
      args.option_or("graphs", "on");  // an option: `bench` declares only --json as a flag
  if (graphs != "on" && graphs != "off") throw Error("--graphs takes on or off, got '" + graphs + "'");
  options.cuda_graphs = graphs == "on";
  Generator gen(std::make_unique<Generator::Impl>(model, options, "bench:" + shape));

  at::Tensor random_ids = at::randint(3, model->config().vocab_size, {prompt_len}, at::kLong);
  std::vector<int32_t> prompt(random_ids.data_ptr<int64_t>(), random_ids.data_ptr<int64_t>() + prompt_len);
  GenerationConfig cfg;
  cfg.max_new_tokens = new_tokens;
  cfg.stop_at_eos = false;    // a fixed number of tokens, as the peer's min_new_tokens does
  gen.generate(prompt, cfg);  // warm-up: cuBLAS heuristics, graph capture for every bucket this run needs

  std::vector<double> ttft, decode;
  for (int i = 0; i < runs; ++i) {
    gen.reset();  // a cold conversation: the whole prompt is prefilled
    auto r = gen.generate(prompt, cfg);
    ttft.push_back(r.stats.first_token_seconds);
    decode.push_back(r.stats.decode_tokens_per_second());
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  const ModelFacts facts = gen.facts();
  const double tok_s = median(decode), first = median(ttft);
  const double roofline = bandwidth > 0 ? bandwidth / static_cast<double>(facts.weight_bytes) : 0;
  nlohmann::ordered_json out = {{"engine", "forja"},
                                {"base_quant", base_quant},
                                {"shape", shape},
                                {"prompt_tokens", prompt_len},
                                {"new_tokens", new_tokens},
                                {"runs", runs},
                                {"device", facts.device},
                                {"dtype", facts.dtype},
                                {"cuda_graphs", facts.cuda_graphs},
                                {"parameters", facts.parameters},
                                {"weight_bytes", facts.weight_bytes},
                                {"kv_cache_bytes", facts.kv_cache_bytes},
                                {"copy_bandwidth_gb_s", bandwidth / 1e9},
                                {"roofline_tok_s", roofline},
                                {"decode_tok_s", tok_s},
                                {"roofline_fraction", roofline > 0 ? tok_s / roofline : 0.0},
                                {"first_token_ms", first * 1e3},
                                {"prefill_tok_s", static_cast<double>(prompt_len) / first},
                                {"decode_tok_s_runs", decode},
                                {"first_token_ms_runs", ttft}};
  for (auto& v : out["first_token_ms_runs"]) v = v.get<double>() * 1e3;
  if (args.flag("json")) {
    std::printf("%s\n", out.dump().c_str());
  } else {
    std::printf("decode %s, prompt %lld, %lld new tokens, %s %s%s\n", shape.c_str(),
                static_cast<long long>(prompt_len), static_cast<long long>(new_tokens), facts.device.c_str(),
                facts.dtype.c_str(), facts.cuda_graphs ? ", CUDA graphs" : "");
    std::printf("  weights %.2f GB, copy bandwidth %.0f GB/s -> roofline %.0f tok/s\n",
                facts.weight_bytes / 1e9, bandwidth / 1e9, roofline);
    std::printf("  decode %.1f tok/s (%.0f%% of roofline), first token %.1f ms (prefill %.0f tok/s)\n", tok_s,
                roofline > 0 ? 100 * tok_s / roofline : 0.0, first * 1e3,
                static_cast<double>(prompt_len) / first);
  }
  return 0;
}

}  // namespace
}  // namespace forja::cli

FORJA_BENCH(decode, "Batch-1 decode tok/s, time to first token and roofline at a real model shape",
            "bench decode --shape tinyllama|mistral7b|qwen3_1_7b|gemma3_1b [--prompt N] [--new N] [--runs R] "
            "[--graphs on|off] "
            "[--base-quant none|nf4] [--json]",
            forja::cli::run_decode_bench);
