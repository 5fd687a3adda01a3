// QLoRA on CUDA: quantizing on the GPU gives core/quant's CPU codes and absmax bit for bit; the
// NF4 projection's forward and backward under autograd against the dequantized reference; 100 steps of QLoRA
// against bf16 LoRA from the same initial adapter on a small Llama-shaped model (loss curves within 3 %, the
// issue's bar); and the fused dequantize-GEMV of batch-1 decode against dequantize + GEMM.
#include <ATen/core/grad_mode.h>
#include <torch/cuda.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>

#include "causal_lm.h"
#include "engine.h"
#include "gpu_harness.h"
#include "layers.h"
#include "lora_linear.h"
#include "nf4_weight.h"
#include "reference.h"
#include "trainer.h"
#include "weights.h"

using namespace forja;

namespace {

const at::Device kCuda(at::kCUDA, 0);

std::vector<float> host_floats(const at::Tensor& t) {
  at::Tensor c = t.to(at::kCPU, at::kFloat).contiguous();
  return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
}

bool same(const quant::Nf4Tensor& a, const quant::Nf4Tensor& b) {
  if (a.codes != b.codes || a.absmax_q != b.absmax_q || a.absmax.size() != b.absmax.size() ||
      a.absmax_scale.size() != b.absmax_scale.size())
    return false;
  return std::memcmp(a.absmax.data(), b.absmax.data(), a.absmax.size() * 4) == 0 &&
         std::memcmp(a.absmax_scale.data(), b.absmax_scale.data(), a.absmax_scale.size() * 4) == 0 &&
         std::memcmp(&a.absmax_offset, &b.absmax_offset, 4) == 0;
}

void quantize_matches_cpu() {
  at::manual_seed(1);
  struct Case {
    int64_t rows, cols;
    at::ScalarType dtype;
    bool dq;
  };
  for (const Case& c : {Case{4096, 4096, at::kBFloat16, true}, Case{1024, 14336, at::kBFloat16, false},
                        Case{333, 77, at::kFloat, true}, Case{5, 64, at::kFloat, false}}) {
    at::Tensor w = (at::randn({c.rows, c.cols}) * 0.02).to(c.dtype);
    w.view({-1}).narrow(0, 0, 64).zero_();
    quant::Nf4Options o;
    o.double_quant = c.dq;
    quant::Nf4Tensor gpu = nf4_tensor_from(quantize_nf4_weight(w.to(kCuda), o, "w"));
    quant::Nf4Tensor cpu = quant::quantize_nf4(host_floats(w), {c.rows, c.cols}, o);
    FORJA_CHECK(same(gpu, cpu), "GPU quantization of [%lld, %lld] (dq %d) differs from core/quant",
                (long long)c.rows, (long long)c.cols, int(c.dq));
  }
  // Ties: values exactly on the midpoints between codes take the lower code on the GPU too.
  std::vector<float> w(64, 0.0f);
  w[0] = 1.0f;
  for (size_t i = 0; i < 15; ++i) {
    const float mid = static_cast<float>((double(quant::kNf4Codes[i]) + quant::kNf4Codes[i + 1]) / 2.0);
    w[1 + 2 * i] = mid;
    w[2 + 2 * i] = std::nextafter(mid, 2.0f);
  }
  at::Tensor t = at::from_blob(w.data(), {64}, at::kFloat).clone().to(kCuda);
  FORJA_CHECK(same(nf4_tensor_from(quantize_nf4_weight(t, {}, "ties")), quant::quantize_nf4(w, {64})),
              "GPU quantization of midpoints differs from core/quant");
}

void autograd_matches_reference() {
  at::manual_seed(2);
  quant::Nf4Options o;
  o.double_quant = true;
  at::Tensor w = at::randn({1024, 768}) * 0.03;
  Nf4Weight q = quantize_nf4_weight(w.to(kCuda), o, "w");
  // The dequantize kernel against the CPU reference, bit for bit.
  std::vector<uint16_t> ref_bits = quant::dequantize_nf4_bf16(nf4_tensor_from(q));
  at::Tensor deq = dequantize_nf4_weight(q, at::kBFloat16).cpu();
  FORJA_CHECK(std::memcmp(deq.data_ptr(), ref_bits.data(), ref_bits.size() * 2) == 0,
              "CUDA dequantize differs from the reference");
  at::Tensor wq = deq.to(kCuda);
  at::Tensor x = (at::randn({4, 33, 768}) * 0.5).to(kCuda, at::kBFloat16).requires_grad_(true);
  at::Tensor y = nf4_linear(x, q);
  at::Tensor y_ref = at::linear(x.detach(), wq);
  const double fwd = forja_test::relative_error(y.detach(), y_ref);
  at::Tensor gy = at::randn_like(y);
  y.backward(gy);
  const double bwd = forja_test::relative_error(x.grad(), at::matmul(gy, wq));
  std::printf("nf4_linear bf16: forward rel err %.3g, backward rel err %.3g\n", fwd, bwd);
  // The same GEMMs on the same bf16 values: equal up to cuBLAS's choice of kernel (bf16 rounding, 2^-8).
  FORJA_CHECK(fwd <= 4e-3, "forward %g", fwd);
  FORJA_CHECK(bwd <= 4e-3, "backward %g", bwd);
}

// A Llama-shaped model a little larger than the fixtures (whole NF4 blocks, several of them per row), random
// seeded weights.
ModelConfig small_llama() {
  ModelConfig c = parse_model_config_text(
      R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 512, "hidden_size": 256,
          "intermediate_size": 704, "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2,
          "max_position_embeddings": 512, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
          "tie_word_embeddings": false, "hidden_act": "silu"})",
      "qlora-test");
  return c;
}

