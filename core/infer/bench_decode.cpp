// forja::bench::decode (forja/bench.h): batch-1 greedy decode at a real model shape, random weights made on
// the device, and the device-to-device copy bandwidth measured in the same run, which gives the roofline.
#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <algorithm>
#include <chrono>

#include "causal_lm.h"
#include "engine.h"
#include "forja/bench.h"
#include "forja/error.h"
#include "weights.h"

namespace forja::bench {
namespace {

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

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

DecodeResult decode(const DecodeOptions& o) {
  if (o.prompt_tokens < 1 || o.new_tokens < 1)
    throw Error("a decode benchmark needs a prompt and new tokens");
  const at::Device device = resolve_device(o.device);
  const at::ScalarType dtype = resolve_dtype(o.dtype, device);
  const int runs = std::max(1, o.runs);
  at::NoGradGuard no_grad;
  at::manual_seed(0);

  DecodeResult r;
  r.copy_bandwidth = copy_bandwidth(device);
  DeviceRandomWeights weights(dtype, device);
  if (o.nf4_base) weights.set_nf4(quant::Nf4Options{});  // quantized on the device layer by layer
  // Room for the longest prompt and the new tokens: the positions' limit changes nothing a step computes.
  ModelConfig config = shape_config(o.shape);
  config.max_position_embeddings = std::max<int64_t>(config.max_position_embeddings, 4096);
  std::shared_ptr<CausalLM> model = make_causal_lm(config, weights);
  EngineOptions options;
  options.max_context = o.prompt_tokens + o.new_tokens + 1;
  options.cuda_graphs = o.cuda_graphs;
  Generator gen(std::make_unique<Generator::Impl>(model, options, "bench:" + o.shape));

  at::Tensor random_ids = at::randint(3, config.vocab_size, {o.prompt_tokens}, at::kLong);
  std::vector<int32_t> prompt(random_ids.data_ptr<int64_t>(),
                              random_ids.data_ptr<int64_t>() + o.prompt_tokens);
  GenerationConfig cfg;
  cfg.max_new_tokens = o.new_tokens;
  cfg.stop_at_eos = false;    // a fixed number of tokens, as the peer's min_new_tokens does
  gen.generate(prompt, cfg);  // warm-up: cuBLAS heuristics, graph capture for every bucket this run needs
  for (int i = 0; i < runs; ++i) {
    gen.reset();  // a cold conversation: the whole prompt is prefilled
    auto g = gen.generate(prompt, cfg);
    r.first_token_s_runs.push_back(g.stats.first_token_seconds);
    r.decode_tok_s_runs.push_back(g.stats.decode_tokens_per_second());
  }
  const ModelFacts facts = gen.facts();
  r.device = facts.device;
  r.dtype = facts.dtype;
  r.cuda_graphs = facts.cuda_graphs;
  r.parameters = facts.parameters;
  r.weight_bytes = facts.weight_bytes;
  r.kv_cache_bytes = facts.kv_cache_bytes;
  r.roofline_tok_s = r.copy_bandwidth > 0 ? r.copy_bandwidth / static_cast<double>(facts.weight_bytes) : 0;
  r.decode_tok_s = median(r.decode_tok_s_runs);
  r.first_token_s = median(r.first_token_s_runs);
  return r;
}

}  // namespace forja::bench
