// forja::Server over real HTTP (httplib::Client) on the demo model: every answer is compared with what the
// engine itself gives for the same conversation (ChatSession::send, Generator::generate, greedy), streamed
// and not; usage counts, stop strings, max_tokens, the errors in OpenAI's shape, 20 concurrent requests, and
// a client that goes away mid-stream. Two fixture models (other families, tokenizers and chat templates,
// random weights) check the same equality.
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <QtTest>

#include <csignal>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include <ATen/core/grad_mode.h>

#include <QTemporaryDir>

#include "causal_lm.h"
#include "forja/error.h"
#include "forja/file_util.h"
#include "forja/generate.h"
#include "forja/model_config.h"
#include "forja/safetensors.h"
#include "forja/serve.h"
#include "forja/tokenizer.h"
#include "listen_backlog.h"
#include "reference.h"
#include "weights.h"

using namespace forja;
using nlohmann::json;

namespace {

struct Reply {
  int status = 0;
  json body;
};

struct Streamed {
  int status = 0;
  std::vector<json> chunks;  // every data: event but the last
  bool done = false;         // the stream ended with data: [DONE]
};

std::vector<ChatTurn> user(const std::string& text) {
  return {{"user", text}};
}

json messages_json(const std::vector<ChatTurn>& turns) {
  json m = json::array();
  for (const auto& t : turns) m.push_back({{"role", t.role}, {"content", t.content}});
  return m;
}

// The SSE body's events, as OpenAI's clients split them.
Streamed parse_sse(int status, const std::string& body) {
  Streamed s;
  s.status = status;
  size_t at = 0;
  while (at < body.size()) {
    size_t end = body.find("\n\n", at);
    if (end == std::string::npos) end = body.size();
    const std::string event = body.substr(at, end - at);
    at = end + 2;
    if (event.rfind("data: ", 0) != 0) continue;
    const std::string data = event.substr(6);
    if (data == "[DONE]")
      s.done = true;
    else
      s.chunks.push_back(json::parse(data));
  }
  return s;
}

// A model folder from a fixture model's config.json (its vocabulary sized to the tokenizer's) with random
// weights, and a fixture tokenizer with its chat template.
void make_model_folder(const std::filesystem::path& d, const std::string& model,
                       const std::string& tokenizer) {
  const auto tok_dir = std::filesystem::path(FORJA_FIXTURES_DIR) / "tokenizers" / tokenizer;
  for (const auto& e : std::filesystem::directory_iterator(tok_dir))
    std::filesystem::copy(e.path(), d / e.path().filename());
  const int64_t vocab = static_cast<int64_t>(Tokenizer::load(d.string()).vocab_size());
  std::string cfg = read_text_file(forja_test::fixture_dir(model) / "config.json");
  const std::string key = "\"vocab_size\": 320";  // the fixture models' config.json
  if (cfg.find(key) == std::string::npos) throw Error(model + "'s config.json has no " + key);
  cfg.replace(cfg.find(key), key.size(), "\"vocab_size\": " + std::to_string(vocab));
  write_file_atomic(d / "config.json", cfg);
  ModelConfig config = parse_model_config(d / "config.json");
  RandomWeights w(11, at::kFloat, at::kCPU);
  at::NoGradGuard no_grad;
  auto lm = make_causal_lm(config, w);
  std::vector<at::Tensor> keep;
  std::vector<io::TensorToWrite> tensors;
  for (const auto& p : lm->named_parameters(true)) {
    keep.push_back(p.value().contiguous());
    const at::Tensor& t = keep.back();
    tensors.push_back({p.key(), io::DType::F32, t.sizes().vec(),
                       std::span<const uint8_t>(static_cast<const uint8_t*>(t.data_ptr()), t.nbytes())});
  }
  io::write_safetensors(d / "model.safetensors", tensors);
}

}  // namespace

class TestServe : public QObject {
  Q_OBJECT

  std::unique_ptr<Server> server_;
  std::unique_ptr<ChatSession> engine_;  // the reference: the same model, used directly
  std::unique_ptr<Tokenizer> tokenizer_;
  // The disconnect test holds the server's stream at its first write until the client has gone.
  std::atomic<bool> hold_first_write_{false};
  std::promise<void> client_gone_;