std::vector<double> train_losses(bool nf4, int64_t steps) {
  RandomWeights weights(7, at::kBFloat16, kCuda);
  if (nf4) weights.set_nf4(quant::Nf4Options{64, true, 256});
  auto model = make_causal_lm(small_llama(), weights);
  LoraOptions lo;
  lo.rank = 8;
  lo.alpha = 16;
  lo.seed = 3;  // the same initial A in both runs (B starts at zero)
  auto adapters = LoraAdapters::attach(*model, lo);
  OptimizerSettings opt;
  opt.learning_rate = 1e-3;
  opt.schedule = LrSchedule::Constant;
  train::Trainer trainer(*model, *adapters, opt, steps, /*activation_checkpointing=*/true);
  // Four fixed batches of 4 x 128 tokens from a small Markov chain, so that there is something to learn.
  std::mt19937 rng(11);
  std::vector<Batch> batches;
  for (int k = 0; k < 4; ++k) {
    Batch b;
    b.rows = 4;
    b.seq_len = 128;
    int32_t tok = static_cast<int32_t>(rng() % 512);
    for (int64_t i = 0; i < b.rows * b.seq_len; ++i) {
      b.input_ids.push_back(tok);
      tok = static_cast<int32_t>((tok * 7 + 3 + static_cast<int32_t>(rng() % 4)) % 512);
    }
    b.labels.assign(b.input_ids.size(), kIgnoreIndex);
    for (int64_t r = 0; r < b.rows; ++r)
      for (int64_t t = 0; t + 1 < b.seq_len; ++t)
        b.labels[r * b.seq_len + t] = b.input_ids[r * b.seq_len + t + 1];
    b.loss_tokens = b.rows * (b.seq_len - 1);
    batches.push_back(b);
  }
  std::vector<double> out;
  for (int64_t s = 0; s < steps; ++s) out.push_back(trainer.step({batches[s % 4]}).loss);
  return out;
}

// The issue's bar: the QLoRA loss curve within 3 % of bf16 LoRA's, step by step. The same two runs in fp32 on
// the CPU (measured when this test was written) fell from 6.68 to 1.34 and differed by at most 1.2 %; bf16
// rounding adds its own noise on top.
void qlora_follows_lora() {
  const int64_t steps = 100;
  std::vector<double> lora = train_losses(false, steps), qlora = train_losses(true, steps);
  double worst = 0;
  for (int64_t i = 0; i < steps; ++i) worst = std::max(worst, std::abs(qlora[i] - lora[i]) / lora[i]);
  std::printf(
      "100 steps: LoRA loss %.4f -> %.4f, QLoRA %.4f -> %.4f, worst per-step relative difference %.4f\n",
      lora.front(), lora.back(), qlora.front(), qlora.back(), worst);
  FORJA_CHECK(qlora.back() < 0.8 * qlora.front(), "QLoRA loss did not fall: %g -> %g", qlora.front(),
              qlora.back());
  FORJA_CHECK(worst <= 0.03, "QLoRA loss curve differs from LoRA's by %g (the bar: within 3 %%)", worst);
}

void gemv_matches_gemm() {
  at::NoGradGuard no_grad;
  at::manual_seed(4);
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{6144, 4096}, {4096, 14336}, {96, 160}}) {
    Nf4Weight q = quantize_nf4_weight((at::randn({rows, cols}) * 0.02).to(kCuda), {}, "w");
    at::Tensor x = at::randn({1, cols}).to(kCuda, at::kBFloat16);
    at::Tensor gemv = nf4_matmul(x, q);
    at::Tensor gemm = at::mm(x, dequantize_nf4_weight(q, at::kBFloat16).t());
    const double err = forja_test::relative_error(gemv, gemm);
    std::printf("NF4 GEMV [%lld, %lld] vs dequantize + GEMM: rel err %.3g\n", (long long)rows,
                (long long)cols, err);
    // Both accumulate in fp32 and round once to bf16 (2^-8 relative), in different orders.
    FORJA_CHECK(err <= 8e-3, "GEMV [%lld, %lld]: %g", (long long)rows, (long long)cols, err);
  }
  // A whole model: cached decode steps (GEMV, CUDA graphs) against one prefill of all tokens (dequantize +
  // GEMM).
  LoadOptions lo{at::kBFloat16, kCuda};
  lo.nf4 = quant::Nf4Options{};
  auto lm = load_causal_lm(forja_test::fixture_dir("llama"), lo);
  Generator::Impl engine(lm, {}, "");
  infer::Decoder& dec = engine.decoder();
  at::Tensor row = forja_test::expected("llama", "input_ids")[0].to(kCuda);
  const int64_t t = row.size(0);
  at::Tensor all = dec.prefill(row, 0, true);
  dec.prefill(row.narrow(0, 0, t - 1), 0);
  at::Tensor last = dec.decode(row.narrow(0, t - 1, 1), at::full({1}, t - 1, row.options()), t)[0];
  const double err = forja_test::relative_error(last, all[t - 1]);
  std::printf("NF4 model: decode step vs prefill logits rel err %.3g\n", err);
  FORJA_CHECK(err <= 2e-2, "decode vs prefill on the NF4 model: %g (the bf16 bar)", err);
}

}  // namespace

int main() {
  if (!torch::cuda::is_available()) forja_test::skip("no CUDA GPU visible (or this LibTorch has no CUDA)");
  at::globalContext().setAllowTF32CuBLAS(false);
  std::printf("NF4 kernels: %s\n", nf4_kernels_active() ? "active" : "not used (LibTorch ops)");
  quantize_matches_cpu();
  autograd_matches_reference();
  gemv_matches_gemm();
  qlora_follows_lora();
  return forja_test::finish("gpu qlora");
}
