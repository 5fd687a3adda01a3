// forja-cli serve <model-dir> [--adapter DIR] [--host H] [--port P] [--api-key K] [--device cpu|cuda]
// The OpenAI-compatible API (forja/serve.h) on one model until SIGINT or SIGTERM, then a clean shutdown: the
// answer in progress is cancelled and the requests still waiting are refused.
#include <semaphore.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <string>

#include "command.h"
#include "forja/error.h"
#include "forja/hub.h"
#include "forja/serve.h"
#include "generation_args.h"

namespace forja::cli {

namespace {

sem_t g_stop;  // posted by the signal handler (sem_post is async-signal-safe)

void on_stop_signal(int) {
  sem_post(&g_stop);
}

int run_serve(Args& args) {
  args.reject_unknown({"device", "dtype", "base-quant", "max-context", "adapter", "host", "port", "api-key",
                       "model-id", "template"});
  ServeOptions o;
  o.model_dir = forja::cli::model_dir_arg(args, 0);
  o.adapter_dir = args.option_or("adapter", "");
  o.host = args.option_or("host", "127.0.0.1");
  // A repo id names the model better than its snapshot folder (a commit hash) would.
  const std::string& typed = args.positional(0, "<model-dir>");
  o.model_id = args.option_or("model-id", forja::hub::looks_like_repo_id(typed) ? typed : "");
  o.chat_template = args.option_or("template", "");
  const std::string port = args.option_or("port", "8080");
  try {
    size_t used = 0;
    o.port = std::stoi(port, &used);
    if (used != port.size()) throw std::invalid_argument(port);
  } catch (const std::exception&) {
    throw Error("--port needs a whole number, got '" + port + "'",
                "give a port in [0, 65535] (0: any free one)");
  }
  o.api_key = args.option_or("api-key", "");
  o.engine = engine_options_from(args);

  // Before the model loads (and LibTorch starts its threads): a client that goes away must fail a write,
  // not end the process, and a stop signal only wakes the main thread.
  std::signal(SIGPIPE, SIG_IGN);
  sem_init(&g_stop, 0, 0);
  struct sigaction stop_action {};
  stop_action.sa_handler = on_stop_signal;
  sigemptyset(&stop_action.sa_mask);
  sigaction(SIGINT, &stop_action, nullptr);
  sigaction(SIGTERM, &stop_action, nullptr);

  Server server(o);
  server.start();
  std::printf("Serving %s at %s (context %lld tokens%s%s). Ctrl-C stops.\n", server.model_id().c_str(),
              server.url().c_str(), static_cast<long long>(server.context_tokens()),
              o.adapter_dir.empty() ? "" : ", adapter on", o.api_key.empty() ? "" : ", API key required");
  std::fflush(stdout);
  while (sem_wait(&g_stop) != 0 && errno == EINTR) {
  }
  std::fprintf(stderr, "stopping\n");
  server.stop();
  std::printf("stopped\n");
  return 0;
}

}  // namespace
}  // namespace forja::cli

FORJA_CLI_COMMAND(
    serve, "Serve a model over an OpenAI-compatible HTTP API (chat, completions, streaming)",
    "serve <model-dir|org/name> [--pull] [--adapter DIR] [--host 127.0.0.1] [--port 8080 (0: any free port)] "
    "[--api-key KEY] [--model-id NAME] [--template NAME] [--device cpu|cuda] [--dtype fp32|bf16|fp16] "
    "[--base-quant none|nf4] [--max-context N] [--no-graphs]",
    forja::cli::run_serve, {"no-graphs", "pull"});
