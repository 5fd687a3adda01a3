// config.json parsing: the fixtures transformers 5.17 wrote, the 4.x layout, and mistakes named clearly.
#include <QtTest>

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
