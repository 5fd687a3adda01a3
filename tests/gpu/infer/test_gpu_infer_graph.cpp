// CUDA-graph decode against eager decode on the GPU: the same tokens and (fp32, TF32 off) the same logits
// within 1e-4 (the fp32 parity bar; graph and eager differ only in how many masked cache slots the
// attention sums over), for every fixture model, across a graph-bucket boundary, and with a LoRA adapter on.
#include <ATen/core/grad_mode.h>
#include <torch/cuda.h>

#include <cstdio>
#include <filesystem>

#include "causal_lm.h"
#include "engine.h"
#include "forja/model_config.h"
#include "gpu_harness.h"
#include "infer_compat.h"
#include "reference.h"
#include "weights.h"

namespace {

const at::Device kCuda(at::kCUDA, 0);

std::vector<int32_t> ids_of(const at::Tensor& t) {
  at::Tensor flat = t.reshape({-1}).to(at::kLong).contiguous();
  return std::vector<int32_t>(flat.data_ptr<int64_t>(), flat.data_ptr<int64_t>() + flat.numel());
}

std::unique_ptr<forja::Generator::Impl> engine(std::shared_ptr<forja::CausalLM> lm, bool graphs,
                                               int64_t context) {
  forja::EngineOptions o;
  o.cuda_graphs = graphs;
  o.max_context = context;
  return std::make_unique<forja::Generator::Impl>(std::move(lm), o, "");
}

// Greedy generation with graphs and eagerly; every step's logits compared.
void compare(const std::string& what, forja::Generator::Impl& graphed, forja::Generator::Impl& eager,
             const std::vector<int32_t>& prompt, int64_t steps) {
  FORJA_CHECK(graphed.runner().uses_cuda_graphs(), "%s: the graphed engine is not using CUDA graphs",
              what.c_str());
  FORJA_CHECK(!eager.runner().uses_cuda_graphs(), "%s: the eager engine uses graphs", what.c_str());
  at::Tensor a = graphed.decoder().prefill(at::tensor(std::vector<int64_t>(prompt.begin(), prompt.end())), 0);
  eager.decoder().prefill(at::tensor(std::vector<int64_t>(prompt.begin(), prompt.end())), 0);
  int32_t token = static_cast<int32_t>(a.argmax().item<int64_t>());
  double worst = 0;
  for (int64_t i = 0; i < steps; ++i) {
    const int64_t pos = static_cast<int64_t>(prompt.size()) + i;
    auto g = graphed.runner().step(token, pos);
    at::Tensor g_logits = g.logits.clone();
    auto e = eager.runner().step(token, pos);
    worst = std::max(worst, forja_test::max_abs_error(g_logits, e.logits));
    FORJA_CHECK(g.best == e.best, "%s step %lld: graph chose %d, eager %d", what.c_str(),
                static_cast<long long>(i), g.best, e.best);
    token = e.best;
  }
  std::printf("%-28s %lld graph(s), max |graph - eager| = %.3g\n", what.c_str(),
              static_cast<long long>(graphed.runner().graph_count()), worst);
  FORJA_CHECK(worst <= 1e-4, "%s: graph vs eager logits differ by %g", what.c_str(), worst);
}

}  // namespace

int main() {
  if (!torch::cuda::is_available()) forja_test::skip("no CUDA GPU visible (or this LibTorch has no CUDA)");
  if (!forja::infer::compat::kHasCudaGraphs) forja_test::skip("this LibTorch has no CUDA graphs (needs 2.x)");
  at::NoGradGuard no_grad;
  at::globalContext().setAllowTF32CuBLAS(false);  // fp32 comparisons mean true fp32 matmuls

  for (const auto& name : forja_test::fixture_models()) {
    auto load = [&] { return forja::load_causal_lm(forja_test::fixture_dir(name), {at::kFloat, kCuda}); };
    auto graphed = engine(load(), true, 0), eager = engine(load(), false, 0);
    compare(name, *graphed, *eager, ids_of(forja_test::expected(name, "gen_prompt")), 12);
    // And the public loop on the graph path reproduces transformers' greedy answer.
    forja::Generator gen(engine(load(), true, 0));
    forja::GenerationConfig cfg;
    cfg.max_new_tokens = cfg.min_new_tokens = 12;  // the fixtures' GEN_NEW, EOS suppressed as there
    auto prompt = ids_of(forja_test::expected(name, "gen_prompt"));
    auto r = gen.generate(prompt, cfg);
    prompt.insert(prompt.end(), r.tokens.begin(), r.tokens.end());
    FORJA_CHECK(prompt == ids_of(forja_test::expected(name, "gen_output")),
                "%s: graph greedy != transformers", name.c_str());
  }

  // Across a bucket boundary (256 -> 512 slots): a llama-shaped random model with a long context.
  {
    forja::ModelConfig c = forja::parse_model_config(forja_test::fixture_dir("llama") / "config.json");
    c.max_position_embeddings = 1024;
    auto make = [&] {
      forja::RandomWeights w(7, at::kFloat, kCuda);
      return forja::make_causal_lm(c, w);
    };
    auto graphed = engine(make(), true, 600), eager = engine(make(), false, 600);
    std::vector<int32_t> prompt;
    for (int i = 0; i < 250; ++i)
      prompt.push_back(3 + (i * 37) % 300);  // arbitrary ids inside the vocab of 320
    compare("llama random, 250 -> 270", *graphed, *eager, prompt, 20);
    FORJA_CHECK(graphed->runner().graph_count() == 2, "expected graphs for buckets 256 and 512, got %lld",
                static_cast<long long>(graphed->runner().graph_count()));
  }

  // With the LoRA adapter on (the training fixture's), graphs captured with it.
  {
    const auto adapter = (std::filesystem::path(FORJA_FIXTURES_DIR) / "train" / "llama" / "final").string();
    auto load = [&] { return forja::load_causal_lm(forja_test::fixture_dir("llama"), {at::kFloat, kCuda}); };
    auto graphed = engine(load(), true, 0), eager = engine(load(), false, 0);
    graphed->load_adapter(adapter);
    eager->load_adapter(adapter);
    compare("llama + adapter", *graphed, *eager, ids_of(forja_test::expected("llama", "gen_prompt")), 12);
  }
  return forja_test::finish("gpu infer graph");
}
