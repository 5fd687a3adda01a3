// Request checking follows OpenAI's API reference: the documented ranges (temperature [0, 2], top_p (0, 1],
// penalties [-2, 2], at most 4 stop strings) and its error shape. Unknown fields are ignored, as OpenAI does;
// the ones that would change the answer in a way Forja does not do (n > 1, tools, logprobs) are refused.
#include "openai_api.h"

#include <cmath>
#include <limits>

namespace forja::serve {

using nlohmann::json;

ApiError::ApiError(int status_, std::string message_, std::string param_, std::string code_,
                   std::string type_)
    : std::runtime_error(message_),
      status(status_),
      message(std::move(message_)),
      param(std::move(param_)),
      code(std::move(code_)),
      type(std::move(type_)) {}

json ApiError::body() const {
  auto or_null = [](const std::string& s) { return s.empty() ? json(nullptr) : json(s); };
  return {
      {"error", {{"message", message}, {"type", type}, {"param", or_null(param)}, {"code", or_null(code)}}}};
}

const char* finish_reason(StopReason stop) {
  switch (stop) {
    case StopReason::MaxTokens:
    case StopReason::ContextFull:
      return "length";
    default:
      return "stop";
  }
}

json usage_json(int64_t prompt_tokens, int64_t completion_tokens) {
  return {{"prompt_tokens", prompt_tokens},
          {"completion_tokens", completion_tokens},
          {"total_tokens", prompt_tokens + completion_tokens}};
}

namespace {

[[noreturn]] void bad(const std::string& param, const std::string& problem) {
  throw ApiError(400, "'" + param + "': " + problem, param, "invalid_value");
}

json parse_object(const std::string& body) {
  json j;
  try {
    j = json::parse(body);
  } catch (const json::exception& e) {  // a syntax error, or a number beyond a double (1e999)
    throw ApiError(400, std::string("the request body is not valid JSON: ") + e.what());
  }
  if (!j.is_object()) throw ApiError(400, "the request body must be a JSON object");
  return j;
}

// A field that is absent or null counts as not given, as in OpenAI's API.
const json* field(const json& j, const char* name) {
  auto it = j.find(name);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

double number_in(const json& j, const char* name, double lo, double hi, double fallback) {
  const json* v = field(j, name);
  if (!v) return fallback;
  if (!v->is_number()) bad(name, "must be a number");
  const double d = v->get<double>();
  if (!(d >= lo && d <= hi)) bad(name, "must be in [" + json(lo).dump() + ", " + json(hi).dump() + "]");
  return d;
}

bool boolean(const json& j, const char* name, bool fallback) {
  const json* v = field(j, name);
  if (!v) return fallback;
  if (!v->is_boolean()) bad(name, "must be true or false");
  return v->get<bool>();
}

// A whole number given as an integer (or a float with no fraction, as some clients send).
int64_t whole(const json& v, const std::string& name) {
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (std::isfinite(d) && std::floor(d) == d && std::fabs(d) < 9e18) return static_cast<int64_t>(d);
  }
  bad(name, "must be a whole number");
}

std::string text_of(const json& content, const std::string& param) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) bad(param, "must be a string or an array of text parts");
  std::string text;
  for (size_t i = 0; i < content.size(); ++i) {
    const json& part = content[i];
    const std::string p = param + "[" + std::to_string(i) + "]";
    if (!part.is_object() || !part.contains("type") || part["type"] != "text")
      bad(p, "only text parts are supported (this model reads text)");
    if (!part.contains("text") || !part["text"].is_string()) bad(p + ".text", "must be a string");
    text += part["text"].get<std::string>();
  }
  return text;
}