  static EngineOptions cpu() {
    EngineOptions e;
    e.device = "cpu";
    return e;
  }

  std::unique_ptr<httplib::Client> client() const {
    auto c = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
    // Generous: 20 requests queue behind one another on a busy 2-core machine.
    c->set_read_timeout(std::chrono::seconds(240));
    return c;
  }

  Reply post(const std::string& path, const std::string& body, const httplib::Headers& headers = {}) const {
    auto res = client()->Post(path.c_str(), headers, body, "application/json");
    if (!res) return {-1, {}};
    return {res->status, json::parse(res->body)};
  }
  Reply post(const std::string& path, const json& body) const { return post(path, body.dump()); }

  Streamed post_stream(const std::string& path, const json& body) const {
    auto res = client()->Post(path.c_str(), body.dump(), "application/json");
    if (!res) return {};
    [&] { QCOMPARE(res->get_header_value("Content-Type"), std::string("text/event-stream")); }();
    return parse_sse(res->status, res->body);
  }

  // The engine's own greedy answer to `turns` (the last one the user's), from a fresh cache as the server
  // computes every answer.
  GenerationResult reference_chat(const std::vector<ChatTurn>& turns, GenerationConfig cfg) {
    engine_->generator().reset();
    engine_->set_history({turns.begin(), turns.end() - 1});
    GenerationResult r = engine_->send(turns.back().content, cfg);
    engine_->clear();
    return r;
  }

  // The engine's own continuation of a text (the tokenizer's special tokens added, its EOS the only stop).
  GenerationResult reference_completion(const std::string& prompt, GenerationConfig cfg) {
    engine_->generator().reset();
    auto decoder = std::make_shared<StreamingDecoder>(*tokenizer_, /*skip_special_tokens=*/true);
    return engine_->generator().generate(
        tokenizer_->encode(prompt), cfg, {},
        {[decoder](int32_t id) { return decoder->push(id); }, [decoder] { return decoder->finish(); }});
  }

  static GenerationConfig greedy(int64_t max_tokens) {
    GenerationConfig c;
    c.max_new_tokens = max_tokens;
    return c;
  }

  static json chat_body(const std::vector<ChatTurn>& turns, int64_t max_tokens) {
    return {{"model", "model"},
            {"messages", messages_json(turns)},
            {"temperature", 0},
            {"max_tokens", max_tokens}};
  }

  static void check_error_shape(const Reply& r, int status, const char* code, const char* param) {
    QCOMPARE(r.status, status);
    QVERIFY2(r.body.is_object() && r.body.size() == 1 && r.body.contains("error"), r.body.dump().c_str());
    const json& e = r.body["error"];
    QCOMPARE(e.size(), size_t{4});
    QVERIFY(e["message"].is_string() && !e["message"].get<std::string>().empty());
    QVERIFY(e["type"].is_string());
    if (code)
      QCOMPARE(e["code"], json(code));
    else
      QVERIFY(e["code"].is_null());
    if (param)
      QCOMPARE(e["param"], json(param));
    else
      QVERIFY(e["param"].is_null());
  }

 private Q_SLOTS:
  void initTestCase() {
    std::signal(SIGPIPE, SIG_IGN);  // as forja-cli serve does: a write to a closed socket fails instead
    ServeOptions o;
    o.model_dir = FORJA_DEMO_MODEL;
    o.port = 0;
    o.engine = cpu();
    o.after_stream_write = [this] {
      if (hold_first_write_.exchange(false)) client_gone_.get_future().wait();
    };
    server_ = std::make_unique<Server>(o);
    server_->start();
    QVERIFY(server_->port() > 0);
    QCOMPARE(server_->url(), "http://127.0.0.1:" + std::to_string(server_->port()) + "/v1");
    engine_ = std::make_unique<ChatSession>(FORJA_DEMO_MODEL, cpu());
    tokenizer_ = std::make_unique<Tokenizer>(Tokenizer::load(FORJA_DEMO_MODEL));
  }

