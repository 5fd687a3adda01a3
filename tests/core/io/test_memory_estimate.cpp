// The GPU memory estimates of the Model and Train panes against what was measured: Forja's allocator peaks on
// the H200 (bench/RESULTS.md, 2026-12-03: TinyLlama-1.1B 8 × 1024 → 12.9 GiB, Mistral-7B 4 × 1024 → 31.8
// GiB).
#include <QtTest>

#include "forja/memory_estimate.h"
#include "forja/model_config.h"

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

forja::ModelShape shape(const char* config_json) {
  return forja::model_shape(forja::parse_model_config_text(config_json, "config.json"));
}

const char* kTinyLlama =
    R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 32000,
  "hidden_size": 2048, "intermediate_size": 5632, "num_hidden_layers": 22, "num_attention_heads": 32,
  "num_key_value_heads": 4, "max_position_embeddings": 2048, "rms_norm_eps": 1e-5, "tie_word_embeddings": false})";
const char* kMistral =
    R"({"architectures": ["MistralForCausalLM"], "model_type": "mistral", "vocab_size": 32000,
  "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
  "num_key_value_heads": 8, "max_position_embeddings": 32768, "rms_norm_eps": 1e-5, "tie_word_embeddings": false})";

// What LibTorch's allocator sees: everything but the CUDA context.
double allocator_gib(const forja::MemoryEstimate& m) {
  return static_cast<double>(m.total() - m.cuda_context) / kGiB;
}

}  // namespace