// The fields both endpoints share: model, sampling, stops, n, stream.
void parse_common(const json& j, ApiRequest& r) {
  const json* model = field(j, "model");
  if (!model)
    throw ApiError(400, "you must provide a model parameter", "model", "missing_required_parameter");
  if (!model->is_string()) bad("model", "must be a string");
  r.model = model->get<std::string>();

  if (const json* n = field(j, "n"); n && whole(*n, "n") != 1)
    bad("n", "only n=1 is supported (one answer per request)");
  GenerationConfig& c = r.config;
  c.temperature = number_in(j, "temperature", 0, 2, 1.0);
  c.top_p = number_in(j, "top_p", 0, 1, 1.0);
  if (c.top_p <= 0) bad("top_p", "must be in (0, 1]");
  c.presence_penalty = number_in(j, "presence_penalty", -2, 2, 0);
  c.frequency_penalty = number_in(j, "frequency_penalty", -2, 2, 0);
  if (const json* seed = field(j, "seed")) c.seed = static_cast<uint64_t>(whole(*seed, "seed"));

  const char* max_name = r.chat && field(j, "max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
  if (const json* m = field(j, max_name)) {
    const int64_t n = whole(*m, max_name);
    if (n < 1) bad(max_name, "must be at least 1");
    c.max_new_tokens = n;
    r.max_tokens_given = true;
  }

  if (const json* stop = field(j, "stop")) {
    std::vector<std::string> stops;
    if (stop->is_string()) {
      stops.push_back(stop->get<std::string>());
    } else if (stop->is_array()) {
      if (stop->size() > 4) bad("stop", "takes at most 4 strings");
      for (const auto& s : *stop) {
        if (!s.is_string()) bad("stop", "must be a string or an array of strings");
        stops.push_back(s.get<std::string>());
      }
    } else {
      bad("stop", "must be a string or an array of strings");
    }
    for (const auto& s : stops)
      if (s.empty()) bad("stop", "a stop string must not be empty");
    c.stop_strings = std::move(stops);
  }

  r.stream = boolean(j, "stream", false);
  if (const json* so = field(j, "stream_options")) {
    if (!r.stream) bad("stream_options", "is only allowed with stream: true");
    if (!so->is_object()) bad("stream_options", "must be an object");
    r.include_usage = boolean(*so, "include_usage", false);
  }
  const json* logprobs = field(j, "logprobs");
  if (logprobs && !(logprobs->is_boolean() && !logprobs->get<bool>()))
    bad("logprobs", "log-probabilities in the answer are not supported by this server");
  if (const json* echo = field(j, "echo"); echo && !(echo->is_boolean() && !echo->get<bool>()))
    bad("echo", "echoing the prompt is not supported by this server");
}

}  // namespace

ApiRequest parse_chat_request(const std::string& body) {
  const json j = parse_object(body);
  ApiRequest r;
  r.chat = true;
  parse_common(j, r);
  for (const char* unsupported : {"tools", "functions"})
    if (const json* t = field(j, unsupported); t && !(t->is_array() && t->empty()))
      bad(unsupported, "tool calls are not supported by this server");
  if (const json* rf = field(j, "response_format");
      rf && !(rf->is_object() && rf->contains("type") && (*rf)["type"] == "text"))
    bad("response_format", "only {\"type\": \"text\"} is supported");

  const json* messages = field(j, "messages");
  if (!messages)
    throw ApiError(400, "you must provide a messages parameter", "messages", "missing_required_parameter");
  if (!messages->is_array() || messages->empty()) bad("messages", "must be a non-empty array of messages");
  for (size_t i = 0; i < messages->size(); ++i) {
    const json& m = (*messages)[i];
    const std::string p = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) bad(p, "must be an object with a role and a content");
    const json* role = field(m, "role");
    if (!role || !role->is_string()) bad(p + ".role", "must be a string");
    std::string name = role->get<std::string>();
    // OpenAI's newer name for the system role; the model's template knows it as "system".
    if (name == "developer") name = "system";
    if (name != "system" && name != "user" && name != "assistant")
      bad(p + ".role",
          "must be system, developer, user or assistant, not '" + role->get<std::string>() + "'");
    const json* content = field(m, "content");
    if (!content) bad(p + ".content", "is missing (tool calls are not supported by this server)");
    r.messages.push_back({name, text_of(*content, p + ".content")});
  }
  return r;
}

ApiRequest parse_completion_request(const std::string& body) {
  const json j = parse_object(body);
  ApiRequest r;
  r.chat = false;
  parse_common(j, r);
  // OpenAI's default for the legacy completions endpoint is 16 tokens.
  if (!r.max_tokens_given) r.config.max_new_tokens = 16, r.max_tokens_given = true;
  if (const json* suffix = field(j, "suffix"); suffix && !(suffix->is_string() && suffix->empty()))
    bad("suffix", "inserting text before a suffix is not supported by this server");

  const json* prompt = field(j, "prompt");
  if (!prompt)
    throw ApiError(400, "you must provide a prompt parameter", "prompt", "missing_required_parameter");
  json one = *prompt;
  // A list of prompts asks for one answer each; a list of one is the prompt itself.
  if (one.is_array() && !one.empty() && !one[0].is_number()) {
    if (one.size() != 1) bad("prompt", "only one prompt per request is supported");
    one = json(one[0]);
  }
  if (one.is_string()) {
    r.prompt_text = one.get<std::string>();
    if (r.prompt_text.empty()) bad("prompt", "must not be empty");
  } else if (one.is_array()) {
    if (one.empty()) bad("prompt", "must not be empty");
    for (const auto& id : one) {
      if (!id.is_number_integer()) bad("prompt", "must be a string or an array of token ids");
      const int64_t v = id.get<int64_t>();
      if (v < 0 || v > std::numeric_limits<int32_t>::max()) bad("prompt", "holds a token id out of range");
      r.prompt_ids.push_back(static_cast<int32_t>(v));
    }
    r.prompt_is_ids = true;
  } else {
    bad("prompt", "must be a string or an array of token ids");
  }
  return r;
}

}  // namespace forja::serve
