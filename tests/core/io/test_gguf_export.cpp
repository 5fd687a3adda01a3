// `forja-cli export --format gguf` against llama.cpp. tests/fixtures/gguf/make_gguf_fixtures.sh had Forja
// write GGUF files of the fixture models (with the 320-token tokenizers beside it) and of the demo model, ran
// them in llama.cpp and recorded in expected.json what llama.cpp computed and the SHA-256 of each file. Here
// the same exports are made again and must be those files byte for byte, so that llama.cpp's results hold for
// them; then llama.cpp's greedy continuations are compared with transformers' (the fixtures' gen_output) and
// with Forja's own, and its token ids of texts with Forja's tokenizer. The file's own structure is checked
// with Forja's reader: the metadata llama.cpp reads, and the q/k rows reordered for its RoPE.
// Quantized files (--dtype q8_0 ... q4_k_m) against quant_expected.json (make_quant_fixtures.sh): every
// tensor's type and bytes are those llama.cpp's quantizer made from the fp32 file, and the file is the one
// llama.cpp ran.
#include <QCryptographicHash>
#include <QProcess>
#include <QtTest>

#include <ATen/ATen.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "forja/architecture.h"
#include "forja/gguf.h"
#include "forja/model_config.h"
#include "forja/safetensors.h"
#include "reference.h"

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

const fs::path kGgufFixtures = fs::path(FORJA_FIXTURES_DIR) / "gguf";
const fs::path kDemo = fs::path(FORJA_SOURCE_DIR) / "resources" / "demo" / "model";

json expected() {
  std::ifstream in(kGgufFixtures / "expected.json");
  return json::parse(in);
}

json quant_expected() {
  std::ifstream in(kGgufFixtures / "quant_expected.json");
  return json::parse(in);
}

// make_synthetic_model.py's model (the same hash of index and name, the same values): a Llama with rows of
// 256 and 512 values, so that the K types' super-blocks are used, with some zero, constant, non-negative,
// tiny and subnormal sub-blocks among them.
void write_synthetic_model(const fs::path& dir) {
  constexpr int64_t hidden = 256, mlp = 512, layers = 4, heads = 4, kv_heads = 2, vocab = 320;
  constexpr int64_t head_dim = hidden / heads;
  json config = json::parse(std::ifstream(forja_test::fixture_dir("llama") / "config.json"));
  config.update({{"hidden_size", hidden},
                 {"intermediate_size", mlp},
                 {"num_hidden_layers", layers},
                 {"num_attention_heads", heads},
                 {"num_key_value_heads", kv_heads},
                 {"head_dim", head_dim},
                 {"vocab_size", vocab},
                 {"tie_word_embeddings", false},
                 {"dtype", "float32"}});
  std::ofstream(dir / "config.json") << config.dump(2);
  std::vector<std::pair<std::string, std::vector<int64_t>>> specs = {
      {"model.embed_tokens.weight", {vocab, hidden}}};
  for (int64_t l = 0; l < layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    specs.push_back({p + "input_layernorm.weight", {hidden}});
    specs.push_back({p + "self_attn.q_proj.weight", {heads * head_dim, hidden}});
    specs.push_back({p + "self_attn.k_proj.weight", {kv_heads * head_dim, hidden}});
    specs.push_back({p + "self_attn.v_proj.weight", {kv_heads * head_dim, hidden}});
    specs.push_back({p + "self_attn.o_proj.weight", {hidden, heads * head_dim}});
    specs.push_back({p + "post_attention_layernorm.weight", {hidden}});
    specs.push_back({p + "mlp.gate_proj.weight", {mlp, hidden}});
    specs.push_back({p + "mlp.up_proj.weight", {mlp, hidden}});
    specs.push_back({p + "mlp.down_proj.weight", {hidden, mlp}});
  }
  specs.push_back({"model.norm.weight", {hidden}});
  specs.push_back({"lm_head.weight", {vocab, hidden}});
  std::vector<std::vector<float>> data;
  std::vector<forja::io::TensorToWrite> out;
  for (const auto& [name, shape] : specs) {
    uint32_t seed = 0x811C9DC5u;
    for (unsigned char ch : name) seed = (seed ^ ch) * 0x01000193u;
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    std::vector<float> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      uint32_t x = static_cast<uint32_t>(i) * 0x9E3779B1u + seed * 0x85EBCA77u;
      x ^= x >> 15;
      x *= 0x2C1B3C6Du;
      x ^= x >> 12;
      x *= 0x297A2D39u;
      x ^= x >> 15;
      const double u = static_cast<double>(x >> 8) * (1.0 / 16777216.0) - 0.5;
      const double value = shape.size() == 1     ? 1.0 + 0.125 * u
                           : (i / 256) % 97 == 5 ? 0.0
                           : (i / 32) % 53 == 7  ? 0.0
                           : (i / 32) % 59 == 11 ? -0.25
                           : (i / 32) % 67 == 13 ? 0.0625 * u + 0.03125
                           : (i / 32) % 71 == 17 ? 1e-20 * u
                           : (i / 32) % 73 == 19 ? 1e-38 * u
                           : i % 61 == 0         ? 0.375 * u
                                                 : 0.0625 * u;
      v[static_cast<size_t>(i)] = static_cast<float>(value);
    }
    data.push_back(std::move(v));
  }
  for (size_t i = 0; i < specs.size(); ++i)
    out.push_back({specs[i].first,
                   forja::io::DType::F32,
                   specs[i].second,
                   {reinterpret_cast<const uint8_t*>(data[i].data()), data[i].size() * 4}});
  forja::io::write_safetensors(dir / "model.safetensors", out);
}

