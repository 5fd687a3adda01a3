// forja::Server: an OpenAI-compatible HTTP API over one loaded model, so that other tools (the `openai`
// clients, curl, editors' assistants) can talk to it. Plain C++ (no LibTorch, no Qt).
//
//   forja::ServeOptions o;  o.model_dir = "runs/7/merged";  o.port = 0;   // 0: any free port
//   forja::Server server(o);             // loads the model (throws forja::Error)
//   server.start();                      // listens on a background thread
//   std::cout << server.url() << "\n";   // http://127.0.0.1:<the real port>/v1
//   ...
//   server.stop();                       // cancels the answer in progress, refuses those waiting, joins
//
// Endpoints: GET /v1/models, POST /v1/chat/completions, POST /v1/completions, with `stream: true` answered
// as Server-Sent Events in OpenAI's chunk shape ending in `data: [DONE]`. Errors come in OpenAI's shape,
// {"error": {"message", "type", "param", "code"}}.
//
// One model, one answer at a time: requests wait their turn first come, first served, and each answer is
// computed from its own prompt alone (no KV cache is shared between requests), so what a request gets never
// depends on the others. A streaming request whose client goes away stops generating at its next token and
// hands the turn on.
//
// The process should ignore SIGPIPE (forja-cli serve does): a write to a client that has gone away must fail
// rather than end the process.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "forja/generate.h"

namespace forja {

struct ServeOptions {
  std::string model_dir;
  std::string adapter_dir;  // optional: a LoRA adapter applied on top of the model
  std::string model_id;     // the `model` clients name; empty: the model folder's name
  std::string host = "127.0.0.1";
  int port = 8080;      // 0: a free port chosen by the system (port() says which)
  std::string api_key;  // non-empty: every request needs `Authorization: Bearer <api_key>`
  EngineOptions engine;
  std::string chat_template;  // a built-in template name instead of the model's own (empty: the model's)
  int threads = 32;           // connections handled at once; beyond that they wait in the listen queue
  // Called on the serving thread after each streamed piece of an answer was written to its client (tests
  // hold an answer there at a known point); empty: nothing.
  std::function<void()> after_stream_write;
};

// What the server has done since start(), for a status line (and for tests).
struct ServerStats {
  int64_t answered = 0;          // requests answered to the end
  int64_t cancelled = 0;         // streaming answers stopped because their client went away
  int64_t generated_tokens = 0;  // by every generation, cancelled ones included
};

class Server {
 public:
  // Loads the model, its tokenizer and the adapter. Throws forja::Error naming the file and the problem.
  explicit Server(ServeOptions options);
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;
  ~Server();  // stops

  // Binds host:port and serves on a background thread. Throws forja::Error when the address cannot be bound.
  void start();
  // Blocks until stop() (from another thread) has shut the server down. start() first.
  void wait();
  // Stops listening, cancels the answer in progress, refuses the requests still waiting, and joins.
  void stop();

  bool running() const;
  int port() const;         // the bound port (the real one after port 0); 0 before start()
  std::string url() const;  // http://host:port/v1
  const std::string& model_id() const;
  int64_t context_tokens() const;  // the longest prompt plus answer the model takes
  ServerStats stats() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace forja
