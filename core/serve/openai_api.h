// OpenAI's request and response shapes for the local server: request bodies checked and turned into the
// engine's plain types, answers and errors written as OpenAI's clients read them. No HTTP here.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "forja/generate.h"

namespace forja::serve {

// A request the server answers with an error instead of a generation: the HTTP status and OpenAI's
// {"error": {"message", "type", "param", "code"}} fields (param / code empty: null).
struct ApiError : std::runtime_error {
  ApiError(int status, std::string message, std::string param = {}, std::string code = {},
           std::string type = "invalid_request_error");
  int status;
  std::string message, param, code, type;
  nlohmann::json body() const;
};

struct ApiRequest {
  bool chat = true;
  std::string model;
  std::vector<ChatTurn> messages;   // chat
  std::string prompt_text;          // completions: the text, or
  std::vector<int32_t> prompt_ids;  // the token ids given instead
  bool prompt_is_ids = false;
  GenerationConfig config;
  bool max_tokens_given = false;  // else the answer may run to the end of the context
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage: a last chunk with the usage counts
};

// Parse and check a body of POST /v1/chat/completions or /v1/completions. Throws ApiError (400) naming the
// field and the problem. Sampling defaults are OpenAI's (temperature 1, top_p 1); seed defaults to 0.
ApiRequest parse_chat_request(const std::string& body);
ApiRequest parse_completion_request(const std::string& body);

// "stop" or "length", as OpenAI reports why an answer ended.
const char* finish_reason(StopReason stop);

nlohmann::json usage_json(int64_t prompt_tokens, int64_t completion_tokens);

}  // namespace forja::serve