// Runs forja-cli; returns its standard output, or fails the test with its error output.
QByteArray cli(const QStringList& args) {
  QProcess p;
  p.start(QStringLiteral(FORJA_CLI_PATH), args);
  if (!p.waitForFinished(300000) || p.exitCode() != 0) {
    qWarning("forja-cli %s: %s", qPrintable(args.join(' ')), p.readAllStandardError().constData());
    return {};
  }
  return p.readAllStandardOutput();
}

QString sha256(const fs::path& file) {
  QFile f(QString::fromStdString(file.string()));
  if (!f.open(QIODevice::ReadOnly)) return {};
  QCryptographicHash h(QCryptographicHash::Sha256);
  h.addData(&f);
  return QString::fromLatin1(h.result().toHex());
}

std::vector<int64_t> ids(const json& a) {
  return a.get<std::vector<int64_t>>();
}

std::vector<float> floats(const forja::io::SafetensorsFile& f, const std::string& name) {
  const auto bytes = f.bytes(f.at(name));
  std::vector<float> v(bytes.size() / 4);
  std::memcpy(v.data(), bytes.data(), bytes.size());
  return v;
}

// llama.cpp's logits against transformers', relative to the largest: its CPU GELU reads an fp16 table, so
// Gemma's logits differ by about 1e-3 of their scale, the others' by about 1e-4.
constexpr double kLlamaCppLogitTolerance = 2e-3;

std::vector<int64_t> int64s(const forja::io::SafetensorsFile& f, const std::string& name) {
  const auto bytes = f.bytes(f.at(name));
  std::vector<int64_t> v(bytes.size() / 8);
  std::memcpy(v.data(), bytes.data(), bytes.size());
  return v;
}

}  // namespace