  void cleanupTestCase() {
    server_->stop();
    QVERIFY(!server_->running());
  }

  void listsTheModel() {
    auto res = client()->Get("/v1/models");
    QVERIFY(res);
    QCOMPARE(res->status, 200);
    const json j = json::parse(res->body);
    QCOMPARE(j["object"], json("list"));
    QCOMPARE(j["data"].size(), size_t{1});
    QCOMPARE(j["data"][0]["id"], json("model"));  // the demo model's folder name
    QCOMPARE(j["data"][0]["object"], json("model"));
    QCOMPARE(client()->Get("/v1/models/model")->status, 200);
    auto other = client()->Get("/v1/models/other");
    QVERIFY(other);
    check_error_shape({other->status, json::parse(other->body)}, 404, "model_not_found", "model");
  }

  void chatEqualsTheEngine_data() {
    QTest::addColumn<int>("conversation");
    QTest::newRow("one user turn") << 0;
    QTest::newRow("system and user") << 1;
    QTest::newRow("three turns") << 2;
  }
  void chatEqualsTheEngine() {
    QFETCH(int, conversation);
    const std::vector<std::vector<ChatTurn>> conversations = {
        user("Hello! What can you do?"),
        {{"system", "You are terse."}, {"user", "Name a colour."}},
        {{"user", "Hi"}, {"assistant", "Hello, how can I help?"}, {"user", "Tell me a story."}}};
    const auto& turns = conversations[static_cast<size_t>(conversation)];
    const GenerationResult ref = reference_chat(turns, greedy(40));
    QVERIFY(ref.stats.new_tokens > 0);

    const Reply r = post("/v1/chat/completions", chat_body(turns, 40));
    QCOMPARE(r.status, 200);
    QCOMPARE(r.body["object"], json("chat.completion"));
    QCOMPARE(r.body["model"], json("model"));
    QVERIFY(r.body["id"].get<std::string>().rfind("chatcmpl-", 0) == 0);
    QCOMPARE(r.body["choices"].size(), size_t{1});
    const json& choice = r.body["choices"][0];
    QCOMPARE(choice["message"]["role"], json("assistant"));
    QCOMPARE(choice["message"]["content"].get<std::string>(), ref.text);
    QCOMPARE(choice["finish_reason"], json(ref.stop == StopReason::MaxTokens ? "length" : "stop"));
    QCOMPARE(r.body["usage"]["prompt_tokens"].get<int64_t>(), ref.stats.prompt_tokens);
    QCOMPARE(r.body["usage"]["completion_tokens"].get<int64_t>(), ref.stats.new_tokens);
    QCOMPARE(r.body["usage"]["total_tokens"].get<int64_t>(), ref.stats.prompt_tokens + ref.stats.new_tokens);

    // The same answer streamed: a role chunk, the text in pieces, a finish chunk, the usage, [DONE].
    json body = chat_body(turns, 40);
    body["stream"] = true;
    body["stream_options"] = {{"include_usage", true}};
    const Streamed s = post_stream("/v1/chat/completions", body);
    QCOMPARE(s.status, 200);
    QVERIFY(s.done);
    QVERIFY(s.chunks.size() >= 3);
    QCOMPARE(s.chunks.front()["choices"][0]["delta"]["role"], json("assistant"));
    std::string text;
    for (size_t i = 0; i + 2 < s.chunks.size(); ++i) {
      const json& c = s.chunks[i];
      QCOMPARE(c["object"], json("chat.completion.chunk"));
      QCOMPARE(c["id"], s.chunks.front()["id"]);
      QVERIFY(c["choices"][0]["finish_reason"].is_null());
      text += c["choices"][0]["delta"].value("content", "");
    }
    QCOMPARE(text, ref.text);
    const json& finish = s.chunks[s.chunks.size() - 2];
    QCOMPARE(finish["choices"][0]["finish_reason"], choice["finish_reason"]);
    QCOMPARE(finish["choices"][0]["delta"], json::object());
    const json& usage = s.chunks.back();
    QCOMPARE(usage["choices"], json::array());
    QCOMPARE(usage["usage"], r.body["usage"]);
  }

