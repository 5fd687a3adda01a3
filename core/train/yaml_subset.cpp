#include "yaml_subset.h"

#include <cctype>
#include <charconv>
#include <cstdint>
#include <string>
#include <vector>

#include "forja/error.h"

namespace forja::train {
namespace {

using nlohmann::json;

struct Line {
  size_t number = 0;  // 1-based
  size_t indent = 0;
  std::string text;  // without indentation and comment, right-trimmed
};

[[noreturn]] void fail(const std::string& source, size_t line, const std::string& what) {
  throw Error(source + ":" + std::to_string(line) + ": " + what,
              "Training configs use plain YAML mappings, scalars and lists; or write the config as JSON.");
}

// Cuts a # comment that is not inside quotes (YAML needs a space or line start before it).
std::string strip_comment(const std::string& s) {
  char quote = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (quote) {
      if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '#' && (i == 0 || s[i - 1] == ' ' || s[i - 1] == '\t')) {
      return s.substr(0, i);
    }
  }
  return s;
}

std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t' || s[b] == '\r')) ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t' || s[e - 1] == '\r')) --e;
  return s.substr(b, e - b);
}

json scalar(const std::string& raw, const std::string& source, size_t line) {
  const std::string s = trim(raw);
  if (s.empty() || s == "~" || s == "null") return nullptr;
  if (s.front() == '"' || s.front() == '\'') {
    if (s.size() < 2 || s.back() != s.front()) fail(source, line, "a quoted string is not closed: " + s);
    if (s.front() == '"') {
      try {
        return json::parse(s);  // JSON's escapes are YAML's double-quoted ones for what configs hold
      } catch (const json::exception&) {
        fail(source, line, "cannot read the quoted string " + s);
      }
    }
    std::string out;  // single quotes: '' is a quote
    for (size_t i = 1; i + 1 < s.size(); ++i) {
      out += s[i];
      if (s[i] == '\'' && s[i + 1] == '\'') ++i;
    }
    return out;
  }
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  for (char c : {'&', '*', '!', '|', '>', '{', '%', '@', '`'})
    if (s.front() == c) fail(source, line, std::string("YAML's '") + c + "' is not supported here: " + s);
  // Numbers: an integer when all of it reads as one, else a float (2e-4, .5, 1.0).
  int64_t i = 0;
  if (auto r = std::from_chars(s.data(), s.data() + s.size(), i);
      r.ec == std::errc() && r.ptr == s.data() + s.size())
    return i;
  try {
    size_t used = 0;
    const double d = std::stod(s, &used);
    if (used == s.size()) return d;
  } catch (const std::exception&) {
  }
  return s;  // a plain string
}

json flow_list(const std::string& s, const std::string& source, size_t line) {
  // [a, "b, c", 3]
  json out = json::array();
  std::string item;
  char quote = 0;
  bool any = false;
  for (size_t i = 1; i + 1 < s.size(); ++i) {
    const char c = s[i];
    if (quote) {
      if (c == quote) quote = 0;
      item += c;
    } else if (c == '"' || c == '\'') {
      quote = c;
      item += c;
    } else if (c == '[' || c == '{') {
      fail(source, line, "nested flow collections are not supported: " + s);
    } else if (c == ',') {
      out.push_back(scalar(item, source, line));
      item.clear();
      any = false;
    } else {
      item += c;
      any = any || !std::isspace(static_cast<unsigned char>(c));
    }
  }
  if (any || !out.empty()) out.push_back(scalar(item, source, line));
  return out;
}

json value_of(const std::string& text, const std::string& source, size_t line) {
  const std::string s = trim(text);
  if (!s.empty() && s.front() == '[') {
    if (s.back() != ']') fail(source, line, "a [list] is not closed on its line: " + s);
    return flow_list(s, source, line);
  }
  return scalar(s, source, line);
}

class Parser {
 public:
  Parser(std::vector<Line> lines, std::string source)
      : lines_(std::move(lines)), source_(std::move(source)) {}

  json document() {
    if (lines_.empty()) return json::object();
    json out = block(lines_.front().indent);
    if (pos_ < lines_.size())
      fail(source_, lines_[pos_].number, "this line is indented less than the first one");
    return out;
  }

