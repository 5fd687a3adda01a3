// forja::Server over cpp-httplib: its thread pool accepts and parses the requests; the model answers one at a
// time, in the order the requests reached their handlers (a ticket queue), so answers are never interleaved.
#include "forja/serve.h"

#include <httplib.h>

#include <chrono>
#include <condition_variable>
#include <ctime>
#include <filesystem>
#include <mutex>
#include <thread>

#include "forja/error.h"
#include "listen_backlog.h"
#include "openai_api.h"

namespace forja {

using nlohmann::json;
using serve::ApiError;
using serve::ApiRequest;

namespace {

// First come, first served: each request takes a ticket and waits until the counter reaches it. Closing
// the queue (the server stopping) turns every waiter away.
class TurnQueue {
 public:
  bool enter() {
    std::unique_lock lock(mutex_);
    const uint64_t ticket = next_++;
    changed_.wait(lock, [&] { return serving_ == ticket || closed_; });
    if (closed_) return false;
    return true;
  }
  void leave() {
    std::lock_guard lock(mutex_);
    ++serving_;
    changed_.notify_all();
  }
  void close() {
    std::lock_guard lock(mutex_);
    closed_ = true;
    changed_.notify_all();
  }
  void reopen() {
    std::lock_guard lock(mutex_);
    closed_ = false;
    next_ = serving_ = 0;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  uint64_t next_ = 0, serving_ = 0;
  bool closed_ = false;
};

// Holds the model's turn; released when the last copy goes (a streaming answer carries it into the response's
// content provider, which httplib runs after the handler returns).
class Turn {
 public:
  explicit Turn(TurnQueue& q) : queue_(q) {}
  Turn(const Turn&) = delete;
  Turn& operator=(const Turn&) = delete;
  ~Turn() { queue_.leave(); }

 private:
  TurnQueue& queue_;
};

std::string folder_name(const std::string& dir) {
  std::filesystem::path p = std::filesystem::path(dir).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  return p.filename().empty() ? std::string("model") : p.filename().string();
}

// Compares in time that does not depend on where the strings first differ (the length is no secret).
bool same_secret(const std::string& given, const std::string& key) {
  if (given.size() != key.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < key.size(); ++i) diff |= static_cast<unsigned char>(given[i] ^ key[i]);
  return diff == 0;
}

void send_json(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(body.dump(), "application/json");
}

std::string sse(const json& j) {
  return "data: " + j.dump() + "\n\n";
}

}  // namespace

struct Server::Impl {
  explicit Impl(ServeOptions o)
      : options(std::move(o)), chat(options.model_dir, options.engine, options.chat_template) {
    if (!options.adapter_dir.empty()) chat.generator().load_adapter(options.adapter_dir);
    if (options.model_id.empty()) options.model_id = folder_name(options.model_dir);
    context = chat.generator().facts().max_context;
    created = static_cast<int64_t>(std::time(nullptr));
  }

  ServeOptions options;
  ChatSession chat;
  int64_t context = 0;
  int64_t created = 0;
  std::atomic<uint64_t> request_count{0};
  TurnQueue queue;
  std::atomic<bool> stopping{false};
  mutable std::mutex stats_mutex;
  ServerStats stats;
  // Counted before the turn is handed on, so a later request's answer sees this one's counts.
  void count(const GenerationResult& g, bool cancelled) {
    std::lock_guard lock(stats_mutex);
    stats.generated_tokens += g.stats.new_tokens;
    (cancelled ? stats.cancelled : stats.answered) += 1;
  }

  std::unique_ptr<httplib::Server> http;
  std::thread listener;
  int bound_port = 0;
  std::mutex state_mutex;
  std::condition_variable state_changed;
  bool listening = false;