  void completionEqualsTheEngine() {
    const std::string prompt = "Once upon a time there was";
    const GenerationResult ref = reference_completion(prompt, greedy(30));
    QVERIFY(ref.stats.new_tokens > 0);
    const json body = {{"model", "model"}, {"prompt", prompt}, {"max_tokens", 30}, {"temperature", 0}};
    const Reply r = post("/v1/completions", body);
    QCOMPARE(r.status, 200);
    QCOMPARE(r.body["object"], json("text_completion"));
    QCOMPARE(r.body["choices"][0]["text"].get<std::string>(), ref.text);
    QCOMPARE(r.body["choices"][0]["finish_reason"],
             json(ref.stop == StopReason::MaxTokens ? "length" : "stop"));
    QCOMPARE(r.body["usage"]["prompt_tokens"].get<int64_t>(), ref.stats.prompt_tokens);
    QCOMPARE(r.body["usage"]["completion_tokens"].get<int64_t>(), ref.stats.new_tokens);

    // As token ids, and streamed: the same text.
    json ids = body;
    ids["prompt"] = tokenizer_->encode(prompt);
    QCOMPARE(post("/v1/completions", ids).body["choices"][0]["text"].get<std::string>(), ref.text);
    json streamed = body;
    streamed["stream"] = true;
    const Streamed s = post_stream("/v1/completions", streamed);
    QVERIFY(s.done);
    std::string text;
    for (const auto& c : s.chunks) text += c["choices"][0]["text"].get<std::string>();
    QCOMPARE(text, ref.text);
    QCOMPARE(s.chunks.back()["choices"][0]["finish_reason"], r.body["choices"][0]["finish_reason"]);
  }

  void maxTokensEndsWithLength() {
    const auto turns = user("Tell me a long story about a dragon.");
    const GenerationResult full = reference_chat(turns, greedy(40));
    // The precondition: this prompt's greedy answer is longer than 3 tokens (it runs to the 40 asked).
    QVERIFY(full.stats.new_tokens > 3);
    const GenerationResult ref = reference_chat(turns, greedy(3));
    const Reply r = post("/v1/chat/completions", chat_body(turns, 3));
    QCOMPARE(r.status, 200);
    QCOMPARE(r.body["choices"][0]["finish_reason"], json("length"));
    QCOMPARE(r.body["usage"]["completion_tokens"].get<int64_t>(), int64_t{3});
    QCOMPARE(r.body["choices"][0]["message"]["content"].get<std::string>(), ref.text);
  }

  void stopStrings() {
    const auto turns = user("Tell me a long story about a dragon.");
    const GenerationResult full = reference_chat(turns, greedy(40));
    // A stop string from the middle of the answer: the text must end just before its first occurrence.
    QVERIFY(full.text.size() > 12);
    const std::string stop = full.text.substr(full.text.size() / 2, 3);
    const std::string expected = full.text.substr(0, full.text.find(stop));
    GenerationConfig with_stop = greedy(40);
    with_stop.stop_strings = {stop};
    QCOMPARE(reference_chat(turns, with_stop).text, expected);

    json body = chat_body(turns, 40);
    body["stop"] = json::array({"never appears \x01", stop});
    const Reply r = post("/v1/chat/completions", body);
    QCOMPARE(r.status, 200);
    QCOMPARE(r.body["choices"][0]["message"]["content"].get<std::string>(), expected);
    QCOMPARE(r.body["choices"][0]["finish_reason"], json("stop"));
    body["stream"] = true;
    const Streamed s = post_stream("/v1/chat/completions", body);
    std::string text;
    for (const auto& c : s.chunks) text += c["choices"][0]["delta"].value("content", "");
    QCOMPARE(text, expected);
    QCOMPARE(s.chunks.back()["choices"][0]["finish_reason"], json("stop"));
  }

