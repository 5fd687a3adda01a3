// Jinja values as Python sees them: truthiness, str() and repr(), equality and ordering, JSON in and out
// (transformers' tojson is json.dumps with ensure_ascii=False, so non-ASCII text stays as it is).
#include "jinja_value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>

#include "forja/error.h"
#include "utf8.h"

namespace forja::jinja {

Value::~Value() {
  if (!(list && list.use_count() == 1) && !(dict && dict.use_count() == 1)) return;
  // Containers only this value holds: their items' containers move to the work lists before the container
  // itself goes, so that each destructor frees one level only.
  std::vector<std::shared_ptr<List>> lists;
  std::vector<std::shared_ptr<Dict>> dicts;
  auto take = [&](Value& v) {
    if (v.list && v.list.use_count() == 1) lists.push_back(std::move(v.list));
    if (v.dict && v.dict.use_count() == 1) dicts.push_back(std::move(v.dict));
  };
  take(*this);
  while (!lists.empty() || !dicts.empty()) {
    if (!lists.empty()) {
      std::shared_ptr<List> l = std::move(lists.back());
      lists.pop_back();
      for (Value& item : *l) take(item);
    } else {
      std::shared_ptr<Dict> d = std::move(dicts.back());
      dicts.pop_back();
      for (auto& [k, item] : *d) take(item);
    }
  }
}

const Value* Value::find(const std::string& key) const {
  if (type != Type::Dict) return nullptr;
  for (const auto& [k, v] : *dict)
    if (k == key) return &v;
  return nullptr;
}

void Value::set(const std::string& key, Value v) {
  for (auto& [k, old] : *dict)
    if (k == key) {
      old = std::move(v);
      return;
    }
  dict->emplace_back(key, std::move(v));
}

uint64_t& render_work() {
  thread_local uint64_t work = 0;
  return work;
}

void add_work(uint64_t n) {
  uint64_t& work = render_work();
  work += n;
  if (work > kMaxRenderSteps)
    throw Error("the template is over the step budget of " + std::to_string(kMaxRenderSteps) +
                " steps (a loop that runs too long, or work on values too large)");
}

namespace {

// Containers nest only as deep as this: printing, comparing and converting them recurse once per level, and
// a namespace that holds itself would otherwise recurse forever.
constexpr int kMaxValueDepth = 256;

void check_depth(int depth) {
  if (depth > kMaxValueDepth)
    throw Error("a value nested deeper than " + std::to_string(kMaxValueDepth) +
                " levels (or one that contains itself)");
}

Value from_json(const nlohmann::json& j, int depth = 0) {
  check_depth(depth);
  switch (j.type()) {
    case nlohmann::json::value_t::null:
      return Value::none();
    case nlohmann::json::value_t::boolean:
      return Value::boolean(j.get<bool>());
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
      return Value::integer(j.get<int64_t>());
    case nlohmann::json::value_t::number_float:
      return Value::number(j.get<double>());
    case nlohmann::json::value_t::string:
      return Value::string(j.get<std::string>());
    case nlohmann::json::value_t::array: {
      List l;
      for (const auto& e : j) l.push_back(from_json(e, depth + 1));
      return Value::make_list(std::move(l));
    }
    case nlohmann::json::value_t::object: {
      Dict d;
      for (auto it = j.begin(); it != j.end(); ++it)
        d.emplace_back(it.key(), from_json(it.value(), depth + 1));
      return Value::make_dict(std::move(d));
    }
    default:
      return Value::none();
  }
}

void json_string(std::string& out, const std::string& s) {
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (c < 0x20) {
          static const char* hex = "0123456789abcdef";
          out += "\\u00";
          out += hex[c >> 4];
          out += hex[c & 15];
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

void to_json_impl(std::string& out, const Value& v, int indent, int depth) {
  check_depth(depth);
  add_work(1 + v.s.size() / 64);
  if (out.size() > kMaxValueBytes)
    throw Error("a value printed to more than the value size budget of " +
                std::to_string(kMaxValueBytes >> 20) + " MiB");
  auto newline = [&](int d) {
    if (indent < 0) return;
    out += '\n';
    out.append(static_cast<size_t>(indent * d), ' ');
  };
  // json.dumps: ", " and ": " without indent, "," and ": " with it.
  const char* item_sep = indent < 0 ? ", " : ",";
  switch (v.type) {
    case Value::Type::Undefined:
    case Value::Type::None:
      out += "null";
      break;
    case Value::Type::Bool:
      out += v.b ? "true" : "false";
      break;
    case Value::Type::Int:
      out += std::to_string(v.i);
      break;
    case Value::Type::Float:
      out += python_float(v.f, true);
      break;
    case Value::Type::String:
      json_string(out, v.s);
      break;
    case Value::Type::List:
      if (v.list->empty()) {
        out += "[]";
        break;
      }
      out += '[';
      for (size_t k = 0; k < v.list->size(); ++k) {
        if (k) out += item_sep;
        newline(depth + 1);
        to_json_impl(out, (*v.list)[k], indent, depth + 1);
      }
      newline(depth);
      out += ']';
      break;
    case Value::Type::Dict:
      if (v.dict->empty()) {
        out += "{}";
        break;
      }
      out += '{';
      for (size_t k = 0; k < v.dict->size(); ++k) {
        if (k) out += item_sep;
        newline(depth + 1);
        json_string(out, (*v.dict)[k].first);
        out += ": ";
        to_json_impl(out, (*v.dict)[k].second, indent, depth + 1);
      }
      newline(depth);
      out += '}';
      break;
    case Value::Type::Function:
      throw Error("tojson: a function cannot be written as JSON");
  }
}

// Python's repr() of a str: single quotes unless the text has a ' and no ".
void python_repr_string(std::string& out, const std::string& s) {
  const bool dq = s.find('\'') != std::string::npos && s.find('"') == std::string::npos;
  const char q = dq ? '"' : '\'';
  out += q;
  for (unsigned char c : s) {
    if (c == '\\')
      out += "\\\\";
    else if (c == static_cast<unsigned char>(q))
      out += std::string("\\") + q;
    else if (c == '\n')
      out += "\\n";
    else if (c == '\r')
      out += "\\r";
    else if (c == '\t')
      out += "\\t";
    else if (c < 0x20 || c == 0x7F) {
      static const char* hex = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  out += q;
}

void repr_impl(std::string& out, const Value& v, int depth = 0) {
  check_depth(depth);
  add_work(1 + v.s.size() / 64);
  if (out.size() > kMaxValueBytes)
    throw Error("a value printed to more than the value size budget of " +
                std::to_string(kMaxValueBytes >> 20) + " MiB");
  switch (v.type) {
    case Value::Type::String:
      python_repr_string(out, v.s);
      break;
    case Value::Type::List:
      out += '[';
      for (size_t k = 0; k < v.list->size(); ++k) {
        if (k) out += ", ";
        repr_impl(out, (*v.list)[k], depth + 1);
      }
      out += ']';
      break;
    case Value::Type::Dict:
      out += '{';
      for (size_t k = 0; k < v.dict->size(); ++k) {
        if (k) out += ", ";
        python_repr_string(out, (*v.dict)[k].first);
        out += ": ";
        repr_impl(out, (*v.dict)[k].second, depth + 1);
      }
      out += '}';
      break;
    default:
      out += to_str(v);
  }
}

}  // namespace

Value from_json_text(const std::string& text) {
  try {
    return from_json(nlohmann::json::parse(text));
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("chat template variables are not valid JSON: ") + e.what(),
                "pass a JSON object such as {\"tools\": []}");
  }
}

std::string python_float(double f, bool json) {
  if (std::isnan(f)) return json ? "NaN" : "nan";
  if (std::isinf(f)) return f > 0 ? (json ? "Infinity" : "inf") : (json ? "-Infinity" : "-inf");
  // repr(float): the shortest round-trip digits, fixed notation for exponents in [-4, 16), else d.ddde+XX.
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, f, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  const size_t e = sci.find('e');
  std::string mant = sci.substr(0, e);
  const int exp = std::stoi(sci.substr(e + 1));
  std::string digits;
  const bool neg = mant[0] == '-';
  for (char c : mant)
    if (c >= '0' && c <= '9') digits += c;
  std::string out = neg ? "-" : "";
  if (exp >= -4 && exp < 16) {
    if (exp < 0) {
      out += "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
    } else if (static_cast<size_t>(exp) + 1 >= digits.size()) {
      out += digits + std::string(static_cast<size_t>(exp) + 1 - digits.size(), '0') + ".0";
    } else {
      out +=
          digits.substr(0, static_cast<size_t>(exp) + 1) + "." + digits.substr(static_cast<size_t>(exp) + 1);
    }
  } else {
    out += digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    out += exp < 0 ? "e-" : "e+";
    const int a = exp < 0 ? -exp : exp;
    if (a < 10) out += '0';
    out += std::to_string(a);
  }
  return out;
}

std::string to_json(const Value& v, int indent) {
  std::string out;
  to_json_impl(out, v, indent, 0);
  return out;
}

std::string to_str(const Value& v) {
  switch (v.type) {
    case Value::Type::Undefined:
      return {};
    case Value::Type::None:
      return "None";
    case Value::Type::Bool:
      return v.b ? "True" : "False";
    case Value::Type::Int:
      return std::to_string(v.i);
    case Value::Type::Float:
      return python_float(v.f, false);
    case Value::Type::String:
      return v.s;
    case Value::Type::List:
    case Value::Type::Dict: {
      std::string out;
      repr_impl(out, v);
      return out;
    }
    case Value::Type::Function:
      return "<function>";
  }
  return {};
}

bool truthy(const Value& v) {
  switch (v.type) {
    case Value::Type::Undefined:
    case Value::Type::None:
      return false;
    case Value::Type::Bool:
      return v.b;
    case Value::Type::Int:
      return v.i != 0;
    case Value::Type::Float:
      return v.f != 0;
    case Value::Type::String:
      return !v.s.empty();
    case Value::Type::List:
      return !v.list->empty();
    case Value::Type::Dict:
      return !v.dict->empty();
    case Value::Type::Function:
      return true;
  }
  return false;
}

bool is_number(const Value& v) {
  return v.type == Value::Type::Int || v.type == Value::Type::Float || v.type == Value::Type::Bool;
}

double as_double(const Value& v) {
  return v.type == Value::Type::Float  ? v.f
         : v.type == Value::Type::Bool ? (v.b ? 1 : 0)
                                       : static_cast<double>(v.i);
}

namespace {

bool equal_at(const Value& a, const Value& b, int depth) {
  check_depth(depth);
  add_work(1 + std::min(a.s.size(), b.s.size()) / 64);
  if (is_number(a) && is_number(b)) {
    if (a.type == Value::Type::Float || b.type == Value::Type::Float) return as_double(a) == as_double(b);
    const int64_t x = a.type == Value::Type::Bool ? a.b : a.i, y = b.type == Value::Type::Bool ? b.b : b.i;
    return x == y;
  }
  if (a.type != b.type) return false;
  switch (a.type) {
    case Value::Type::Undefined:
    case Value::Type::None:
      return true;
    case Value::Type::String:
      return a.s == b.s;
    case Value::Type::List:
      if (a.list->size() != b.list->size()) return false;
      for (size_t k = 0; k < a.list->size(); ++k)
        if (!equal_at((*a.list)[k], (*b.list)[k], depth + 1)) return false;
      return true;
    case Value::Type::Dict:
      if (a.dict->size() != b.dict->size()) return false;
      for (const auto& [k, v] : *a.dict) {
        const Value* o = b.find(k);
        if (!o || !equal_at(v, *o, depth + 1)) return false;
      }
      return true;
    case Value::Type::Function:
      return a.fn == b.fn;
    default:
      return false;
  }
}

int compare_at(const Value& a, const Value& b, int depth) {
  check_depth(depth);
  add_work(1 + std::min(a.s.size(), b.s.size()) / 64);
  if (is_number(a) && is_number(b)) {
    const double x = as_double(a), y = as_double(b);
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (a.type == Value::Type::String && b.type == Value::Type::String)
    return a.s < b.s ? -1 : a.s > b.s ? 1 : 0;
  if (a.type == Value::Type::List && b.type == Value::Type::List) {
    for (size_t k = 0; k < a.list->size() && k < b.list->size(); ++k)
      if (int c = compare_at((*a.list)[k], (*b.list)[k], depth + 1)) return c;
    return a.list->size() < b.list->size() ? -1 : a.list->size() > b.list->size() ? 1 : 0;
  }
  throw Error("'<' is not supported between " + type_name(a) + " and " + type_name(b));
}

}  // namespace

bool equal(const Value& a, const Value& b) {
  return equal_at(a, b, 0);
}

int compare(const Value& a, const Value& b) {
  return compare_at(a, b, 0);
}

std::string type_name(const Value& v) {
  switch (v.type) {
    case Value::Type::Undefined:
      return "undefined";
    case Value::Type::None:
      return "NoneType";
    case Value::Type::Bool:
      return "bool";
    case Value::Type::Int:
      return "int";
    case Value::Type::Float:
      return "float";
    case Value::Type::String:
      return "str";
    case Value::Type::List:
      return "list";
    case Value::Type::Dict:
      return "dict";
    case Value::Type::Function:
      return "function";
  }
  return "?";
}

std::vector<size_t> char_offsets(const std::string& s) {
  add_work(1 + s.size() / 64);
  std::vector<size_t> at;
  for (size_t i = 0; i < s.size();) {
    at.push_back(i);
    i = std::min(s.size(), i + utf8::seq_len(static_cast<unsigned char>(s[i])));
  }
  at.push_back(s.size());
  return at;
}

}  // namespace forja::jinja
