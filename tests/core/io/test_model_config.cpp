// config.json parsing: the fixtures transformers 5.17 wrote, the 4.x layout, and mistakes named clearly.
#include <QtTest>

#include <cmath>

#include "forja/error.h"
#include "forja/model_config.h"
#include "forja/model_info.h"

using namespace forja;
namespace fs = std::filesystem;

namespace {
const fs::path kModels = fs::path(FORJA_FIXTURES_DIR) / "models";

void expect_error(const std::string& json, std::initializer_list<std::string> parts) {
  try {
    parse_model_config_text(json, "/x/config.json");
    QFAIL(("expected an error for " + json).c_str());
  } catch (const Error& e) {
    QVERIFY2(e.message().rfind("/x/config.json: ", 0) == 0, e.message().c_str());
    for (const auto& p : parts)
      QVERIFY2(e.message().find(p) != std::string::npos, (e.message() + " lacks: " + p).c_str());
  }
}
const char* kLlama = R"({"model_type":"llama","vocab_size":10,"hidden_size":8,"intermediate_size":16,
  "num_hidden_layers":1,"num_attention_heads":2)";
}  // namespace

class TestModelConfig : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void fixtures() {
    // Values as set in tests/fixtures/make_fixtures.py.
    ModelConfig l3 = parse_model_config(kModels / "llama3/config.json");
    QCOMPARE(l3.family, Family::Llama);
    QCOMPARE(l3.rope.type, std::string("llama3"));
    QCOMPARE(l3.rope.theta, 500000.0);
    QCOMPARE(l3.rope.factor, 8.0);
    QCOMPARE(l3.rope.original_max_position_embeddings, int64_t(64));
    QCOMPARE(l3.num_kv_heads, int64_t(2));
    ModelConfig m = parse_model_config(kModels / "mistral/config.json");
    QCOMPARE(m.family, Family::Mistral);
    QCOMPARE(m.head_dim, int64_t(24));
    QCOMPARE(m.sliding_window.value_or(0), int64_t(8));
    ModelConfig q = parse_model_config(kModels / "qwen2/config.json");
    QVERIFY(q.qkv_bias && !q.o_bias);
    QCOMPARE(q.rope.theta, 1000000.0);
    QVERIFY(parse_model_config(kModels / "smollm/config.json").tie_word_embeddings);
    ModelConfig g = parse_model_config(kModels / "gpt2/config.json");
    QCOMPARE(g.family, Family::Gpt2);
    QCOMPARE(g.intermediate_size, int64_t(256));  // n_inner null -> 4 * n_embd
    QCOMPARE(g.max_position_embeddings, int64_t(64));
  }

  void gemma() {
    // Gemma 2: one local layer then one global, the scale from query_pre_attn_scalar, both soft-caps.
    ModelConfig g2 = parse_model_config(kModels / "gemma2/config.json");
    QCOMPARE(g2.family, Family::Gemma2);
    QVERIFY(g2.gemma_norms && !g2.qk_norm);
    QCOMPARE(g2.hidden_act, std::string("gelu_pytorch_tanh"));
    QCOMPARE(g2.layer_window(0), int64_t(8));
    QCOMPARE(g2.layer_window(1), int64_t(0));
    QCOMPARE(g2.attention_scale(), 1.0 / std::sqrt(20.0));
    QCOMPARE(g2.attn_softcap, 5.0);
    QCOMPARE(g2.final_softcap, 10.0);
    QVERIFY(!g2.rope_local);
    // Gemma 3: q/k norms, a RoPE per layer type (the global one scaled), no soft-caps.
    ModelConfig g3 = parse_model_config(kModels / "gemma3/config.json");
    QCOMPARE(g3.family, Family::Gemma3);
    QVERIFY(g3.qk_norm && g3.gemma_norms);
    QCOMPARE(g3.attn_softcap, 0.0);
    QCOMPARE(g3.final_softcap, 0.0);
    QCOMPARE(g3.layer_rope(0).theta, 10000.0);
    QCOMPARE(g3.layer_rope(0).type, std::string("default"));
    QCOMPARE(g3.layer_rope(1).theta, 1000000.0);
    QCOMPARE(g3.layer_rope(1).type, std::string("linear"));
    QCOMPARE(g3.layer_rope(1).factor, 8.0);
    QVERIFY(g3.local_layer(0) && !g3.local_layer(1));

    // transformers 4.x wrote no layer_types: the pattern (one global layer in six) and the local base.
    const std::string g3_old = R"({"model_type":"gemma3_text","vocab_size":10,"hidden_size":8,
      "intermediate_size":16,"num_hidden_layers":7,"num_attention_heads":2,"head_dim":4,"sliding_window":4,
      "sliding_window_pattern":6,"rope_theta":1e6,"rope_local_base_freq":1e4,"query_pre_attn_scalar":4,
      "rope_scaling":{"rope_type":"linear","factor":8.0}})";
    ModelConfig old = parse_model_config_text(g3_old, "c.json");
    for (int64_t i = 0; i < 7; ++i) QCOMPARE(old.local_layer(i), i != 5);
    QCOMPARE(old.layer_window(5), int64_t(0));
    QCOMPARE(old.layer_window(6), int64_t(4));
    QCOMPARE(old.layer_rope(0).theta, 10000.0);
    QCOMPARE(old.layer_rope(0).type, std::string("default"));
    QCOMPARE(old.layer_rope(5).theta, 1e6);
    QCOMPARE(old.layer_rope(5).factor, 8.0);
    const std::string g2_old =
        R"({"model_type":"gemma2","vocab_size":10,"hidden_size":8,"intermediate_size":16,
      "num_hidden_layers":3,"num_attention_heads":2,"head_dim":4,"sliding_window":4})";
    ModelConfig old2 = parse_model_config_text(g2_old, "c.json");
    QVERIFY(old2.local_layer(0) && !old2.local_layer(1) && old2.local_layer(2));
    QCOMPARE(old2.attention_scale(), 1.0 / 16.0);  // query_pre_attn_scalar's default, 256

    expect_error(R"({"model_type":"gemma3","vocab_size":10})", {"gemma3", "vision"});
    expect_error(R"({"model_type":"gemma2","vocab_size":10,"hidden_size":8,"intermediate_size":16,
      "num_hidden_layers":2,"num_attention_heads":2,"layer_types":["sliding_attention"]})",
                 {"layer_types", "2"});
    expect_error(R"({"model_type":"gemma2","vocab_size":10,"hidden_size":8,"intermediate_size":16,
      "num_hidden_layers":1,"num_attention_heads":2,"layer_types":["chunked_attention"]})",
                 {"layer_types", "chunked_attention"});
    expect_error(R"({"model_type":"gemma2","vocab_size":10,"hidden_size":8,"intermediate_size":16,
      "num_hidden_layers":1,"num_attention_heads":2,"hidden_activation":"relu"})",
                 {"hidden_activation", "relu"});
    expect_error(R"({"model_type":"gemma3_text","vocab_size":10,"hidden_size":8,"intermediate_size":16,
      "num_hidden_layers":1,"num_attention_heads":2,"rope_parameters":{"full_attention":{"rope_theta":1e6}}})",
                 {"rope_parameters.sliding_attention"});
  }

  void phi3() {
    // Phi-3-mini-128k's layout (4.x: original length at the top, "su" in its first configs): the short and
    // long factors, and the attention factor from the extension ratio, sqrt(1 + ln 32 / ln 4096).
    const std::string phi = R"({"model_type":"phi3","vocab_size":10,"hidden_size":8,"intermediate_size":16,
      "num_hidden_layers":1,"num_attention_heads":2,"max_position_embeddings":131072,
      "original_max_position_embeddings":4096,"rope_theta":10000.0,
      "rope_scaling":{"type":"su","short_factor":[1.0,1.5],"long_factor":[2.0,4.0]})";
    ModelConfig c = parse_model_config_text(phi + "}", "c.json");
    QCOMPARE(c.family, Family::Phi3);
    QVERIFY(c.fused_projections);
    QCOMPARE(c.rope.type, std::string("longrope"));
    QCOMPARE(c.rope.original_max_position_embeddings, int64_t(4096));
    QCOMPARE(c.rope.short_factor, (std::vector<double>{1.0, 1.5}));
    QCOMPARE(c.rope.long_factor, (std::vector<double>{2.0, 4.0}));
    QVERIFY(std::abs(c.rope.attention_factor - std::sqrt(1 + std::log(32.0) / std::log(4096.0))) < 1e-12);
    // Phi-3-mini-4k: no extension, factor 1; an explicit attention_factor wins.
    const std::string explicit_factor = R"({"model_type":"phi3","vocab_size":10,"hidden_size":8,
      "intermediate_size":16,"num_hidden_layers":1,"num_attention_heads":2,"max_position_embeddings":64,
      "rope_parameters":{"rope_type":"longrope","rope_theta":1e4,"original_max_position_embeddings":64,
      "short_factor":[1,1],"long_factor":[2,2],"attention_factor":1.25}})";
    QCOMPARE(parse_model_config_text(explicit_factor, "c.json").rope.attention_factor, 1.25);
    expect_error(R"({"model_type":"phi3","vocab_size":10,"hidden_size":8,"intermediate_size":16,
      "num_hidden_layers":1,"num_attention_heads":2,"original_max_position_embeddings":64,
      "rope_scaling":{"type":"longrope","short_factor":[1.0,1.5,2.0],"long_factor":[2.0,4.0,1.0]}})",
                 {"head_dim / 2 = 2", "found 3"});
    expect_error(R"({"model_type":"phi3","vocab_size":10,"hidden_size":8,"intermediate_size":16,
      "num_hidden_layers":1,"num_attention_heads":2,"original_max_position_embeddings":64,
      "rope_scaling":{"type":"longrope","short_factor":[1.0,1.5]}})",
                 {"long_factor"});
    expect_error(R"({"model_type":"phi3","vocab_size":10,"hidden_size":8,"intermediate_size":16,
      "num_hidden_layers":1,"num_attention_heads":2,"rope_scaling":{"type":"longrope","short_factor":[1.0,1.5],
      "long_factor":[1.0,1.5]}})",
                 {"original_max_position_embeddings"});
    expect_error(R"({"model_type":"phi3","vocab_size":10,"hidden_size":8,"intermediate_size":16,
      "num_hidden_layers":1,"num_attention_heads":2,"original_max_position_embeddings":64,
      "rope_scaling":{"type":"longrope","short_factor":[1.0,-1],"long_factor":[1.0,1.5]}})",
                 {"short_factor", "-1"});
    expect_error(R"({"model_type":"phi3","vocab_size":10,"hidden_size":8,"intermediate_size":16,
      "num_hidden_layers":1,"num_attention_heads":2,"partial_rotary_factor":0.75})",
                 {"partial_rotary_factor"});
  }

  void transformers4Layout() {
    ModelConfig c = parse_model_config_text(std::string(kLlama) + R"(,"rope_theta":5e5,
      "rope_scaling":{"type":"linear","factor":2.0}})",
                                            "c.json");
    QCOMPARE(c.rope.type, std::string("linear"));
    QCOMPARE(c.rope.theta, 500000.0);
    QCOMPARE(c.rope.factor, 2.0);
    QCOMPARE(c.head_dim, int64_t(4));
    QCOMPARE(c.num_kv_heads, int64_t(2));  // defaults to the head count
  }

  void mistakes() {
    expect_error(R"({"vocab_size":3})", {"model_type", "missing"});
    expect_error(R"({"model_type":"bert","vocab_size":3})", {"bert", "not supported"});
    expect_error(R"({"model_type":"llama","vocab_size":10,"hidden_size":8,"intermediate_size":16,
      "num_attention_heads":2})",
                 {"num_hidden_layers", "missing"});
    expect_error(std::string(kLlama).replace(std::string(kLlama).find("\"num_hidden_layers\":1"), 21,
                                             "\"num_hidden_layers\":\"two\"") +
                     "}",
                 {"num_hidden_layers", "must be an integer", "a string"});
    expect_error(std::string(kLlama) + R"(,"num_key_value_heads":3})", {"num_key_value_heads 3"});
    expect_error(std::string(kLlama) + R"(,"rope_scaling":{"rope_type":"yarn","factor":4}})", {"yarn"});
    expect_error(std::string(kLlama) + R"(,"hidden_act":"gelu"})", {"hidden_act"});
    expect_error("[1,2]", {"not a JSON object"});
    expect_error("{", {"not valid JSON"});
  }

  void outOfRangeValues() {
    const std::string l(kLlama);
    expect_error(l + R"(,"head_dim":-4})", {"head_dim", "positive"});
    expect_error(l + R"(,"head_dim":0})", {"head_dim", "positive"});
    expect_error(l + R"(,"rms_norm_eps":-1})", {"rms_norm_eps", "positive"});
    expect_error(l + R"(,"rms_norm_eps":0})", {"rms_norm_eps", "positive"});
    expect_error(l + R"(,"rope_theta":0})", {"rope_theta", "positive"});
    expect_error(l + R"(,"rope_theta":-10000})", {"rope_theta", "positive"});
    expect_error(l + R"(,"max_position_embeddings":0})", {"max_position_embeddings", "positive"});
    expect_error(l + R"(,"max_position_embeddings":-5})", {"max_position_embeddings", "positive"});
    expect_error(l + R"(,"num_key_value_heads":0})", {"num_key_value_heads", "positive"});
    expect_error(l + R"(,"num_key_value_heads":-2})", {"num_key_value_heads", "positive"});
    expect_error(std::string(kLlama).replace(l.find("\"vocab_size\":10"), 15, "\"vocab_size\":0") + "}",
                 {"vocab_size", "positive"});
    expect_error(std::string(kLlama).replace(l.find("\"hidden_size\":8"), 15, "\"hidden_size\":9") + "}",
                 {"not divisible", "head_dim"});
    expect_error(R"({"model_type":"gpt2","vocab_size":10,"n_embd":8,"n_layer":1,"n_head":2,"n_positions":8,
      "layer_norm_epsilon":0})",
                 {"layer_norm_epsilon", "positive"});
    expect_error(R"({"model_type":"gpt2","vocab_size":10,"n_embd":8,"n_layer":1,"n_head":2,"n_positions":8,
      "n_inner":-1})",
                 {"n_inner", "positive"});
  }

  void inspect() {
    ModelInfo i = inspect_model(kModels / "smollm");
    // smollm: embed 320×64 + 2 layers × (q 64×64 + k,v 16×64 + o 64×64 + 3 × 160×64 + 2 norms 64) + norm 64.
    QCOMPARE(i.parameters, int64_t(320 * 64 + 2 * (4096 + 2 * 1024 + 4096 + 3 * 10240 + 128) + 64));
    QVERIFY(i.tied_embeddings);
    QCOMPARE(i.checkpoint_dtype, std::string("F32"));
    QCOMPARE(i.bf16_weight_bytes, i.parameters * 2);
    // The RoPE line says what sets these families apart, and the LoRA targets are the family's own.
    QCOMPARE(inspect_model(kModels / "phi3").rope, std::string("longrope from 64 tokens, theta 10000"));
    QCOMPARE(inspect_model(kModels / "phi3").lora_targets,
             (std::vector<std::string>{"qkv_proj", "o_proj", "gate_up_proj", "down_proj"}));
    QCOMPARE(inspect_model(kModels / "gemma3").rope,
             std::string("linear ×8, theta 1e+06; local layers theta 10000"));
    try {
      inspect_model(kModels / "does-not-exist");
      QFAIL("expected an error");
    } catch (const Error& e) {
      QVERIFY(e.message().find("does-not-exist") != std::string::npos);
    }
  }
};

QTEST_GUILESS_MAIN(TestModelConfig)
#include "test_model_config.moc"