  void routes();
  void answer(const httplib::Request& req, httplib::Response& res, bool chat_endpoint);
  bool authorized(const httplib::Request& req) const {
    if (options.api_key.empty()) return true;
    const std::string auth = req.get_header_value("Authorization");
    const std::string prefix = "Bearer ";
    return auth.compare(0, prefix.size(), prefix) == 0 &&
           same_secret(auth.substr(prefix.size()), options.api_key);
  }
  json model_json() const {
    return {{"id", options.model_id}, {"object", "model"}, {"created", created}, {"owned_by", "forja"}};
  }
};

namespace {

// What one generation needs once its request has been checked and its prompt tokenized.
struct Job {
  ApiRequest request;
  std::vector<int32_t> prompt;
  std::string id;
  int64_t created = 0;
};

json chat_chunk(const Job& job, const std::string& model, const json& delta, const json& finish) {
  return {
      {"id", job.id},
      {"object", "chat.completion.chunk"},
      {"created", job.created},
      {"model", model},
      {"choices",
       json::array({{{"index", 0}, {"delta", delta}, {"logprobs", nullptr}, {"finish_reason", finish}}})}};
}

json completion_chunk(const Job& job, const std::string& model, const std::string& text, const json& finish) {
  return {{"id", job.id},
          {"object", "text_completion"},
          {"created", job.created},
          {"model", model},
          {"choices",
           json::array({{{"text", text}, {"index", 0}, {"logprobs", nullptr}, {"finish_reason", finish}}})}};
}

}  // namespace

void Server::Impl::answer(const httplib::Request& req, httplib::Response& res, bool chat_endpoint) {
  Job job;
  job.request =
      chat_endpoint ? serve::parse_chat_request(req.body) : serve::parse_completion_request(req.body);
  ApiRequest& r = job.request;
  if (r.model != options.model_id)
    throw ApiError(404,
                   "The model '" + r.model + "' does not exist; this server has '" + options.model_id + "'",
                   "model", "model_not_found");

  if (!queue.enter()) throw ApiError(503, "the server is shutting down", {}, {}, "server_error");
  auto turn = std::make_shared<Turn>(queue);

  // The tokenizer and template run inside the turn too: the model's objects are used by one request at a
  // time.
  try {
    if (r.chat)
      job.prompt = chat.prompt_ids(r.messages);
    else
      job.prompt = r.prompt_is_ids ? r.prompt_ids : chat.encode(r.prompt_text, /*add_special_tokens=*/true);
  } catch (const Error& e) {
    throw ApiError(400, e.message(), r.chat ? "messages" : "prompt");
  }
  const int64_t prompt_tokens = static_cast<int64_t>(job.prompt.size());
  const char* prompt_param = r.chat ? "messages" : "prompt";
  if (prompt_tokens == 0) throw ApiError(400, "the prompt encodes to no tokens", prompt_param);
  const int64_t vocab = chat.generator().facts().vocab_size;
  for (int32_t id : job.prompt)
    if (id >= vocab)
      throw ApiError(
          400,
          "token id " + std::to_string(id) + " is outside the model's vocabulary of " + std::to_string(vocab),
          prompt_param);
  if (prompt_tokens >= context || (r.max_tokens_given && prompt_tokens + r.config.max_new_tokens > context))
    throw ApiError(
        400,
        "This model's maximum context length is " + std::to_string(context) +
            " tokens. However, you requested " +
            std::to_string(prompt_tokens + (r.max_tokens_given ? r.config.max_new_tokens : 0)) + " tokens (" +
            std::to_string(prompt_tokens) + " in the " + prompt_param +
            (r.max_tokens_given ? ", " + std::to_string(r.config.max_new_tokens) + " in the completion"
                                : "") +
            "). Please reduce the length of the " + prompt_param + " or the completion.",
        prompt_param, "context_length_exceeded");
  if (!r.max_tokens_given) r.config.max_new_tokens = context - prompt_tokens;
  if (r.chat) r.config = chat.with_turn_stops(r.config);

  job.id = (r.chat ? "chatcmpl-" : "cmpl-") + std::to_string(created) + "-" + std::to_string(++request_count);
  job.created = static_cast<int64_t>(std::time(nullptr));
  const std::string model = options.model_id;

  auto generate = [this](const Job& j, const TokenCallback& on_token) {
    // Each answer from its own prompt alone: no KV of an earlier request is reused, so the answer does not
    // depend on which request came before.
    chat.generator().reset();
    return chat.generator().generate(j.prompt, j.request.config, on_token, chat.detokenizer(), &stopping);
  };

  if (!r.stream) {
    GenerationResult g;
    try {
      g = generate(job, {});
    } catch (const Error& e) {
      throw ApiError(500, e.message(), {}, {}, "server_error");
    }
    count(g, g.stop == StopReason::Cancelled);
    if (g.stop == StopReason::Cancelled)
      throw ApiError(503, "the server is shutting down", {}, {}, "server_error");
    json choice = r.chat ? json{{"index", 0},
                                {"message", {{"role", "assistant"}, {"content", g.text}}},
                                {"logprobs", nullptr},
                                {"finish_reason", serve::finish_reason(g.stop)}}
                         : json{{"text", g.text},
                                {"index", 0},
                                {"logprobs", nullptr},
                                {"finish_reason", serve::finish_reason(g.stop)}};
    send_json(res, 200,
              {{"id", job.id},
               {"object", r.chat ? "chat.completion" : "text_completion"},
               {"created", job.created},
               {"model", model},
               {"choices", json::array({choice})},
               {"usage", serve::usage_json(prompt_tokens, g.stats.new_tokens)}});
    return;
  }

  res.set_header("Cache-Control", "no-cache");
  // The provider runs on this thread after the handler returns, still holding the turn; a client that went
  // away while waiting is skipped without generating.
  res.set_chunked_content_provider("text/event-stream", [this, job = std::move(job), turn, generate, model,
                                                         prompt_tokens](size_t, httplib::DataSink& sink) {
    const bool chat_stream = job.request.chat;
    auto write = [&sink](const std::string& s) { return sink.write(s.data(), s.size()); };
    if (!sink.is_writable()) return false;
    if (chat_stream && !write(sse(chat_chunk(job, model, {{"role", "assistant"}, {"content", ""}}, nullptr))))
      return false;
    bool client_gone = false;
    GenerationResult g;
    try {
      g = generate(job, [&](const TokenEvent& e) {
        if (e.text.empty()) return true;
        const json chunk = chat_stream ? chat_chunk(job, model, {{"content", e.text}}, nullptr)
                                       : completion_chunk(job, model, e.text, nullptr);
        client_gone = !write(sse(chunk));
        if (!client_gone && options.after_stream_write) options.after_stream_write();
        return !client_gone;
      });
    } catch (const Error& e) {
      write(sse(ApiError(500, e.message(), {}, {}, "server_error").body()));
      sink.done();
      return true;
    }
    count(g, client_gone || g.stop == StopReason::Cancelled);
    if (client_gone || g.stop == StopReason::Cancelled) return false;
    const char* finish = serve::finish_reason(g.stop);
    if (!write(sse(chat_stream ? chat_chunk(job, model, json::object(), finish)
                               : completion_chunk(job, model, "", finish))))
      return false;
    if (job.request.include_usage) {
      json usage = chat_stream ? chat_chunk(job, model, json::object(), nullptr)
                               : completion_chunk(job, model, "", nullptr);
      usage["choices"] = json::array();
      usage["usage"] = serve::usage_json(prompt_tokens, g.stats.new_tokens);
      if (!write(sse(usage))) return false;
    }
    write("data: [DONE]\n\n");
    sink.done();
    return true;
  });
}

void Server::Impl::routes() {
  http->set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (authorized(req)) return httplib::Server::HandlerResponse::Unhandled;
    send_json(
        res, 401,
        ApiError(401,
                 req.has_header("Authorization") ? "Incorrect API key provided"
                                                 : "You didn't provide an API key: send it as Authorization: "
                                                   "Bearer <key>",
                 {}, "invalid_api_key")
            .body());
    return httplib::Server::HandlerResponse::Handled;
  });
  http->Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
    send_json(res, 200, {{"object", "list"}, {"data", json::array({model_json()})}});
  });
  http->Get(R"(/v1/models/(.+))", [this](const httplib::Request& req, httplib::Response& res) {
    if (req.matches[1] == options.model_id)
      send_json(res, 200, model_json());
    else
      send_json(
          res, 404,
          ApiError(404, "The model '" + req.matches[1].str() + "' does not exist", "model", "model_not_found")
              .body());
  });
  auto endpoint = [this](bool chat_endpoint) {
    return [this, chat_endpoint](const httplib::Request& req, httplib::Response& res) {
      try {
        answer(req, res, chat_endpoint);
      } catch (const ApiError& e) {
        send_json(res, e.status, e.body());
      }
    };
  };
  http->Post("/v1/chat/completions", endpoint(true));
  http->Post("/v1/completions", endpoint(false));
  // httplib's own refusals (no such route, a body too large, a request it cannot parse) in OpenAI's shape
  // too; responses the handlers wrote are left as they are.
  http->set_error_handler(
      httplib::Server::HandlerWithResponse([](const httplib::Request& req, httplib::Response& res) {
        if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
        const std::string what =
            res.status == 404   ? "Unknown request URL: " + req.method + " " + req.path
            : res.status == 413 ? std::string("the request body is too large")
                                : "the request could not be served (HTTP " + std::to_string(res.status) + ")";
        send_json(res, res.status, ApiError(res.status, what).body());
        return httplib::Server::HandlerResponse::Handled;
      }));
  http->set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "internal error";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    send_json(res, 500, ApiError(500, what, {}, {}, "server_error").body());
  });
}

