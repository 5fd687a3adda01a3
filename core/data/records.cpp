// One JSON object -> one Record: the shape is recognised from the keys (or forced), and every field is
// checked so that a mistake is reported as "file:line: <field> <problem>" instead of surfacing later as a
// strange batch.
#include <nlohmann/json.hpp>

#include <array>

#include "data_internal.h"
#include "forja/dataset.h"
#include "forja/error.h"

namespace forja {
namespace {

using nlohmann::json;

struct FormatName {
  RecordFormat format;
  std::string_view name;
};
constexpr std::array<FormatName, 5> kFormatNames{{{RecordFormat::Auto, "auto"},
                                                  {RecordFormat::Alpaca, "alpaca"},
                                                  {RecordFormat::Chat, "chat"},
                                                  {RecordFormat::ShareGpt, "sharegpt"},
                                                  {RecordFormat::Text, "text"}}};

class RecordParser {
 public:
  RecordParser(const std::string& file, size_t line) : file_(file), line_(line) {}

  [[noreturn]] void fail(const std::string& problem) const { throw RecordError({file_, line_, problem}); }

  // A string field; null and absent count as missing. `what` names it in messages (e.g.
  // "messages[2].content").
  std::string required_string(const json& object, const char* key, const std::string& what) const {
    auto it = object.find(key);
    if (it == object.end() || it->is_null()) fail("missing field '" + what + "'");
    if (!it->is_string()) fail("field '" + what + "' must be a string, not " + article(*it));
    return it->get<std::string>();
  }

  std::string optional_string(const json& object, const char* key) const {
    auto it = object.find(key);
    if (it == object.end() || it->is_null()) return {};
    if (!it->is_string()) fail(std::string("field '") + key + "' must be a string, not " + article(*it));
    return it->get<std::string>();
  }

  // OpenAI-style content may be a list of parts; only text parts make sense for a text model.
  std::string content(const json& message, const std::string& what) const {
    auto it = message.find("content");
    if (it != message.end() && it->is_array()) {
      std::string text;
      for (size_t i = 0; i < it->size(); ++i) {
        const json& part = (*it)[i];
        std::string part_what = what + "[" + std::to_string(i) + "]";
        if (!part.is_object()) fail("field '" + part_what + "' must be an object, not " + article(part));
        std::string type = optional_string(part, "type");
        if (type != "text")
          fail("field '" + part_what + "' is a '" + type + "' part; only text parts are supported");
        text += required_string(part, "text", part_what + ".text");
      }
      return text;
    }
    return required_string(message, "content", what);
  }

  const json& conversation(const json& object, const char* key) const {
    auto it = object.find(key);
    if (it == object.end() || it->is_null()) fail(std::string("missing field '") + key + "'");
    if (!it->is_array()) fail(std::string("field '") + key + "' must be an array, not " + article(*it));
    if (it->empty()) fail(std::string("empty conversation: '") + key + "' has no messages");
    return *it;
  }

  const json& turn(const json& list, size_t i, const char* key) const {
    const json& m = list[i];
    if (!m.is_object())
      fail(std::string("field '") + key + "[" + std::to_string(i) + "]' must be an object, not " +
           article(m));
    return m;
  }

  static std::string article(const json& value) {
    std::string type = value.type_name();
    bool vowel = !type.empty() && std::string_view("aeiou").find(type[0]) != std::string_view::npos;
    return (vowel ? "an " : "a ") + type;
  }