class TestMemoryEstimate : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void parametersAndLoraCountTheRealShapes() {
    // TinyLlama-1.1B: 1,100,048,384 parameters (hf_peft_baseline.py printed it); LoRA r16 on the 7
    // projections: 12,615,680 (forja-cli bench train printed it).
    QCOMPARE(shape(kTinyLlama).parameters, int64_t(1100048384));
    QCOMPARE(forja::lora_parameter_count(shape(kTinyLlama), 16, forja::TrainShape{}.target_modules),
             int64_t(12615680));
    // Mistral-7B: 7,241,732,096 and 41,943,040, from the same runs.
    QCOMPARE(shape(kMistral).parameters, int64_t(7241732096));
    QCOMPARE(forja::lora_parameter_count(shape(kMistral), 16, forja::TrainShape{}.target_modules),
             int64_t(41943040));
    QCOMPARE(forja::lora_parameter_count(shape(kMistral), 16, {"q_proj", "v_proj"}),
             int64_t(32 * 16 * ((4096 + 4096) + (4096 + 1024))));
    // Phi-3-mini: PEFT adapts the fused qkv_proj (3072 -> 9216) and gate_up_proj (3072 -> 16384) whole, r16
    // on its four projections: 32 layers × 16 × ((3072 + 9216) + (3072 + 3072) + (3072 + 16384) + (8192 +
    // 3072)), and the same parameter count as the unfused layout.
    const char* phi3 = R"({"model_type": "phi3", "vocab_size": 32064, "hidden_size": 3072,
      "intermediate_size": 8192, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 32,
      "max_position_embeddings": 4096, "tie_word_embeddings": false})";
    QVERIFY(shape(phi3).fused);
    QCOMPARE(
        forja::lora_parameter_count(shape(phi3), 16, {"qkv_proj", "o_proj", "gate_up_proj", "down_proj"}),
        int64_t(32 * 16 * ((3072 + 9216) + (3072 + 3072) + (3072 + 16384) + (8192 + 3072))));
    forja::ModelShape unfused = shape(phi3);
    unfused.fused = false;
    QCOMPARE(shape(phi3).parameters, unfused.parameters);
  }

  void trainingEstimateMatchesTheMeasuredPeaks() {
    forja::TrainShape t;
    t.batch_size = 8;
    t.seq_len = 1024;
    const double tiny = allocator_gib(forja::estimate_train_memory(shape(kTinyLlama), t));
    QVERIFY2(std::abs(tiny - 12.9) / 12.9 < 0.05, qPrintable(QString::number(tiny)));
    t.batch_size = 4;
    const double mistral = allocator_gib(forja::estimate_train_memory(shape(kMistral), t));
    QVERIFY2(std::abs(mistral - 31.8) / 31.8 < 0.05, qPrintable(QString::number(mistral)));
    // Selective checkpointing: measured 9.46 GiB and 26.17 GiB at the same shapes (bench/RESULTS.md,
    // train_ours.sh).
    t.selective_checkpointing = true;
    const double mistral_sel = allocator_gib(forja::estimate_train_memory(shape(kMistral), t));
    QVERIFY2(std::abs(mistral_sel - 26.17) / 26.17 < 0.05, qPrintable(QString::number(mistral_sel)));
    t.batch_size = 8;
    const double tiny_sel = allocator_gib(forja::estimate_train_memory(shape(kTinyLlama), t));
    QVERIFY2(std::abs(tiny_sel - 9.46) / 9.46 < 0.05, qPrintable(QString::number(tiny_sel)));
    t.selective_checkpointing = false;
    t.batch_size = 4;
    // Activation checkpointing keeps one block's activations: far less (measured 5.0 GiB for TinyLlama at
    // 8 × 1024 before the fused kernels); and memory grows with the batch.
    t.batch_size = 8;
    t.activation_checkpointing = true;
    const double tiny_rc = allocator_gib(forja::estimate_train_memory(shape(kTinyLlama), t));
    QVERIFY2(tiny_rc < 5.5 && tiny_rc > 2.5, qPrintable(QString::number(tiny_rc)));
    t.activation_checkpointing = false;
    t.batch_size = 16;
    QVERIFY(allocator_gib(forja::estimate_train_memory(shape(kTinyLlama), t)) > tiny + 8);
  }

  void chatEstimateIsWeightsPlusTheKvCache() {
    const auto m = forja::estimate_chat_memory(shape(kMistral), 4096);
    QCOMPARE(m.weights, int64_t(2) * 7241732096);
    QCOMPARE(m.activations,
             int64_t(2) * 32 * (8 * 128) * 4096 * 2);  // K and V, 32 layers, 8 heads of 128, bf16
    QVERIFY(m.adapters == 0 && m.cuda_context > 0);
  }

  void nf4BaseCountsFourBitProjections() {
    // Mistral-7B: 6,979,321,856 projection weights (32 layers x (2 x 4096² + 2 x 4096 x 1024 + 3 x 4096 x
    // 14336)) at half a byte, plus one absmax per 64: 8 bits each and an fp32 scale per 256 with double
    // quantization, fp32 each without; the other 262,410,240 parameters (embeddings, head, norms) stay bf16.
    const int64_t proj = 6979321856, rest = 7241732096 - proj, blocks = proj / 64;
    QCOMPARE(forja::base_weight_bytes(shape(kMistral), true, true),
             2 * rest + proj / 2 + blocks + 4 * (blocks / 256));
    QCOMPARE(forja::base_weight_bytes(shape(kMistral), true, false), 2 * rest + proj / 2 + 4 * blocks);
    forja::TrainShape t;
    t.activation_checkpointing = true;
    const auto bf16 = forja::estimate_train_memory(shape(kMistral), t);
    t.nf4_base = true;
    const auto nf4 = forja::estimate_train_memory(shape(kMistral), t);
    QCOMPARE(nf4.weights, forja::base_weight_bytes(shape(kMistral), true, true));
    QCOMPARE(nf4.activations, bf16.activations);  // the activations do not change with the base's storage
    QVERIFY(nf4.weights < bf16.weights * 3 / 10);
    const auto chat = forja::estimate_chat_memory(shape(kMistral), 4096, true);
    QCOMPARE(chat.weights, forja::base_weight_bytes(shape(kMistral), true, true) + 4 * blocks);
  }
};

QTEST_GUILESS_MAIN(TestMemoryEstimate)
#include "test_memory_estimate.moc"