  void errorsInOpenAIShape() {
    check_error_shape(post("/v1/chat/completions", std::string("{\"model\": \"model\", \"messages\": [")),
                      400, nullptr, nullptr);
    check_error_shape(post("/v1/chat/completions", std::string("[1, 2]")), 400, nullptr, nullptr);
    // Well-formed, but a number no double holds: still the client's mistake, not a server error.
    check_error_shape(
        post("/v1/chat/completions", std::string("{\"model\": \"model\", \"temperature\": 1e999}")), 400,
        nullptr, nullptr);
    check_error_shape(post("/v1/chat/completions", json{{"model", "model"}}), 400,
                      "missing_required_parameter", "messages");
    check_error_shape(post("/v1/chat/completions", json{{"messages", messages_json(user("hi"))}}), 400,
                      "missing_required_parameter", "model");
    json bad_role = chat_body({{"wizard", "hi"}}, 4);
    check_error_shape(post("/v1/chat/completions", bad_role), 400, "invalid_value", "messages[0].role");
    json hot = chat_body(user("hi"), 4);
    hot["temperature"] = 5;
    check_error_shape(post("/v1/chat/completions", hot), 400, "invalid_value", "temperature");
    json two = chat_body(user("hi"), 4);
    two["n"] = 2;
    check_error_shape(post("/v1/chat/completions", two), 400, "invalid_value", "n");
    json other = chat_body(user("hi"), 4);
    other["model"] = "gpt-4o";
    check_error_shape(post("/v1/chat/completions", other), 404, "model_not_found", "model");
    check_error_shape(post("/v1/completions", json{{"model", "model"}, {"prompt", 42}}), 400, "invalid_value",
                      "prompt");

    // A prompt beyond the model's context, and one that fits but leaves no room for max_tokens.
    std::string words;
    for (int i = 0; i < 600; ++i) words += "dragon ";  // 600 words > the demo's 512-token context
    check_error_shape(post("/v1/chat/completions", chat_body(user(words), 4)), 400, "context_length_exceeded",
                      "messages");
    check_error_shape(post("/v1/chat/completions", chat_body(user("hi"), server_->context_tokens())), 400,
                      "context_length_exceeded", "messages");

    auto res = client()->Get("/v1/nowhere");
    QVERIFY(res);
    check_error_shape({res->status, json::parse(res->body)}, 404, nullptr, nullptr);
    // The server still answers after all of these.
    QCOMPARE(post("/v1/chat/completions", chat_body(user("hi"), 2)).status, 200);
  }

  void apiKey() {
    ServeOptions o;
    o.model_dir = FORJA_DEMO_MODEL;
    o.port = 0;
    o.engine = cpu();
    o.api_key = "sk-test-key";
    Server locked(o);
    locked.start();
    httplib::Client c("127.0.0.1", locked.port());
    auto none = c.Get("/v1/models");
    QVERIFY(none);
    check_error_shape({none->status, json::parse(none->body)}, 401, "invalid_api_key", nullptr);
    auto wrong = c.Get("/v1/models", {{"Authorization", "Bearer sk-test-kez"}});
    check_error_shape({wrong->status, json::parse(wrong->body)}, 401, "invalid_api_key", nullptr);
    auto right = c.Get("/v1/models", {{"Authorization", "Bearer sk-test-key"}});
    QCOMPARE(right->status, 200);
    locked.stop();
  }