 private:
  const std::string& file_;
  size_t line_;
};

RecordFormat detect_format(const json& object, const RecordParser& p) {
  if (object.contains("messages")) return RecordFormat::Chat;
  if (object.contains("conversations")) return RecordFormat::ShareGpt;
  if (object.contains("instruction") || object.contains("output")) return RecordFormat::Alpaca;
  if (object.contains("text")) return RecordFormat::Text;
  std::string keys;
  for (auto it = object.begin(); it != object.end(); ++it) keys += (keys.empty() ? "" : ", ") + it.key();
  p.fail(
      "unknown record shape: expected 'messages' (chat), 'conversations' (ShareGPT), 'instruction'/'output' "
      "(alpaca) or 'text'; found " +
      (keys.empty() ? std::string("no fields") : "fields " + keys));
}

void parse_chat(const json& object, const RecordParser& p, Record& r) {
  const json& list = p.conversation(object, "messages");
  for (size_t i = 0; i < list.size(); ++i) {
    const json& m = p.turn(list, i, "messages");
    std::string at = "messages[" + std::to_string(i) + "]";
    std::string role = p.required_string(m, "role", at + ".role");
    if (role != "system" && role != "user" && role != "assistant")
      p.fail("unknown role '" + role + "' in " + at + " (expected system, user or assistant)");
    r.messages.push_back({std::move(role), p.content(m, at + ".content")});
  }
}

void parse_sharegpt(const json& object, const RecordParser& p, Record& r) {
  const json& list = p.conversation(object, "conversations");
  for (size_t i = 0; i < list.size(); ++i) {
    const json& m = p.turn(list, i, "conversations");
    std::string at = "conversations[" + std::to_string(i) + "]";
    std::string from = p.required_string(m, "from", at + ".from");
    std::string role;
    if (from == "human" || from == "user")
      role = "user";
    else if (from == "gpt" || from == "assistant")
      role = "assistant";
    else if (from == "system")
      role = "system";
    else
      p.fail("unknown role '" + from + "' in " + at +
             ".from (expected human, user, gpt, assistant or system)");
    r.messages.push_back({std::move(role), p.required_string(m, "value", at + ".value")});
  }
}

// Alpaca's user turn is the instruction, then a blank line and the input when there is one: the same layout
// as the Stanford Alpaca prompt ("### Instruction:\n...\n\n### Input:\n..."), minus headers the chat template
// replaces.
void parse_alpaca(const json& object, const RecordParser& p, Record& r) {
  std::string instruction = p.required_string(object, "instruction", "instruction");
  std::string output = p.required_string(object, "output", "output");
  std::string input = p.optional_string(object, "input");
  std::string system = p.optional_string(object, "system");
  if (instruction.empty() && input.empty()) p.fail("empty prompt: 'instruction' and 'input' are both empty");
  if (!system.empty()) r.messages.push_back({"system", std::move(system)});
  std::string user = instruction;
  if (!input.empty()) user += (user.empty() ? "" : "\n\n") + input;
  r.messages.push_back({"user", std::move(user)});
  r.messages.push_back({"assistant", std::move(output)});
}

void parse_text(const json& object, const RecordParser& p, Record& r) {
  r.text = p.required_string(object, "text", "text");
  if (r.text.empty()) p.fail("field 'text' is empty");
}

}  // namespace

std::string_view format_name(RecordFormat format) {
  for (const auto& f : kFormatNames)
    if (f.format == format) return f.name;
  return "unknown";
}

RecordFormat parse_format_name(std::string_view name) {
  std::string names;
  for (const auto& f : kFormatNames) {
    if (f.name == name) return f.format;
    names += (names.empty() ? "" : ", ") + std::string(f.name);
  }
  throw Error("unknown dataset format '" + std::string(name) + "'", "Use one of: " + names + ".");
}

Record parse_record_json(const json& value, RecordFormat format, const std::string& file, size_t line) {
  RecordParser p(file, line);
  if (!value.is_object()) p.fail("a record must be a JSON object, not " + RecordParser::article(value));
  Record r;
  r.file = file;
  r.line = line;
  r.format = format == RecordFormat::Auto ? detect_format(value, p) : format;
  switch (r.format) {
    case RecordFormat::Chat:
      parse_chat(value, p, r);
      break;
    case RecordFormat::ShareGpt:
      parse_sharegpt(value, p, r);
      break;
    case RecordFormat::Alpaca:
      parse_alpaca(value, p, r);
      break;
    case RecordFormat::Text:
      parse_text(value, p, r);
      break;
    case RecordFormat::Auto:
      break;  // detect_format never returns Auto
  }
  return r;
}

Record parse_record(std::string_view json_text, RecordFormat format, const std::string& file, size_t line) {
  return parse_record_json(parse_json_at(json_text, file, line), format, file, line);
}

}  // namespace forja