class TestGgufExport : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void fixtureModelsRunInLlamaCppAsInTransformers_data() {
    QTest::addColumn<QString>("job");        // its name in expected.json
    QTest::addColumn<QString>("model");      // tests/fixtures/models/<model>
    QTest::addColumn<QString>("tokenizer");  // a file under tests/fixtures/gguf
    QTest::newRow("llama") << "llama"
                           << "llama"
                           << "llama3_bpe_320/tokenizer.json";
    QTest::newRow("llama3") << "llama3"
                            << "llama3"
                            << "llama3_bpe_320/tokenizer.json";
    QTest::newRow("mistral (sliding window 8)") << "mistral"
                                                << "mistral"
                                                << "llama3_bpe_320/tokenizer.json";
    QTest::newRow("qwen2") << "qwen2"
                           << "qwen2"
                           << "qwen2_bpe_320/tokenizer.json";
    QTest::newRow("qwen3 (q/k norms, tied)") << "qwen3"
                                             << "qwen3"
                                             << "qwen2_bpe_320/tokenizer.json";
    QTest::newRow("smollm (tied)") << "smollm"
                                   << "smollm"
                                   << "qwen2_bpe_320/tokenizer.json";
    QTest::newRow("gpt2") << "gpt2"
                          << "gpt2"
                          << "gpt2_bpe_320/tokenizer.json";
    QTest::newRow("llama, SentencePiece") << "llama_sentencepiece"
                                          << "llama"
                                          << "sp_bpe_320/tokenizer.model";
    QTest::newRow("gemma2 (soft-caps, q scale, local layers)") << "gemma2"
                                                               << "gemma2"
                                                               << "sp_bpe_320/tokenizer.model";
    QTest::newRow("gemma3 (q/k norms, local RoPE, linear global RoPE)") << "gemma3"
                                                                        << "gemma3"
                                                                        << "sp_bpe_320/tokenizer.model";
    QTest::newRow("phi3 (fused projections, longrope)") << "longrope"
                                                        << "phi3"
                                                        << "sp_bpe_320/tokenizer.model";
  }

  void fixtureModelsRunInLlamaCppAsInTransformers() {
    QFETCH(QString, job);
    QFETCH(QString, model);
    QFETCH(QString, tokenizer);
    const std::string name = model.toStdString();
    const fs::path tok_file = kGgufFixtures / tokenizer.toStdString();
    QTemporaryDir tmp;
    const fs::path dir = fs::path(tmp.path().toStdString()) / job.toStdString();
    fs::create_directories(dir);
    for (const auto& e : fs::directory_iterator(forja_test::fixture_dir(name)))
      if (e.path().filename() != "expected.safetensors") fs::copy_file(e.path(), dir / e.path().filename());
    fs::copy_file(tok_file, dir / tok_file.filename());
    const fs::path file = dir.string() + ".gguf";
    const QByteArray out =
        cli({QStringLiteral("export"), QString::fromStdString(dir.string()), QStringLiteral("--format"),
             QStringLiteral("gguf"), QStringLiteral("--dtype"), QStringLiteral("fp32"),
             QStringLiteral("--out"), QString::fromStdString(file.string())});
    QVERIFY(out.contains("GGUF"));

    // The very file llama.cpp ran.
    const json rec = expected()["models"][job.toStdString()];
    QCOMPARE(sha256(file), QString::fromStdString(rec["sha256"].get<std::string>()));

    // What llama.cpp reads from it.
    const forja::io::GgufFile g = forja::io::read_gguf(file);
    const forja::ModelConfig c = forja::parse_model_config(dir / "config.json");
    const forja::Architecture& spec = forja::architecture(c.family);
    const std::string arch(spec.gguf_arch);
    const bool gemma = name == "gemma2" || name == "gemma3";
    QCOMPARE(arch, std::string(name == "llama" || name == "llama3" || name == "mistral" || name == "smollm"
                                   ? "llama"
                                   : name));
    QCOMPARE(std::get<std::string>(g.metadata.at("general.architecture")), arch);
    QCOMPARE(std::get<uint32_t>(g.metadata.at(arch + ".block_count")), static_cast<uint32_t>(c.num_layers));
    QCOMPARE(std::get<uint32_t>(g.metadata.at(arch + ".attention.head_count")),
             static_cast<uint32_t>(c.num_heads));
    if (arch != "gpt2")
      QCOMPARE(std::get<uint32_t>(g.metadata.at(arch + ".attention.head_count_kv")),
               static_cast<uint32_t>(c.num_kv_heads));
    // A sliding window is the context where llama.cpp has none (its "llama" and "phi3"); Gemma's is kept,
    // with the period of its local and global layers.
    QCOMPARE(
        std::get<uint32_t>(g.metadata.at(arch + ".context_length")),
        static_cast<uint32_t>(c.sliding_window && !gemma ? *c.sliding_window : c.max_position_embeddings));
    if (gemma) {
      QCOMPARE(std::get<uint32_t>(g.metadata.at(arch + ".attention.sliding_window")),
               static_cast<uint32_t>(*c.sliding_window));
      QCOMPARE(std::get<uint32_t>(g.metadata.at(arch + ".attention.sliding_window_pattern")), 2u);
    }
    QCOMPARE(std::get<std::vector<std::string>>(g.metadata.at("tokenizer.ggml.tokens")).size(),
             static_cast<size_t>(c.vocab_size));
    if (tok_file.extension() == ".model") {
      // SentencePiece: llama.cpp's "llama" tokenizer, with the pieces' scores, BOS added, and its token ids
      // of texts those of Forja's tokenizer (llama.cpp's tokenize() leaves the BOS to the context).
      QCOMPARE(std::get<std::string>(g.metadata.at("tokenizer.ggml.model")), std::string("llama"));
      QCOMPARE(std::get<std::vector<float>>(g.metadata.at("tokenizer.ggml.scores")).size(),
               static_cast<size_t>(c.vocab_size));
      QCOMPARE(std::get<bool>(g.metadata.at("tokenizer.ggml.add_bos_token")), true);
      QCOMPARE(rec["tokenized"].size(), size_t{2});
      for (const auto& [text, want] : rec["tokenized"].items()) {
        const json ours = json::parse(
            cli({QStringLiteral("tokenize"), QString::fromStdString(dir.string()),
                 QString::fromStdString(text), QStringLiteral("--no-special"), QStringLiteral("--json")})
                .toStdString());
        QCOMPARE(ids(ours["ids"]), ids(want));
      }
    } else {
      const char* pre = tokenizer.startsWith("llama3")  ? "llama-bpe"
                        : tokenizer.startsWith("qwen2") ? "qwen2"
                                                        : "gpt-2";
      QCOMPARE(std::get<std::string>(g.metadata.at("tokenizer.ggml.model")), std::string("gpt2"));
      QCOMPARE(std::get<std::string>(g.metadata.at("tokenizer.ggml.pre")), std::string(pre));
    }
    // Llama family: embedding, final norm, 9 per layer; the LM head unless tied; q/k/v biases; Qwen3's q/k
    // norms; llama3's RoPE factors. GPT-2: token and position embeddings, 12 per layer (6 weights, 6 biases),
    // the final norm's two, and the LM head (the token embedding again).
    // Gemma: 11 per layer (its norms after attention and around the MLP), the head always the embedding;
    // Phi-3: 6 per layer (fused projections) and the two RoPE factor sets.
    if (arch == "gpt2")
      QCOMPARE(g.tensors.size(), size_t(2 + 12 * c.num_layers + 3));
    else if (gemma)
      QCOMPARE(g.tensors.size(), size_t(2 + (c.qk_norm ? 13 : 11) * c.num_layers));
    else if (arch == "phi3")
      QCOMPARE(g.tensors.size(), size_t(4 + 6 * c.num_layers + (c.tie_word_embeddings ? 0 : 1)));
    else
      QCOMPARE(g.tensors.size(),
               size_t(2 + 9 * c.num_layers + (c.tie_word_embeddings ? 0 : 1) +
                      (c.qkv_bias ? 3 * c.num_layers : 0) + (c.qk_norm ? 2 * c.num_layers : 0) +
                      (c.rope.type == "llama3" ? 1 : 0)));

    // q rows: llama.cpp's "llama" RoPE rotates adjacent pairs, so head h's rows [first half; second half]
    // are interleaved (row 2j + t of the head is the HF row t·d/2 + j); Qwen's RoPE is HF's own.
    const auto st = forja::io::SafetensorsFile::open(fs::exists(dir / "model.safetensors")
                                                         ? dir / "model.safetensors"
                                                         : dir / "model-00001-of-00003.safetensors");
    // (Gemma 2's q carries the attention scale; Phi-3's is part of a fused projection.)
    if (const auto* info = st.find("model.layers.0.self_attn.q_proj.weight"); info != nullptr && !gemma) {
      // The checkpoint's values (fp32, fp16 or bf16: exact in the fp32 file).
      const at::ScalarType dt = info->dtype == forja::io::DType::F16    ? at::kHalf
                                : info->dtype == forja::io::DType::BF16 ? at::kBFloat16
                                                                        : at::kFloat;
      const auto raw = st.bytes(*info);
      const at::Tensor hf_t =
          at::from_blob(const_cast<uint8_t*>(raw.data()), info->shape, at::TensorOptions().dtype(dt))
              .to(at::kFloat)
              .contiguous();
      const float* hf_f = hf_t.data_ptr<float>();
      const auto q = std::find_if(g.tensors.begin(), g.tensors.end(),
                                  [](const auto& t) { return t.name == "blk.0.attn_q.weight"; });
      QVERIFY(q != g.tensors.end());
      QCOMPARE(q->shape, info->shape);
      std::ifstream in(file, std::ios::binary);
      std::vector<float> gf(static_cast<size_t>(hf_t.numel()));
      in.seekg(static_cast<std::streamoff>(q->offset));
      in.read(reinterpret_cast<char*>(gf.data()), static_cast<std::streamsize>(gf.size() * 4));
      const int64_t d = c.head_dim, cols = c.hidden_size;
      int64_t mismatched = 0;
      for (int64_t h = 0; h < c.num_heads; ++h)
        for (int64_t j = 0; j < d / 2; ++j)
          for (int64_t t = 0; t < 2; ++t) {
            const int64_t g_row = h * d + (spec.gguf_interleaved_rope ? 2 * j + t : t * d / 2 + j);
            const int64_t hf_row = h * d + t * d / 2 + j;
            mismatched += std::memcmp(&gf[g_row * cols], &hf_f[hf_row * cols], cols * 4) != 0;
          }
      QCOMPARE(mismatched, int64_t{0});
    }

    const auto exp = forja::io::SafetensorsFile::open(forja_test::fixture_dir(name) / "expected.safetensors");
    // llama.cpp's logits, where recorded, against transformers' for the same input.
    if (rec.contains("logits")) {
      const bool long_input = arch == "phi3";
      const std::vector<int64_t> input = int64s(exp, long_input ? "long_input_ids" : "input_ids");
      const std::vector<float> hf_logits = floats(exp, long_input ? "long_logits" : "logits");
      const size_t vocab = static_cast<size_t>(c.vocab_size), from = rec["logits_from"].get<size_t>();
      double worst = 0, scale = 0;
      for (size_t p = 0; p < rec["logits"].size(); ++p) {
        const std::vector<float> row = rec["logits"][p].get<std::vector<float>>();
        QCOMPARE(row.size(), vocab);
        for (size_t t = 0; t < vocab; ++t) {
          const double want = hf_logits[(from + p) * vocab + t];
          worst = std::max(worst, std::abs(row[t] - want));
          scale = std::max(scale, std::abs(want));
        }
      }
      QVERIFY(rec["logits"].size() >= 16 && from + rec["logits"].size() <= input.size());
      QVERIFY2(worst <= kLlamaCppLogitTolerance * scale,
               qPrintable(QStringLiteral("max abs error %1 against logits up to %2").arg(worst).arg(scale)));
    }
    if (arch == "phi3") {
      // The 80-token input, past the original length: llama.cpp's first token is transformers' choice, and
      // its continuation is Forja's.
      const std::vector<int64_t> input = int64s(exp, "long_input_ids");
      QCOMPARE(ids(rec["prompt"]), input);
      const std::vector<float> long_logits = floats(exp, "long_logits");
      const std::vector<float> last(long_logits.end() - c.vocab_size, long_logits.end());
      QCOMPARE(rec["greedy"][0].get<int64_t>(),
               static_cast<int64_t>(std::max_element(last.begin(), last.end()) - last.begin()));
      QStringList prompt;
      for (int64_t id : input) prompt << QString::number(id);
      const json ours =
          json::parse(cli({QStringLiteral("generate"), QString::fromStdString(dir.string()),
                           QStringLiteral("--prompt-ids"), prompt.join(','), QStringLiteral("--max-new"),
                           QString::number(rec["greedy"].size()), QStringLiteral("--min-new"),
                           QString::number(rec["greedy"].size()), QStringLiteral("--dtype"),
                           QStringLiteral("fp32"), QStringLiteral("--json")})
                          .toStdString());
      QCOMPARE(ids(ours["result"]["tokens"]), ids(rec["greedy"]));
      return;
    }
    // llama.cpp's greedy continuation = transformers' (within a sliding window where llama.cpp attends to
    // all).
    const std::vector<int64_t> prompt = int64s(exp, "gen_prompt"), hf = int64s(exp, "gen_output");
    QCOMPARE(ids(rec["prompt"]), prompt);
    const std::vector<int64_t> llama_cpp = ids(rec["greedy"]);
    size_t same = llama_cpp.size();
    if (c.sliding_window && !gemma) same = static_cast<size_t>(*c.sliding_window) - prompt.size();
    QVERIFY(same >= 1 && same <= hf.size() - prompt.size());
    QCOMPARE(std::vector<int64_t>(llama_cpp.begin(), llama_cpp.begin() + static_cast<std::ptrdiff_t>(same)),
             std::vector<int64_t>(hf.begin() + static_cast<std::ptrdiff_t>(prompt.size()),
                                  hf.begin() + static_cast<std::ptrdiff_t>(prompt.size() + same)));
  }

  void quantizedFilesAreLlamaQuantizes_data() {
    QTest::addColumn<QString>("model");  // tests/fixtures/models/<model>, or the synthetic one
    QTest::addColumn<QString>("type");   // --dtype
    for (const char* model : {"llama", "qwen2", "smollm", "gpt2", "synthetic"})
      for (const char* type : {"q8_0", "q4_0", "q6_k", "q5_k_m", "q4_k_m"})
        QTest::newRow((std::string(model) + " " + type).c_str()) << model << type;
  }

  void quantizedFilesAreLlamaQuantizes() {
    QFETCH(QString, model);
    QFETCH(QString, type);
    const json rec = quant_expected()["models"][model.toStdString()];
    QVERIFY(!rec.is_null());
    QTemporaryDir tmp;
    const fs::path dir = fs::path(tmp.path().toStdString()) / model.toStdString();
    fs::create_directories(dir);
    const bool synthetic = model == "synthetic";
    if (synthetic) {
      write_synthetic_model(dir);
    } else {
      for (const auto& e : fs::directory_iterator(forja_test::fixture_dir(model.toStdString())))
        if (e.path().filename() != "expected.safetensors") fs::copy_file(e.path(), dir / e.path().filename());
    }
    const fs::path tok = kGgufFixtures /
                         (model == "qwen2" || model == "smollm" ? "qwen2_bpe_320"
                          : model == "gpt2"                     ? "gpt2_bpe_320"
                                                                : "llama3_bpe_320") /
                         "tokenizer.json";
    fs::copy_file(tok, dir / "tokenizer.json");
    const fs::path file = dir.string() + ".gguf";
    // The type's name in any case (Q4_K_M as llama.cpp writes it).
    const QString dtype = model == "llama" ? type.toUpper() : type;
    QVERIFY(!cli({QStringLiteral("export"), QString::fromStdString(dir.string()), QStringLiteral("--format"),
                  QStringLiteral("gguf"), QStringLiteral("--dtype"), dtype, QStringLiteral("--out"),
                  QString::fromStdString(file.string())})
                 .isEmpty());

    // Each tensor: llama-quantize's type, and its bytes.
    const json ref = rec["llama_quantize"][type.toStdString()];
    const forja::io::GgufFile g = forja::io::read_gguf(file);
    QCOMPARE(std::get<uint32_t>(g.metadata.at("general.file_type")), ref["file_type"].get<uint32_t>());
    QCOMPARE(std::get<uint32_t>(g.metadata.at("general.quantization_version")), 2u);
    QCOMPARE(g.tensors.size(), ref["tensors"].size());
    std::ifstream in(file, std::ios::binary);
    QStringList wrong;
    std::set<uint32_t> types;
    for (const auto& t : g.tensors) {
      const json& want = ref["tensors"][t.name];
      if (want.is_null()) {
        wrong << QString::fromStdString(t.name + " (not in llama-quantize's file)");
        continue;
      }
      types.insert(t.type);
      std::string bytes(t.nbytes, '\0');
      in.seekg(static_cast<std::streamoff>(t.offset));
      in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
      const QString sha = QString::fromLatin1(
          QCryptographicHash::hash(QByteArray::fromStdString(bytes), QCryptographicHash::Sha256).toHex());
      if (t.type != want[0].get<uint32_t>())
        wrong << QString::fromStdString(t.name + ": type " + std::to_string(t.type) + ", llama-quantize's " +
                                        std::to_string(want[0].get<uint32_t>()));
      else if (sha.toStdString() != want[1].get<std::string>())
        wrong << QString::fromStdString(t.name + ": other bytes than llama-quantize's");
    }
    QVERIFY2(wrong.isEmpty(), qPrintable(wrong.join("; ")));
    // The synthetic model's rows fit the 256-value blocks: the K types themselves are in its files.
    if (synthetic && type.startsWith('q') && type.contains('k')) {
      using T = forja::io::GgufType;
      QVERIFY(types.count(static_cast<uint32_t>(T::Q6_K)));
      if (type == "q4_k_m") QVERIFY(types.count(static_cast<uint32_t>(T::Q4_K)));
      if (type == "q5_k_m") QVERIFY(types.count(static_cast<uint32_t>(T::Q5_K)));
    }

    // The very file llama.cpp loaded and ran; from Q8_0 it continues the prompt as from the fp16 file.
    const json ran = rec["forja"][type.toStdString()];
    QCOMPARE(sha256(file), QString::fromStdString(ran["sha256"].get<std::string>()));
    QCOMPARE(ran["greedy"].size(), size_t{12});
    if (type == "q8_0") {
      // The fixture llama is tiny and random: at its third step two logits are closer than Q8_0's error (Q6_K
      // picks the same token as Q8_0 there), so llama.cpp continues differently from the fp16 file.
      if (model == "llama") QEXPECT_FAIL("", "near-tied logits in the tiny random fixture llama", Continue);
      QCOMPARE(ids(ran["greedy"]), ids(rec["forja"]["fp16"]["greedy"]));
    }
  }

  void loraAdapterRunsInLlamaCppAsTheMergedFile() {
    // The fixture llama with its trained adapter: the adapter as a GGUF LoRA file is the one llama.cpp ran on
    // the fp32 base file, where it continued the prompt as the merged fp32 file did.
    QTemporaryDir tmp;
    const fs::path dir = fs::path(tmp.path().toStdString()) / "llama";
    fs::create_directories(dir);
    for (const auto& e : fs::directory_iterator(forja_test::fixture_dir("llama")))
      if (e.path().filename() != "expected.safetensors") fs::copy_file(e.path(), dir / e.path().filename());
    fs::copy_file(kGgufFixtures / "llama3_bpe_320" / "tokenizer.json", dir / "tokenizer.json");
    const fs::path adapter = fs::path(FORJA_FIXTURES_DIR) / "train" / "llama" / "final";
    const fs::path file = fs::path(tmp.path().toStdString()) / "adapter.gguf";
    const QByteArray out =
        cli({QStringLiteral("export"), QString::fromStdString(dir.string()), QStringLiteral("--adapter"),
             QString::fromStdString(adapter.string()), QStringLiteral("--format"),
             QStringLiteral("gguf-lora"), QStringLiteral("--out"), QString::fromStdString(file.string())});
    QVERIFY(out.contains("GGUF LoRA"));
    const json rec = quant_expected()["lora"];
    QCOMPARE(sha256(file), QString::fromStdString(rec["adapter"]["lora_sha256"].get<std::string>()));
    QCOMPARE(ids(rec["adapter"]["greedy"]), ids(rec["merged"]["greedy"]));
    QCOMPARE(rec["adapter"]["greedy"].size(), size_t{12});

    // What llama.cpp's loader checks: the adapter keys, A as {in, r} and B as {r, out} (PyTorch order [r, in]
    // and [out, r]), and the q rows of B in the base file's RoPE order.
    const forja::io::GgufFile g = forja::io::read_gguf(file);
    QCOMPARE(std::get<std::string>(g.metadata.at("general.type")), std::string("adapter"));
    QCOMPARE(std::get<std::string>(g.metadata.at("general.architecture")), std::string("llama"));
    QCOMPARE(std::get<std::string>(g.metadata.at("adapter.type")), std::string("lora"));
    QCOMPARE(std::get<float>(g.metadata.at("adapter.lora.alpha")), 8.0f);
    QCOMPARE(g.tensors.size(), size_t{2 * 2 * 7});  // 2 layers, 7 projections, A and B
    const auto st = forja::io::SafetensorsFile::open(adapter / "adapter_model.safetensors");
    const auto& hf_b = st.at("base_model.model.model.layers.1.self_attn.q_proj.lora_B.weight");
    const auto q = std::find_if(g.tensors.begin(), g.tensors.end(),
                                [](const auto& t) { return t.name == "blk.1.attn_q.weight.lora_b"; });
    QVERIFY(q != g.tensors.end());
    QCOMPARE(q->shape, hf_b.shape);
    const int64_t heads = 4, d = hf_b.shape[0] / heads, r = hf_b.shape[1];
    std::vector<float> gb(static_cast<size_t>(hf_b.shape[0] * r));
    std::ifstream in(file, std::ios::binary);
    in.seekg(static_cast<std::streamoff>(q->offset));
    in.read(reinterpret_cast<char*>(gb.data()), static_cast<std::streamsize>(gb.size() * 4));
    const auto raw = st.bytes(hf_b);
    int64_t mismatched = 0;
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t j = 0; j < d / 2; ++j)
        for (int64_t t = 0; t < 2; ++t)
          mismatched +=
              std::memcmp(&gb[static_cast<size_t>((h * d + 2 * j + t) * r)],
                          raw.data() + (h * d + t * d / 2 + j) * r * 4, static_cast<size_t>(r) * 4) != 0;
    QCOMPARE(mismatched, int64_t{0});
    const auto a_t = std::find_if(g.tensors.begin(), g.tensors.end(),
                                  [](const auto& t) { return t.name == "blk.0.ffn_down.weight.lora_a"; });
    QVERIFY(a_t != g.tensors.end());
    QCOMPARE(a_t->shape, (std::vector<int64_t>{4, 160}));
  }

  void ollamaFolder() {
    // The demo model (a ChatML template) quantized, with a system prompt: model.gguf and its Modelfile.
    QTemporaryDir tmp;
    const fs::path out = fs::path(tmp.path().toStdString()) / "ollama";
    QVERIFY(!cli({QStringLiteral("export"), QString::fromStdString(kDemo.string()),
                  QStringLiteral("--format"), QStringLiteral("ollama"), QStringLiteral("--dtype"),
                  QStringLiteral("q4_k_m"), QStringLiteral("--system"), QStringLiteral("You are the demo."),
                  QStringLiteral("--out"), QString::fromStdString(out.string())})
                 .isEmpty());
    const forja::io::GgufFile g = forja::io::read_gguf(out / "model.gguf");
    QCOMPARE(std::get<uint32_t>(g.metadata.at("general.file_type")), 15u);
    std::ifstream in(out / "Modelfile");
    const std::string m((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    QVERIFY2(m.rfind("FROM ./model.gguf\n", 0) == 0, m.c_str());
    QVERIFY2(m.find("TEMPLATE \"\"\"{{- range .Messages }}<|im_start|>{{ .Role }}") != std::string::npos,
             m.c_str());
    QVERIFY2(m.find("PARAMETER stop \"<|im_end|>\"") != std::string::npos, m.c_str());
    QVERIFY2(m.find("SYSTEM \"\"\"You are the demo.\"\"\"") != std::string::npos, m.c_str());
    QCOMPARE(std::distance(fs::directory_iterator(out), fs::directory_iterator()), std::ptrdiff_t{2});

    // GPT-2's template is none Forja translates: refused before anything is written.
    const fs::path dir = fs::path(tmp.path().toStdString()) / "gpt2";
    fs::create_directories(dir);
    for (const auto& e : fs::directory_iterator(forja_test::fixture_dir("gpt2")))
      if (e.path().filename() != "expected.safetensors") fs::copy_file(e.path(), dir / e.path().filename());
    fs::copy_file(kGgufFixtures / "gpt2_bpe_320" / "tokenizer.json", dir / "tokenizer.json");
    QProcess p;
    const fs::path out2 = fs::path(tmp.path().toStdString()) / "ollama2";
    p.start(QStringLiteral(FORJA_CLI_PATH),
            {QStringLiteral("export"), QString::fromStdString(dir.string()), QStringLiteral("--format"),
             QStringLiteral("ollama"), QStringLiteral("--out"), QString::fromStdString(out2.string())});
    QVERIFY(p.waitForFinished(120000));
    QCOMPARE(p.exitCode(), 1);
    const QByteArray err = p.readAllStandardError();
    QVERIFY2(err.contains("Ollama"), err.constData());
    QVERIFY(!fs::exists(out2));
  }

  void demoModelTokenizesAndAnswersInLlamaCppAsInForja_data() {
    QTest::addColumn<QString>("dtype");
    QTest::newRow("fp32") << "fp32";
    QTest::newRow("fp16") << "fp16";
  }

  void demoModelTokenizesAndAnswersInLlamaCppAsInForja() {
    QFETCH(QString, dtype);
    QTemporaryDir tmp;
    const fs::path file = fs::path(tmp.path().toStdString()) / "sub" / "demo.gguf";
    QVERIFY(!cli({QStringLiteral("export"), QString::fromStdString(kDemo.string()),
                  QStringLiteral("--format"), QStringLiteral("gguf"), QStringLiteral("--dtype"), dtype,
                  QStringLiteral("--out"), QString::fromStdString(file.string())})
                 .isEmpty());
    const json rec = expected()["models"]["demo_" + dtype.toStdString()];
    QCOMPARE(sha256(file), QString::fromStdString(rec["sha256"].get<std::string>()));
    const forja::io::GgufFile g = forja::io::read_gguf(file);
    QCOMPARE(std::get<uint32_t>(g.metadata.at("general.file_type")), dtype == "fp32" ? 0u : 1u);
    QVERIFY(std::get<std::string>(g.metadata.at("tokenizer.chat_template")).find("assistant") !=
            std::string::npos);

    // The texts: llama.cpp's token ids are Forja's tokenizer's.
    for (const auto& [text, want] : rec["tokenized"].items()) {
      const json ours = json::parse(cli({QStringLiteral("tokenize"), QString::fromStdString(kDemo.string()),
                                         QString::fromStdString(text), QStringLiteral("--json")})
                                        .toStdString());
      QCOMPARE(ids(ours["ids"]), ids(want));
    }
    // The greedy answer: llama.cpp's (on the fp32 and on the fp16 file) is Forja's.
    QStringList prompt;
    for (int64_t id : ids(rec["prompt"])) prompt << QString::number(id);
    const json ours = json::parse(
        cli({QStringLiteral("generate"), QString::fromStdString(kDemo.string()),
             QStringLiteral("--prompt-ids"), prompt.join(','), QStringLiteral("--max-new"),
             QString::number(rec["greedy"].size()), QStringLiteral("--temperature"), QStringLiteral("0"),
             QStringLiteral("--dtype"), QStringLiteral("fp32"), QStringLiteral("--json")})
            .toStdString());
    QCOMPARE(ids(ours["result"]["tokens"]), ids(rec["greedy"]));
  }

  void refusesWhatItCannotWrite() {
    QTemporaryDir tmp;
    // A SentencePiece-style tokenizer (BPE with byte fallback) is not written yet, and says so; nothing is
    // left behind.
    const fs::path dir = fs::path(tmp.path().toStdString()) / "sp";
    fs::create_directories(dir);
    for (const char* f : {"config.json", "model.safetensors"})
      fs::copy_file(forja_test::fixture_dir("qwen2") / f, dir / f);
    fs::copy_file(fs::path(FORJA_FIXTURES_DIR) / "tokenizers" / "sp_bpe_hf" / "tokenizer.json",
                  dir / "tokenizer.json");
    QProcess p;
    const QString out = tmp.filePath(QStringLiteral("g.gguf"));
    p.start(QStringLiteral(FORJA_CLI_PATH),
            {QStringLiteral("export"), QString::fromStdString(dir.string()), QStringLiteral("--format"),
             QStringLiteral("gguf"), QStringLiteral("--out"), out});
    QVERIFY(p.waitForFinished(120000));
    QCOMPARE(p.exitCode(), 1);
    const QByteArray err = p.readAllStandardError();
    QVERIFY2(err.contains("tokenizer.json") && err.contains("byte fallback"), err.constData());
    QVERIFY(!QFile::exists(out));
    // A model folder without tokenizer.json: the error names the folder.
    p.start(QStringLiteral(FORJA_CLI_PATH),
            {QStringLiteral("export"), QString::fromStdString(forja_test::fixture_dir("llama").string()),
             QStringLiteral("--format"), QStringLiteral("gguf"), QStringLiteral("--out"), out});
    QVERIFY(p.waitForFinished(120000));
    QCOMPARE(p.exitCode(), 1);
    QVERIFY(p.readAllStandardError().contains("no tokenizer.json"));
    QVERIFY(!QFile::exists(out));
    // What llama.cpp's Gemma fixes and the config says otherwise (an attention soft-cap on Gemma 3, local
    // layers in no repeating pattern): said before anything is loaded, naming config.json and the way out.
    const std::pair<json, const char*> unlike_llama_cpp[] = {
        {{{"attn_logit_softcapping", 30.0}}, "soft-cap"},
        {{{"num_hidden_layers", 3},
          {"layer_types", {"full_attention", "sliding_attention", "sliding_attention"}}},
         "pattern"}};
    for (const auto& [change, says] : unlike_llama_cpp) {
      const fs::path g3 = fs::path(tmp.path().toStdString()) / "gemma3";
      fs::remove_all(g3);
      fs::create_directories(g3);
      json config = json::parse(std::ifstream(forja_test::fixture_dir("gemma3") / "config.json"));
      config.update(change);
      std::ofstream(g3 / "config.json") << config.dump();
      p.start(QStringLiteral(FORJA_CLI_PATH),
              {QStringLiteral("export"), QString::fromStdString(g3.string()), QStringLiteral("--format"),
               QStringLiteral("gguf"), QStringLiteral("--out"), out});
      QVERIFY(p.waitForFinished(120000));
      QCOMPARE(p.exitCode(), 1);
      const QByteArray gemma_err = p.readAllStandardError();
      QVERIFY2(
          gemma_err.contains("config.json") && gemma_err.contains(says) && gemma_err.contains("--format hf"),
          gemma_err.constData());
      QVERIFY(!QFile::exists(out));
    }
    // --out must be a new .gguf file.
    p.start(QStringLiteral(FORJA_CLI_PATH),
            {QStringLiteral("export"), QString::fromStdString(kDemo.string()), QStringLiteral("--format"),
             QStringLiteral("gguf"), QStringLiteral("--out"), tmp.path()});
    QVERIFY(p.waitForFinished(120000));
    QCOMPARE(p.exitCode(), 1);
    QVERIFY(p.readAllStandardError().contains("*.gguf"));
    // A type llama.cpp has but Forja does not write: the error lists those it does.
    p.start(QStringLiteral(FORJA_CLI_PATH),
            {QStringLiteral("export"), QString::fromStdString(kDemo.string()), QStringLiteral("--format"),
             QStringLiteral("gguf"), QStringLiteral("--dtype"), QStringLiteral("q3_k_m"),
             QStringLiteral("--out"), out});
    QVERIFY(p.waitForFinished(120000));
    QCOMPARE(p.exitCode(), 1);
    const QByteArray dtype_err = p.readAllStandardError();
    QVERIFY2(dtype_err.contains("q3_k_m") && dtype_err.contains("q4_k_m"), dtype_err.constData());
    QVERIFY(!QFile::exists(out));
  }
};

QTEST_GUILESS_MAIN(TestGgufExport)
#include "test_gguf_export.moc"