  // 20 different prompts at once, half of them streamed: each answer is the engine's for its own prompt.
  // A burst of connections at a listener that does not accept (as a busy one): with httplib's backlog of 5
  // the kernel drops all but a few handshakes; widened, every one completes. Both listeners stay unaccepted,
  // so the count does not depend on timing.
  static int burst_established(bool widen) {
    constexpr int kBurst = 64;
    const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (listener < 0 || ::bind(listener, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
        ::listen(listener, 5) != 0 || ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
      return -1;
    if (widen && !serve::widen_listen_backlog(listener)) return -2;
    std::vector<pollfd> conns;
    for (int i = 0; i < kBurst; ++i) {
      const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
      ::connect(fd, reinterpret_cast<sockaddr*>(&addr), len);  // 0 or EINPROGRESS: poll tells
      conns.push_back({fd, POLLOUT, 0});
    }
    // Loopback handshakes complete at once; the wait only matters on a starved machine.
    int established = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
    while (established < kBurst && std::chrono::steady_clock::now() < deadline) {
      ::poll(conns.data(), conns.size(), 100);
      established = 0;
      for (auto& c : conns) {
        int err = -1;
        socklen_t n = sizeof err;
        if ((c.revents & POLLOUT) && ::getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &err, &n) == 0 && err == 0)
          ++established;
      }
    }
    for (auto& c : conns) ::close(c.fd);
    ::close(listener);
    return established;
  }
  void widenedBacklogHoldsABurstOfConnections() {
    const int narrow = burst_established(false);
    QVERIFY2(narrow >= 0 && narrow < 64, qPrintable(QString("backlog 5 held %1 of 64").arg(narrow)));
    QCOMPARE(burst_established(true), 64);
  }

  void concurrentRequestsEachGetTheirOwnAnswer() {
    constexpr int kRequests = 20;
    std::vector<std::vector<ChatTurn>> prompts;
    std::vector<std::string> expected;
    // The demo dataset's first 20 questions: the demo model answers them differently (13 distinct answers
    // in 24 tokens when this was written), so a request given another's answer shows.
    std::ifstream dataset(FORJA_DEMO_DATASET);
    std::string line;
    while (static_cast<int>(prompts.size()) < kRequests && std::getline(dataset, line)) {
      const json example = json::parse(line);
      for (const auto& m : example["messages"])
        if (m["role"] == "user") {
          prompts.push_back(user(m["content"].get<std::string>()));
          break;
        }
    }
    QCOMPARE(static_cast<int>(prompts.size()), kRequests);
    for (const auto& p : prompts) expected.push_back(reference_chat(p, greedy(24)).text);
    QVERIFY(std::set<std::string>(expected.begin(), expected.end()).size() >= 10);
    std::vector<std::string> got(kRequests);
    std::vector<int> status(kRequests, 0);
    std::vector<std::thread> clients;
    for (int i = 0; i < kRequests; ++i)
      clients.emplace_back([&, i] {
        json body = chat_body(prompts[static_cast<size_t>(i)], 24);
        if (i % 2) {
          body["stream"] = true;
          auto res = client()->Post("/v1/chat/completions", body.dump(), "application/json");
          if (!res) return;
          status[static_cast<size_t>(i)] = res->status;
          for (const auto& c : parse_sse(res->status, res->body).chunks)
            got[static_cast<size_t>(i)] += c["choices"][0]["delta"].value("content", "");
        } else {
          auto res = client()->Post("/v1/chat/completions", body.dump(), "application/json");
          if (!res) return;
          status[static_cast<size_t>(i)] = res->status;
          got[static_cast<size_t>(i)] =
              json::parse(res->body)["choices"][0]["message"]["content"].get<std::string>();
        }
      });
    for (auto& t : clients) t.join();
    for (int i = 0; i < kRequests; ++i) {
      QCOMPARE(status[static_cast<size_t>(i)], 200);
      QCOMPARE(got[static_cast<size_t>(i)], expected[static_cast<size_t>(i)]);
    }
  }

  void fixtureModelsAnswerAsTheEngine_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<QString>("tokenizer");
    QTest::newRow("llama3, Llama 3 template, BOS") << "llama3"
                                                   << "llama3_bpe";
    QTest::newRow("mistral, SentencePiece BPE") << "mistral"
                                                << "sp_bpe_hf";
  }
  void fixtureModelsAnswerAsTheEngine() {
    QFETCH(QString, model);
    QFETCH(QString, tokenizer);
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::string d = dir.path().toStdString();
    make_model_folder(d, model.toStdString(), tokenizer.toStdString());
    ServeOptions o;
    o.model_dir = d;
    o.model_id = "fixture";
    o.port = 0;
    o.engine = cpu();
    Server server(o);
    server.start();
    httplib::Client c("127.0.0.1", server.port());
    c.set_read_timeout(std::chrono::seconds(240));
    ChatSession engine(d, cpu());
    Tokenizer tok = Tokenizer::load(d);

    const std::vector<ChatTurn> turns = {{"system", "Be brief."}, {"user", "Hello there, who are you?"}};
    engine.set_history({turns.front()});
    const GenerationResult ref = engine.send(turns.back().content, greedy(16));
    QVERIFY(ref.stats.new_tokens > 0);
    json body = chat_body(turns, 16);
    body["model"] = "fixture";
    auto plain = c.Post("/v1/chat/completions", body.dump(), "application/json");
    QVERIFY(plain);
    QCOMPARE(plain->status, 200);
    const json j = json::parse(plain->body);
    QCOMPARE(j["choices"][0]["message"]["content"].get<std::string>(), ref.text);
    QCOMPARE(j["usage"]["prompt_tokens"].get<int64_t>(), ref.stats.prompt_tokens);
    QCOMPARE(j["usage"]["completion_tokens"].get<int64_t>(), ref.stats.new_tokens);
    body["stream"] = true;
    auto streamed = c.Post("/v1/chat/completions", body.dump(), "application/json");
    QVERIFY(streamed);
    std::string text;
    for (const auto& chunk : parse_sse(streamed->status, streamed->body).chunks)
      text += chunk["choices"][0]["delta"].value("content", "");
    QCOMPARE(text, ref.text);

    // A completion starts with the tokenizer's own special tokens (Llama 3's BOS), as HF's encode adds them.
    const std::string prompt = "The quick brown fox";
    engine.generator().reset();
    auto decoder = std::make_shared<StreamingDecoder>(tok, /*skip_special_tokens=*/true);
    const GenerationResult cref = engine.generator().generate(
        tok.encode(prompt), greedy(12), {},
        {[decoder](int32_t id) { return decoder->push(id); }, [decoder] { return decoder->finish(); }});
    auto completion =
        c.Post("/v1/completions",
               json{{"model", "fixture"}, {"prompt", prompt}, {"max_tokens", 12}, {"temperature", 0}}.dump(),
               "application/json");
    QVERIFY(completion);
    const json cj = json::parse(completion->body);
    QCOMPARE(cj["choices"][0]["text"].get<std::string>(), cref.text);
    QCOMPARE(cj["usage"]["prompt_tokens"].get<int64_t>(), cref.stats.prompt_tokens);
    server.stop();
  }