 private:
  // The mapping or list whose lines start at `indent`.
  json block(size_t indent) {
    const bool list = lines_[pos_].text.rfind("- ", 0) == 0 || lines_[pos_].text == "-";
    json out = list ? json::array() : json::object();
    while (pos_ < lines_.size() && lines_[pos_].indent >= indent) {
      const Line& l = lines_[pos_];
      if (l.indent > indent) fail(source_, l.number, "unexpected indentation");
      const bool item = l.text.rfind("- ", 0) == 0 || l.text == "-";
      if (item != list)
        fail(source_, l.number, list ? "a mapping key inside a list" : "a list item inside a mapping");
      ++pos_;
      if (list) {
        const std::string rest = trim(l.text.substr(1));
        if (rest.empty())
          fail(source_, l.number, "an empty list item (nested blocks in lists are not supported)");
        if (rest.find(": ") != std::string::npos || rest.back() == ':')
          fail(source_, l.number, "mappings inside list items are not supported");
        out.push_back(value_of(rest, source_, l.number));
        continue;
      }
      const size_t colon = key_end(l.text);
      if (colon == std::string::npos)
        fail(source_, l.number, "expected `key: value`, got \"" + l.text + "\"");
      std::string key = trim(l.text.substr(0, colon));
      if (key.size() >= 2 && (key.front() == '"' || key.front() == '\'')) key = key.substr(1, key.size() - 2);
      if (out.contains(key)) fail(source_, l.number, "the key \"" + key + "\" appears twice");
      const std::string rest = trim(l.text.substr(colon + 1));
      if (!rest.empty()) {
        out[key] = value_of(rest, source_, l.number);
      } else if (pos_ < lines_.size() &&
                 (lines_[pos_].indent > indent ||
                  (lines_[pos_].indent == indent && lines_[pos_].text.rfind("- ", 0) == 0))) {
        out[key] = block(lines_[pos_].indent);
      } else {
        out[key] = nullptr;
      }
    }
    return out;
  }

  // Where the key's ':' is: the first one outside quotes that ends the line or has a space after it.
  static size_t key_end(const std::string& s) {
    char quote = 0;
    for (size_t i = 0; i < s.size(); ++i) {
      if (quote) {
        if (s[i] == quote) quote = 0;
      } else if (s[i] == '"' || s[i] == '\'') {
        quote = s[i];
      } else if (s[i] == ':' && (i + 1 == s.size() || s[i + 1] == ' ')) {
        return i;
      }
    }
    return std::string::npos;
  }

  std::vector<Line> lines_;
  std::string source_;
  size_t pos_ = 0;
};

// The offset of the first byte that is not part of well-formed UTF-8, or npos.
size_t invalid_utf8_at(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t n = 0;
    uint32_t cp = 0;
    if (c < 0x80)
      n = 1, cp = c;
    else if ((c & 0xE0) == 0xC0)
      n = 2, cp = c & 0x1F;
    else if ((c & 0xF0) == 0xE0)
      n = 3, cp = c & 0x0F;
    else if ((c & 0xF8) == 0xF0)
      n = 4, cp = c & 0x07;
    else
      return i;
    if (i + n > s.size()) return i;
    for (size_t k = 1; k < n; ++k) {
      const auto d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (d & 0x3F);
    }
    // Overlong forms, surrogates and values past U+10FFFF are not UTF-8 either.
    static constexpr uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) return i;
    i += n;
  }
  return std::string::npos;
}

}  // namespace

json parse_yaml_subset(const std::string& text, const std::string& source) {
  // JSON strings must be UTF-8: without this check the config's later dump() would throw a json type_error.
  if (const size_t bad = invalid_utf8_at(text); bad != std::string::npos)
    throw Error(source + ": is not UTF-8 text (byte " + std::to_string(bad) + ")");
  std::vector<Line> lines;
  size_t number = 0, start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string raw = text.substr(start, end - start);
    ++number;
    start = end + 1;
    if (raw.find('\t') < raw.find_first_not_of(" \t")) fail(source, number, "tabs cannot indent YAML");
    const std::string body = trim(strip_comment(raw));
    if (body.empty()) continue;
    if (body == "---" || body == "...") {
      if (!lines.empty()) fail(source, number, "several YAML documents in one file are not supported");
      continue;
    }
    lines.push_back({number, raw.find_first_not_of(' '), body});
  }
  return Parser(std::move(lines), source).document();
}

}  // namespace forja::train