Server::Server(ServeOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}

Server::~Server() {
  stop();
}

void Server::start() {
  Impl& s = *impl_;
  if (s.listener.joinable()) throw Error("the server is already running", "stop it first");
  s.stopping = false;
  s.queue.reopen();
  {
    std::lock_guard lock(s.stats_mutex);
    s.stats = {};
  }
  s.http = std::make_unique<httplib::Server>();
  const int threads = std::max(1, s.options.threads);
  s.http->new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  // Short keep-alive: an idle client connection holds a worker, and stop() waits for the workers.
  s.http->set_keep_alive_timeout(2);
  s.http->set_payload_max_length(size_t{64} << 20);
  // httplib creates the socket (one per address it tries until one binds); the last one is the listener.
  auto listen_fd = std::make_shared<socket_t>(-1);
  s.http->set_socket_options([listen_fd](socket_t sock) {
    httplib::default_socket_options(sock);
    *listen_fd = sock;
  });
  s.routes();
  const std::string where = s.options.host + ":" + std::to_string(s.options.port);
  if (s.options.port < 0 || s.options.port > 65535)
    throw Error("port " + std::to_string(s.options.port) + " is not a TCP port",
                "give a port in [0, 65535] (0: any free one)");
  if (s.options.port == 0) {
    s.bound_port = s.http->bind_to_any_port(s.options.host);
    if (s.bound_port <= 0) s.bound_port = 0;
  } else {
    s.bound_port = s.http->bind_to_port(s.options.host, s.options.port) ? s.options.port : 0;
  }
  if (s.bound_port == 0)
    throw Error("cannot listen on " + where + " (address in use, or not an address of this machine)",
                "choose another --port, or --host 127.0.0.1");
  if (!serve::widen_listen_backlog(*listen_fd))
    throw Error("cannot widen the accept queue of " + where, "check the system's socket limits");
  {
    std::lock_guard lock(s.state_mutex);
    s.listening = true;
  }
  s.listener = std::thread([&s] {
    s.http->listen_after_bind();
    std::lock_guard lock(s.state_mutex);
    s.listening = false;
    s.state_changed.notify_all();
  });
}

void Server::wait() {
  Impl& s = *impl_;
  std::unique_lock lock(s.state_mutex);
  s.state_changed.wait(lock, [&] { return !s.listening; });
}

void Server::stop() {
  Impl& s = *impl_;
  if (!s.listener.joinable()) return;
  s.stopping = true;
  s.queue.close();
  s.http->stop();
  s.listener.join();
  s.http.reset();
  s.bound_port = 0;
}

bool Server::running() const {
  std::lock_guard lock(impl_->state_mutex);
  return impl_->listening;
}

int Server::port() const {
  return impl_->bound_port;
}

std::string Server::url() const {
  const std::string& host = impl_->options.host;
  // An IPv6 literal needs brackets in a URL.
  const std::string h = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  return "http://" + h + ":" + std::to_string(impl_->bound_port) + "/v1";
}

const std::string& Server::model_id() const {
  return impl_->options.model_id;
}

int64_t Server::context_tokens() const {
  return impl_->context;
}

ServerStats Server::stats() const {
  std::lock_guard lock(impl_->stats_mutex);
  return impl_->stats;
}

}  // namespace forja