  // A streaming client that goes away after its first piece: the answer stops there (not run to its
  // max_tokens), and the next request is served with its own answer.
  void clientDisconnectStopsTheAnswer() {
    const std::string prompt = "Once upon a time there was";
    constexpr int64_t kLong = 300;
    // The precondition: the greedy continuation runs to all 300 tokens (no EOS on the way).
    QCOMPARE(reference_completion(prompt, greedy(kLong)).stats.new_tokens, kLong);
    const ServerStats before = server_->stats();

    hold_first_write_ = true;
    httplib::Request req;
    req.method = "POST";
    req.path = "/v1/completions";
    req.body = json{
        {"model", "model"},
        {"prompt", prompt},
        {"max_tokens", kLong},
        {"temperature", 0},
        {"stream",
         true}}.dump();
    req.set_header("Content-Type", "application/json");
    int pieces = 0;
    req.content_receiver = [&](const char*, size_t, uint64_t, uint64_t) { return ++pieces < 1; };
    auto c = client();
    auto res = c->send(req);
    QVERIFY(!res);  // the client cancelled and closed the connection
    QCOMPARE(pieces, 1);
    c.reset();
    client_gone_.set_value();  // the server's first write is done; now let it go on to the closed socket

    const auto turns = user("Name a colour.");
    const GenerationResult ref = reference_chat(turns, greedy(20));
    const Reply next = post("/v1/chat/completions", chat_body(turns, 20));
    QCOMPARE(next.status, 200);
    QCOMPARE(next.body["choices"][0]["message"]["content"].get<std::string>(), ref.text);

    const ServerStats after = server_->stats();
    QCOMPARE(after.cancelled, before.cancelled + 1);
    QCOMPARE(after.answered, before.answered + 1);
    const int64_t cancelled_tokens = after.generated_tokens - before.generated_tokens - ref.stats.new_tokens;
    QVERIFY2(cancelled_tokens >= 1 && cancelled_tokens < kLong, std::to_string(cancelled_tokens).c_str());
  }
};

QTEST_GUILESS_MAIN(TestServe)
#include "test_serve.moc"
