// Jinja renderer: evaluates the parsed tree against the template variables with Python's semantics, the
// filters, tests and str/dict methods that chat templates use, loop.*, namespace() and {% generation %}
// spans.
#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "forja/error.h"
#include "jinja.h"
#include "jinja_value.h"
#include "unicode_norm.h"
#include "utf8.h"

namespace forja::jinja {
namespace {

struct BreakSignal {};
struct ContinueSignal {};

// A template error at a line; converted to forja::Error naming the origin by Template::render.
struct RenderError {
  int line;
  std::string what;
};

[[noreturn]] void fail(int line, const std::string& what) {
  throw RenderError{line, what};
}

// With the step and value budgets of jinja_value.h: a long conversation renders to some hundred kilobytes
// with lists of a few thousand items at most.
constexpr size_t kMaxOutputBytes = kMaxValueBytes;
constexpr size_t kMaxItems = size_t(1) << 20;  // one list or dict, a range(), a loop
// A loop iteration builds the loop object (ten entries): it costs about as much as ten plain steps.
constexpr uint64_t kLoopIterationSteps = 10;

std::string mib(size_t n) {
  return std::to_string(n >> 20) + " MiB";
}

void check_string_size(uint64_t n) {
  if (n > kMaxValueBytes)
    throw Error("a string of " + std::to_string(n) + " bytes is over the value size budget of " +
                mib(kMaxValueBytes));
}

void check_items(uint64_t n, const char* what) {
  if (n > kMaxItems)
    throw Error(std::string(what) + " of " + std::to_string(n) + " items is over the value size budget of " +
                std::to_string(kMaxItems) + " items");
}

// Integers are 64-bit where Python's are unbounded. Overflow is an error rather than a silent switch to
// float: a float would print and compare differently from what Jinja2 gives, so an error is the honest
// result.
[[noreturn]] void int_overflow(const std::string& op) {
  throw Error("integer overflow in " + op + " (template integers are 64-bit)");
}

int64_t int_of(const Value& v) {
  return v.type == Value::Type::Bool ? (v.b ? 1 : 0) : v.i;
}

int64_t int_pow(int64_t base, int64_t exp) {
  int64_t result = 1;
  while (exp > 0) {
    if ((exp & 1) && __builtin_mul_overflow(result, base, &result)) int_overflow("**");
    exp >>= 1;
    if (exp > 0 && __builtin_mul_overflow(base, base, &base)) int_overflow("**");
  }
  return result;
}

bool is_space_char(uint32_t cp) {
  return unicode::is_whitespace(cp);
}

std::string strip_chars(const std::string& s, bool left, bool right, const Value* chars) {
  auto in_set = [&](size_t at, size_t& len) {
    const uint32_t cp = utf8::decode(s, at, len);
    if (!chars || chars->type == Value::Type::None) return is_space_char(cp);
    std::string one = s.substr(at, len);
    return chars->s.find(one) != std::string::npos;
  };
  size_t b = 0, e = s.size();
  while (left && b < e) {
    size_t len = 0;
    if (!in_set(b, len)) break;
    b += len;
  }
  while (right && e > b) {
    size_t st = e - 1;
    while (st > b && (static_cast<unsigned char>(s[st]) & 0xC0) == 0x80) --st;
    size_t len = 0;
    if (!in_set(st, len)) break;
    e = st;
  }
  return s.substr(b, e - b);
}

std::string map_case(const std::string& s, int mode) {  // 0 lower, 1 upper, 2 title, 3 capitalize
  std::string out;
  bool prev_cased = false;
  bool first = true;
  for (size_t i = 0; i < s.size();) {
    size_t len = 0;
    const uint32_t cp = utf8::decode(s, i, len);
    if (len == 1 && cp == 0xFFFD) {
      out += s[i++];
      continue;
    }
    uint32_t m = cp;
    if (mode == 0)
      m = unicode::to_lower(cp);
    else if (mode == 1)
      m = unicode::to_upper(cp);
    else if (mode == 2)
      m = prev_cased ? unicode::to_lower(cp) : unicode::to_upper(cp);
    else
      m = first ? unicode::to_upper(cp) : unicode::to_lower(cp);
    utf8::append(out, m);
    prev_cased = unicode::is_cased_letter(cp);
    first = false;
    i += len;
  }
  return out;
}

List split_string(const std::string& s, const Value* sep, int64_t maxsplit) {
  List out;
  if (!sep || sep->type == Value::Type::None) {
    size_t i = 0;
    while (i < s.size()) {
      size_t len = 0;
      while (i < s.size() && is_space_char(utf8::decode(s, i, len))) i += len;
      if (i >= s.size()) break;
      if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) {
        out.push_back(Value::string(strip_chars(s.substr(i), false, true, nullptr)));
        break;
      }
      size_t j = i;
      while (j < s.size() && !is_space_char(utf8::decode(s, j, len))) j += len;
      out.push_back(Value::string(s.substr(i, j - i)));
      i = j;
    }
    return out;
  }
  if (sep->s.empty()) throw Error("split(): empty separator");
  size_t last = 0;
  for (size_t at = s.find(sep->s); at != std::string::npos; at = s.find(sep->s, last)) {
    if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) break;
    out.push_back(Value::string(s.substr(last, at - last)));
    last = at + sep->s.size();
  }
  out.push_back(Value::string(s.substr(last)));
  return out;
}

std::string replace_all(const std::string& s, const std::string& from, const std::string& to, int64_t count) {
  if (from.empty()) return s;
  std::string out;
  size_t last = 0;
  int64_t n = 0;
  for (size_t at = s.find(from); at != std::string::npos && (count < 0 || n < count);
       at = s.find(from, last), ++n) {
    out.append(s, last, at - last);
    out += to;
    last = at + from.size();
  }
  out.append(s, last);
  return out;
}

// b != 0, and not INT64_MIN // -1 (the callers check both).
int64_t py_floordiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t py_mod(int64_t a, int64_t b) {
  if (b == -1) return 0;  // INT64_MIN % -1 traps in C++; the answer is 0 for every a
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

// Python slice semantics over n items; returns the selected indexes.
std::vector<int64_t> slice_indexes(int64_t n, const Value& start, const Value& stop, const Value& step) {
  const int64_t st = step.type == Value::Type::Int ? step.i : 1;
  if (st == 0) throw Error("slice step cannot be zero");
  auto norm = [&](const Value& v, int64_t dflt, bool is_start) {
    if (v.type != Value::Type::Int) return dflt;
    int64_t x = v.i;
    if (x < 0) x += n;
    if (st > 0) return std::clamp<int64_t>(x, 0, n);
    return std::clamp<int64_t>(x, -1, n - 1) + (is_start ? 0 : 0);
  };
  std::vector<int64_t> out;
  if (st > 0) {
    const int64_t b = norm(start, 0, true), e = norm(stop, n, false);
    // Stops before k += st could overflow (a step near INT64_MAX).
    for (int64_t k = b; k < e; k += st) {
      out.push_back(k);
      if (e - k <= st) break;
    }
  } else {
    const int64_t b = norm(start, n - 1, true), e = norm(stop, -1, false);
    for (int64_t k = b; k > e; k += st) {
      out.push_back(k);
      if (e - k >= st) break;
    }
  }
  return out;
}

class Renderer {
 public:
  Renderer(const Dict& globals, Template::Output& out) : out_(out) {
    scopes_.emplace_back();
    for (const auto& [k, v] : globals) scopes_.back()[k] = v;
  }

  // A namespace may be given itself as an attribute (ns.self = ns): a cycle of shared dicts that reference
  // counting never frees. Emptying every namespace written to when the render ends breaks such cycles.
  ~Renderer() {
    for (const auto& d : written_namespaces_) {
      Dict gone;
      gone.swap(*d);
    }
  }
  Renderer(const Renderer&) = delete;
  Renderer& operator=(const Renderer&) = delete;

  void run(const std::vector<NodePtr>& body) {
    render_work() = 0;
    for (const auto& n : body) exec(*n);
  }

 private:
  using Scope = std::unordered_map<std::string, Value>;

  Value lookup(const std::string& name) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto f = it->find(name);
      if (f != it->end()) return f->second;
    }
    return builtin(name);
  }

  static Value builtin(const std::string& name) {
    if (name == "namespace") {
      return Value::function([](std::vector<Value>& args, Kwargs& kwargs) {
        Value ns = Value::make_dict();
        ns.is_namespace = true;
        for (const auto& a : args)
          if (a.type == Value::Type::Dict)
            for (const auto& [k, v] : *a.dict) ns.set(k, v);
        for (auto& [k, v] : kwargs) ns.set(k, v);
        return ns;
      });
    }
    if (name == "range") {
      return Value::function([](std::vector<Value>& args, Kwargs&) {
        int64_t b = 0, e = 0, st = 1;
        for (const auto& a : args)
          if (a.type != Value::Type::Int) throw Error("range() takes integers");
        if (args.size() == 1)
          e = args[0].i;
        else if (args.size() >= 2)
          b = args[0].i, e = args[1].i;
        if (args.size() == 3) st = args[2].i;
        if (st == 0 || args.empty() || args.size() > 3) throw Error("range(): bad arguments");
        // The length first, in unsigned (modular) arithmetic, so that neither a huge range nor k += st can
        // overflow: the distance between two int64 values and |st| both fit in 64 unsigned bits.
        const bool empty = st > 0 ? b >= e : b <= e;
        const uint64_t span = st > 0 ? uint64_t(e) - uint64_t(b) : uint64_t(b) - uint64_t(e);
        const uint64_t step = st > 0 ? uint64_t(st) : uint64_t(0) - uint64_t(st);
        const uint64_t n = empty ? 0 : (span - 1) / step + 1;
        if (n > kMaxItems)
          throw Error("range() of " + std::to_string(n) + " items is over the value size budget of " +
                      std::to_string(kMaxItems) + " items");
        List l;
        l.reserve(static_cast<size_t>(n));
        for (uint64_t k = 0; k < n; ++k)
          l.push_back(Value::integer(static_cast<int64_t>(uint64_t(b) + k * uint64_t(st))));
        return Value::make_list(std::move(l));
      });
    }
    if (name == "dict") {
      return Value::function([](std::vector<Value>&, Kwargs& kwargs) {
        Dict d(kwargs.begin(), kwargs.end());
        return Value::make_dict(std::move(d));
      });
    }
    return Value();
  }

  void assign(const std::string& name, Value v) { scopes_.back()[name] = std::move(v); }

  void emit(const std::string& s) {
    if (out_.text.size() + s.size() > kMaxOutputBytes)
      fail(line_, "the output is over the output budget of " + mib(kMaxOutputBytes));
    out_.text += s;
  }

  // Adds n steps of work and checks the step budget (value helpers add theirs through render_work()).
  void charge(uint64_t n = 1) {
    try {
      add_work(n);
    } catch (const Error& e) {
      fail(line_, e.message());
    }
  }

  void exec(const Node& n) {
    line_ = n.line;
    charge();
    switch (n.kind) {
      case Node::Kind::Text:
        emit(n.text);
        break;
      case Node::Kind::Output:
        emit(to_str(eval(*n.expr)));
        break;
      case Node::Kind::If:
        for (const auto& [cond, body] : n.branches)
          if (!cond || truthy(eval(*cond))) {
            for (const auto& c : body) exec(*c);
            break;
          }
        break;
      case Node::Kind::For:
        exec_for(n);
        break;
      case Node::Kind::Set: {
        Value v = eval(*n.expr);
        if (n.set_attr.empty()) {
          assign(n.targets[0], std::move(v));
        } else {
          Value ns = lookup(n.targets[0]);
          if (ns.type != Value::Type::Dict || !ns.is_namespace)
            fail(n.line,
                 "cannot assign attribute '" + n.set_attr + "' on '" + n.targets[0] + "': not a namespace");
          ns.set(n.set_attr, std::move(v));  // shares the dict, so every scope sees it
          if (std::find(written_namespaces_.begin(), written_namespaces_.end(), ns.dict) ==
              written_namespaces_.end())
            written_namespaces_.push_back(ns.dict);
        }
        break;
      }
      case Node::Kind::SetBlock: {
        const size_t mark = out_.text.size();
        for (const auto& c : n.body) exec(*c);
        std::string captured = out_.text.substr(mark);
        out_.text.resize(mark);
        assign(n.targets[0], Value::string(std::move(captured)));
        break;
      }
      case Node::Kind::Generation: {
        const size_t begin = out_.text.size();
        for (const auto& c : n.body) exec(*c);
        out_.generation_spans.emplace_back(begin, out_.text.size());
        break;
      }
      case Node::Kind::Break:
        throw BreakSignal{};
      case Node::Kind::Continue:
        throw ContinueSignal{};
    }
  }

  void exec_for(const Node& n) {
    const Value seq = eval(*n.expr);
    List items;
    if (seq.type == Value::Type::List) {
      items = *seq.list;
    } else if (seq.type == Value::Type::Dict) {
      for (const auto& [k, v] : *seq.dict) items.push_back(Value::string(k));
    } else if (seq.type == Value::Type::String) {
      const auto at = char_offsets(seq.s);
      for (size_t k = 0; k + 1 < at.size(); ++k)
        items.push_back(Value::string(seq.s.substr(at[k], at[k + 1] - at[k])));
    } else if (seq.type != Value::Type::Undefined && seq.type != Value::Type::None) {
      fail(n.line, "'" + type_name(seq) + "' object is not iterable");
    } else if (seq.type == Value::Type::None) {
      fail(n.line, "'NoneType' object is not iterable");
    }
    charge(items.size());
    scopes_.emplace_back();
    auto bind = [&](const Value& item) {
      if (n.targets.size() == 1) {
        assign(n.targets[0], item);
        return;
      }
      if (item.type != Value::Type::List || item.list->size() != n.targets.size())
        fail(n.line, "cannot unpack the loop item into " + std::to_string(n.targets.size()) + " names");
      for (size_t k = 0; k < n.targets.size(); ++k) assign(n.targets[k], (*item.list)[k]);
    };
    if (n.filter) {
      List kept;
      for (const auto& item : items) {
        bind(item);
        if (truthy(eval(*n.filter))) kept.push_back(item);
      }
      items = std::move(kept);
    }
    const auto len = static_cast<int64_t>(items.size());
    for (int64_t k = 0; k < len; ++k) {
      charge(kLoopIterationSteps);
      bind(items[static_cast<size_t>(k)]);
      Value loop = Value::make_dict();
      loop.set("index", Value::integer(k + 1));
      loop.set("index0", Value::integer(k));
      loop.set("revindex", Value::integer(len - k));
      loop.set("revindex0", Value::integer(len - k - 1));
      loop.set("first", Value::boolean(k == 0));
      loop.set("last", Value::boolean(k == len - 1));
      loop.set("length", Value::integer(len));
      loop.set("previtem", k > 0 ? items[static_cast<size_t>(k - 1)] : Value());
      loop.set("nextitem", k + 1 < len ? items[static_cast<size_t>(k + 1)] : Value());
      loop.set("cycle", Value::function([k](std::vector<Value>& args, Kwargs&) {
                 if (args.empty()) throw Error("loop.cycle() needs arguments");
                 return args[static_cast<size_t>(k) % args.size()];
               }));
      assign("loop", loop);
      try {
        for (const auto& c : n.body) exec(*c);
      } catch (const BreakSignal&) {
        break;
      } catch (const ContinueSignal&) {
      }
    }
    scopes_.pop_back();
    if (len == 0)
      for (const auto& c : n.else_body) exec(*c);
  }

  Value eval(const Expr& e) {
    line_ = e.line;
    try {
      charge();
      Value v = eval_inner(e);
      line_ = e.line;
      charge(v.s.size() / 64);
      check_string_size(v.s.size());
      if (v.type == Value::Type::List) check_items(v.list->size(), "a list");
      if (v.type == Value::Type::Dict) check_items(v.dict->size(), "a dict");
      return v;
    } catch (const Error& err) {
      fail(e.line, err.message());
    }
  }

  Value eval_inner(const Expr& e) {
    switch (e.kind) {
      case Expr::Kind::Literal:
        return e.literal;
      case Expr::Kind::Name:
        return lookup(e.name);
      case Expr::Kind::List: {
        List l;
        for (const auto& a : e.args) l.push_back(eval(*a));
        return Value::make_list(std::move(l));
      }
      case Expr::Kind::Dict: {
        Value d = Value::make_dict();
        for (size_t k = 0; k + 1 < e.args.size(); k += 2) {
          const Value key = eval(*e.args[k]);
          d.set(to_str(key), eval(*e.args[k + 1]));
        }
        return d;
      }
      case Expr::Kind::Attr:
        return get_attr(eval(*e.args[0]), e.name, e.line);
      case Expr::Kind::Index:
        return get_item(eval(*e.args[0]), eval(*e.args[1]), e.line);
      case Expr::Kind::Slice: {
        const Value obj = eval(*e.args[0]);
        const Value a = e.args[1] ? eval(*e.args[1]) : Value::none();
        const Value b = e.args[2] ? eval(*e.args[2]) : Value::none();
        const Value c = e.args[3] ? eval(*e.args[3]) : Value::none();
        if (obj.type == Value::Type::List) {
          List l;
          for (int64_t k : slice_indexes(static_cast<int64_t>(obj.list->size()), a, b, c))
            l.push_back((*obj.list)[static_cast<size_t>(k)]);
          return Value::make_list(std::move(l));
        }
        if (obj.type == Value::Type::String) {
          const auto at = char_offsets(obj.s);
          std::string s;
          for (int64_t k : slice_indexes(static_cast<int64_t>(at.size() - 1), a, b, c))
            s.append(obj.s, at[static_cast<size_t>(k)],
                     at[static_cast<size_t>(k) + 1] - at[static_cast<size_t>(k)]);
          return Value::string(std::move(s));
        }
        fail(e.line, "'" + type_name(obj) + "' object cannot be sliced");
      }
      case Expr::Kind::Call:
        return call(e);
      case Expr::Kind::Filter:
        return filter(e);
      case Expr::Kind::Test: {
        const bool r = test(e);
        return Value::boolean(e.negated ? !r : r);
      }
      case Expr::Kind::Unary: {
        const Value v = eval(*e.args[0]);
        if (e.name == "not") return Value::boolean(!truthy(v));
        if (v.type == Value::Type::Int) {
          if (e.name == "-" && v.i == INT64_MIN) int_overflow("unary -");
          return Value::integer(e.name == "-" ? -v.i : v.i);
        }
        if (v.type == Value::Type::Bool) return Value::integer(e.name == "-" ? -int_of(v) : int_of(v));
        if (v.type == Value::Type::Float) return Value::number(e.name == "-" ? -v.f : v.f);
        fail(e.line, "bad operand type for unary " + e.name + ": '" + type_name(v) + "'");
      }
      case Expr::Kind::Binary:
        return binary(e);
      case Expr::Kind::Cond: {
        if (truthy(eval(*e.args[0]))) return eval(*e.args[1]);
        return e.args[2] ? eval(*e.args[2]) : Value();
      }
    }
    return Value();
  }

  static Value get_attr(const Value& obj, const std::string& name, int line) {
    if (obj.type == Value::Type::Undefined) fail(line, "'" + name + "' of an undefined value");
    if (obj.type == Value::Type::Dict) {
      if (const Value* v = obj.find(name)) return *v;
      return Value();
    }
    return Value();
  }

  static Value get_item(const Value& obj, const Value& key, int line) {
    if (obj.type == Value::Type::Undefined) fail(line, "an item of an undefined value");
    if (obj.type == Value::Type::Dict) {
      if (const Value* v = obj.find(to_str(key))) return *v;
      return Value();
    }
    if (obj.type == Value::Type::List || obj.type == Value::Type::String) {
      if (key.type != Value::Type::Int) return Value();
      const bool is_list = obj.type == Value::Type::List;
      std::vector<size_t> at;
      if (!is_list) at = char_offsets(obj.s);
      const auto n = static_cast<int64_t>(is_list ? obj.list->size() : at.size() - 1);
      int64_t k = key.i < 0 ? key.i + n : key.i;
      if (k < 0 || k >= n) return Value();
      if (is_list) return (*obj.list)[static_cast<size_t>(k)];
      return Value::string(obj.s.substr(at[static_cast<size_t>(k)],
                                        at[static_cast<size_t>(k) + 1] - at[static_cast<size_t>(k)]));
    }
    return Value();
  }

  Value binary(const Expr& e) {
    const std::string& op = e.name;
    if (op == "and") {
      Value l = eval(*e.args[0]);
      return truthy(l) ? eval(*e.args[1]) : l;
    }
    if (op == "or") {
      Value l = eval(*e.args[0]);
      return truthy(l) ? l : eval(*e.args[1]);
    }
    const Value l = eval(*e.args[0]);
    const Value r = eval(*e.args[1]);
    if (op == "==") return Value::boolean(equal(l, r));
    if (op == "!=") return Value::boolean(!equal(l, r));
    if (op == "<") return Value::boolean(compare(l, r) < 0);
    if (op == ">") return Value::boolean(compare(l, r) > 0);
    if (op == "<=") return Value::boolean(compare(l, r) <= 0);
    if (op == ">=") return Value::boolean(compare(l, r) >= 0);
    if (op == "in" || op == "not in") {
      bool found = false;
      if (r.type == Value::Type::String) {
        if (l.type != Value::Type::String) fail(e.line, "'in <string>' requires a string on the left");
        found = r.s.find(l.s) != std::string::npos;
      } else if (r.type == Value::Type::List) {
        charge(r.list->size());
        found = std::any_of(r.list->begin(), r.list->end(), [&](const Value& x) { return equal(x, l); });
      } else if (r.type == Value::Type::Dict) {
        found = l.type == Value::Type::String && r.find(l.s) != nullptr;
      } else {
        fail(e.line, "argument of type '" + type_name(r) + "' is not iterable");
      }
      return Value::boolean(op == "in" ? found : !found);
    }
    if (op == "~") {
      std::string a = to_str(l), b = to_str(r);
      check_string_size(a.size() + b.size());
      return Value::string(a + b);
    }
    if (op == "+") {
      if (l.type == Value::Type::String && r.type == Value::Type::String) {
        check_string_size(l.s.size() + r.s.size());
        return Value::string(l.s + r.s);
      }
      if (l.type == Value::Type::List && r.type == Value::Type::List) {
        check_items(l.list->size() + r.list->size(), "a list");
        charge(l.list->size() + r.list->size());
        List out = *l.list;
        out.insert(out.end(), r.list->begin(), r.list->end());
        return Value::make_list(std::move(out));
      }
    }
    if (op == "*") {
      const Value* s = l.type == Value::Type::String ? &l : r.type == Value::Type::String ? &r : nullptr;
      const Value* n = s == &l ? &r : &l;
      if (s && (n->type == Value::Type::Int || n->type == Value::Type::Bool)) {
        const int64_t times = int_of(*n);
        if (times <= 0 || s->s.empty()) return Value::string("");
        if (static_cast<uint64_t>(times) > kMaxValueBytes / s->s.size())
          throw Error("a string repeated " + std::to_string(times) +
                      " times is over the value size budget of " + mib(kMaxValueBytes));
        std::string out;
        out.reserve(s->s.size() * static_cast<size_t>(times));
        for (int64_t k = 0; k < times; ++k) out += s->s;
        return Value::string(std::move(out));
      }
      const Value* list = l.type == Value::Type::List ? &l : r.type == Value::Type::List ? &r : nullptr;
      const Value* count = list == &l ? &r : &l;
      if (list && (count->type == Value::Type::Int || count->type == Value::Type::Bool)) {
        const int64_t times = int_of(*count);
        if (times <= 0 || list->list->empty()) return Value::make_list();
        if (static_cast<uint64_t>(times) > kMaxItems / list->list->size())
          throw Error("a list repeated " + std::to_string(times) +
                      " times is over the value size budget of " + std::to_string(kMaxItems) + " items");
        charge(list->list->size() * static_cast<size_t>(times));
        List out;
        for (int64_t k = 0; k < times; ++k) out.insert(out.end(), list->list->begin(), list->list->end());
        return Value::make_list(std::move(out));
      }
    }
    if (!is_number(l) || !is_number(r))
      fail(e.line,
           "unsupported operand types for " + op + ": '" + type_name(l) + "' and '" + type_name(r) + "'");
    const bool ints = l.type != Value::Type::Float && r.type != Value::Type::Float;
    const int64_t li = int_of(l), ri = int_of(r);
    const double lf = as_double(l), rf = as_double(r);
    int64_t res = 0;
    if (op == "+") {
      if (!ints) return Value::number(lf + rf);
      if (__builtin_add_overflow(li, ri, &res)) int_overflow("+");
      return Value::integer(res);
    }
    if (op == "-") {
      if (!ints) return Value::number(lf - rf);
      if (__builtin_sub_overflow(li, ri, &res)) int_overflow("-");
      return Value::integer(res);
    }
    if (op == "*") {
      if (!ints) return Value::number(lf * rf);
      if (__builtin_mul_overflow(li, ri, &res)) int_overflow("*");
      return Value::integer(res);
    }
    if (op == "**") {
      if (ints && ri >= 0) return Value::integer(int_pow(li, ri));
      if (lf == 0 && rf < 0) fail(e.line, "zero cannot be raised to a negative power (ZeroDivisionError)");
      return Value::number(std::pow(lf, rf));
    }
    if ((op == "/" || op == "//" || op == "%") && (ints ? ri == 0 : rf == 0))
      fail(e.line,
           std::string(ints && op != "/" ? "integer division or modulo by zero" : "division by zero") +
               " (ZeroDivisionError)");
    if (op == "/") return Value::number(lf / rf);
    if (op == "//") {
      if (!ints) return Value::number(std::floor(lf / rf));
      if (li == INT64_MIN && ri == -1) int_overflow("//");
      return Value::integer(py_floordiv(li, ri));
    }
    if (op == "%")
      return ints ? Value::integer(py_mod(li, ri)) : Value::number(lf - std::floor(lf / rf) * rf);
    fail(e.line, "unknown operator " + op);
  }

  void eval_args(const Expr& e, size_t skip, std::vector<Value>& args, Kwargs& kwargs) {
    for (size_t k = skip; k < e.args.size(); ++k) args.push_back(eval(*e.args[k]));
    for (const auto& [name, ex] : e.kwargs) kwargs.emplace_back(name, eval(*ex));
  }

  static const Value* arg(const std::vector<Value>& args, const Kwargs& kwargs, size_t pos,
                          const char* name) {
    if (pos < args.size()) return &args[pos];
    for (const auto& [k, v] : kwargs)
      if (k == name) return &v;
    return nullptr;
  }

  Value call(const Expr& e) {
    std::vector<Value> args;
    Kwargs kwargs;
    const Expr& callee = *e.args[0];
    if (callee.kind == Expr::Kind::Attr) {
      const Value obj = eval(*callee.args[0]);
      eval_args(e, 1, args, kwargs);
      if (obj.type == Value::Type::String || obj.type == Value::Type::List ||
          (obj.type == Value::Type::Dict && !obj.is_namespace && !obj.find(callee.name)))
        return method(obj, callee.name, args, kwargs, e.line);
      const Value f = get_attr(obj, callee.name, e.line);
      if (f.type != Value::Type::Function) fail(e.line, "'" + callee.name + "' is not callable");
      return (*f.fn)(args, kwargs);
    }
    const Value f = eval(callee);
    eval_args(e, 1, args, kwargs);
    if (f.type != Value::Type::Function)
      fail(e.line, "'" + (callee.kind == Expr::Kind::Name ? callee.name : std::string("value")) +
                       "' is not callable");
    return (*f.fn)(args, kwargs);
  }

  Value method(const Value& obj, const std::string& name, std::vector<Value>& args, Kwargs& kwargs,
               int line) {
    const Value* a0 = arg(args, kwargs, 0, "");
    charge(obj.s.size() / 64 + (obj.list ? obj.list->size() : 0) + (obj.dict ? obj.dict->size() : 0));
    if (obj.type == Value::Type::String) {
      const std::string& s = obj.s;
      if (name == "strip") return Value::string(strip_chars(s, true, true, a0));
      if (name == "lstrip") return Value::string(strip_chars(s, true, false, a0));
      if (name == "rstrip") return Value::string(strip_chars(s, false, true, a0));
      if (name == "lower") return Value::string(map_case(s, 0));
      if (name == "upper") return Value::string(map_case(s, 1));
      if (name == "title") return Value::string(map_case(s, 2));
      if (name == "capitalize") return Value::string(map_case(s, 3));
      if (name == "split") {
        const Value* sep = arg(args, kwargs, 0, "sep");
        const Value* maxsplit = arg(args, kwargs, 1, "maxsplit");
        return Value::make_list(
            split_string(s, sep, maxsplit && maxsplit->type == Value::Type::Int ? maxsplit->i : -1));
      }
      if (name == "startswith" || name == "endswith") {
        if (!a0) fail(line, name + "() takes one argument");
        std::vector<std::string> options;
        if (a0->type == Value::Type::String)
          options.push_back(a0->s);
        else if (a0->type == Value::Type::List)
          for (const auto& x : *a0->list) options.push_back(to_str(x));
        else
          fail(line, name + "() takes a string or a tuple");
        for (const auto& o : options) {
          if (o.size() > s.size()) continue;
          if (name == "startswith" ? s.compare(0, o.size(), o) == 0
                                   : s.compare(s.size() - o.size(), o.size(), o) == 0)
            return Value::boolean(true);
        }
        return Value::boolean(false);
      }
      if (name == "replace") {
        const Value* count = arg(args, kwargs, 2, "count");
        if (args.size() < 2 || args[0].type != Value::Type::String || args[1].type != Value::Type::String)
          fail(line, "replace() takes two strings");
        if (!args[0].s.empty() && args[1].s.size() > args[0].s.size())
          check_string_size(s.size() / args[0].s.size() * args[1].s.size() + s.size());
        return Value::string(
            replace_all(s, args[0].s, args[1].s, count && count->type == Value::Type::Int ? count->i : -1));
      }
      if (name == "find" || name == "count") {
        if (!a0 || a0->type != Value::Type::String) fail(line, name + "() takes a string");
        if (name == "count") {
          if (a0->s.empty()) return Value::integer(static_cast<int64_t>(char_offsets(s).size()));
          int64_t n = 0;
          for (size_t at = s.find(a0->s); at != std::string::npos; at = s.find(a0->s, at + a0->s.size())) ++n;
          return Value::integer(n);
        }
        const size_t at = s.find(a0->s);
        if (at == std::string::npos) return Value::integer(-1);
        const auto offs = char_offsets(s);
        return Value::integer(std::lower_bound(offs.begin(), offs.end(), at) - offs.begin());
      }
      if (name == "join") {
        if (!a0 || a0->type != Value::Type::List) fail(line, "join() takes a list");
        std::string out;
        for (size_t k = 0; k < a0->list->size(); ++k) {
          out += (k ? s : "") + to_str((*a0->list)[k]);
          check_string_size(out.size());
          charge(1 + s.size() / 64);
        }
        return Value::string(std::move(out));
      }
      if (name == "isspace" || name == "isdigit" || name == "isalpha") {
        if (s.empty()) return Value::boolean(false);
        for (size_t i = 0; i < s.size();) {
          size_t len = 0;
          const uint32_t cp = utf8::decode(s, i, len);
          const bool ok = name == "isspace"   ? is_space_char(cp)
                          : name == "isdigit" ? (cp >= '0' && cp <= '9')
                                              : unicode::is_cased_letter(cp);
          if (!ok) return Value::boolean(false);
          i += len;
        }
        return Value::boolean(true);
      }
    } else if (obj.type == Value::Type::Dict) {
      if (name == "items") {
        List l;
        for (const auto& [k, v] : *obj.dict) l.push_back(Value::make_list({Value::string(k), v}));
        return Value::make_list(std::move(l));
      }
      if (name == "keys" || name == "values") {
        List l;
        for (const auto& [k, v] : *obj.dict) l.push_back(name == "keys" ? Value::string(k) : v);
        return Value::make_list(std::move(l));
      }
      if (name == "get") {
        if (!a0) fail(line, "get() takes a key");
        if (const Value* v = obj.find(to_str(*a0))) return *v;
        const Value* d = arg(args, kwargs, 1, "default");
        return d ? *d : Value::none();
      }
    } else if (obj.type == Value::Type::List) {
      if (name == "index") {
        if (!a0) fail(line, "index() takes a value");
        for (size_t k = 0; k < obj.list->size(); ++k)
          if (equal((*obj.list)[k], *a0)) return Value::integer(static_cast<int64_t>(k));
        fail(line, "index(): the value is not in the list");
      }
      if (name == "count") {
        if (!a0) fail(line, "count() takes a value");
        return Value::integer(
            std::count_if(obj.list->begin(), obj.list->end(), [&](const Value& x) { return equal(x, *a0); }));
      }
    }
    fail(line,
         "'" + type_name(obj) + "' object has no method '" + name + "' (or Forja does not implement it)");
  }

  static int64_t length_of(const Value& v, int line) {
    switch (v.type) {
      case Value::Type::String:
        return static_cast<int64_t>(char_offsets(v.s).size() - 1);
      case Value::Type::List:
        return static_cast<int64_t>(v.list->size());
      case Value::Type::Dict:
        return static_cast<int64_t>(v.dict->size());
      case Value::Type::Undefined:
        return 0;
      default:
        fail(line, "object of type '" + type_name(v) + "' has no len()");
    }
  }

  static List as_list(const Value& v, int line) {
    if (v.type == Value::Type::List) return *v.list;
    if (v.type == Value::Type::Dict) {
      List l;
      for (const auto& [k, x] : *v.dict) l.push_back(Value::string(k));
      return l;
    }
    if (v.type == Value::Type::String) {
      List l;
      const auto at = char_offsets(v.s);
      for (size_t k = 0; k + 1 < at.size(); ++k)
        l.push_back(Value::string(v.s.substr(at[k], at[k + 1] - at[k])));
      return l;
    }
    if (v.type == Value::Type::Undefined) return {};
    fail(line, "'" + type_name(v) + "' object is not iterable");
  }

  Value filter(const Expr& e) {
    const Value v = eval(*e.args[0]);
    std::vector<Value> args;
    Kwargs kwargs;
    eval_args(e, 1, args, kwargs);
    const std::string& f = e.name;
    const int line = e.line;
    if (f == "trim") return Value::string(strip_chars(to_str(v), true, true, arg(args, kwargs, 0, "chars")));
    if (f == "length" || f == "count") return Value::integer(length_of(v, line));
    if (f == "tojson") {
      const Value* indent = arg(args, kwargs, 0, "indent");
      return Value::string(
          to_json(v, indent && indent->type == Value::Type::Int ? static_cast<int>(indent->i) : -1));
    }
    if (f == "string") return Value::string(to_str(v));
    if (f == "upper") return Value::string(map_case(to_str(v), 1));
    if (f == "lower") return Value::string(map_case(to_str(v), 0));
    if (f == "title") return Value::string(map_case(to_str(v), 2));
    if (f == "capitalize") return Value::string(map_case(to_str(v), 3));
    if (f == "safe" || f == "e" || f == "escape") return v;  // transformers renders without autoescape
    if (f == "default" || f == "d") {
      const Value* dflt = arg(args, kwargs, 0, "default_value");
      const Value* boolean = arg(args, kwargs, 1, "boolean");
      const bool use = boolean && truthy(*boolean) ? !truthy(v) : !v.defined();
      return use ? (dflt ? *dflt : Value::string("")) : v;
    }
    if (f == "join") {
      const Value* sep = arg(args, kwargs, 0, "d");
      const Value* attr = arg(args, kwargs, 1, "attribute");
      std::string out;
      const List items = as_list(v, line);
      const std::string sep_s = sep ? to_str(*sep) : std::string();
      for (size_t k = 0; k < items.size(); ++k) {
        if (k) out += sep_s;
        out += to_str(attr ? get_attr(items[k], to_str(*attr), line) : items[k]);
        check_string_size(out.size());
        charge(1 + sep_s.size() / 64);
      }
      return Value::string(std::move(out));
    }
    if (f == "first" || f == "last") {
      const List items = as_list(v, line);
      if (items.empty()) return Value();
      return f == "first" ? items.front() : items.back();
    }
    if (f == "list") return Value::make_list(as_list(v, line));
    if (f == "reverse") {
      if (v.type == Value::Type::String) {
        List l = as_list(v, line);
        std::string out;
        for (auto it = l.rbegin(); it != l.rend(); ++it) out += it->s;
        return Value::string(std::move(out));
      }
      List l = as_list(v, line);
      std::reverse(l.begin(), l.end());
      return Value::make_list(std::move(l));
    }
    if (f == "int") {
      if (v.type == Value::Type::Int) return v;
      if (v.type == Value::Type::Float) {
        // 2^63 is exact as a double; casting anything outside [-2^63, 2^63) or NaN would be undefined.
        if (!(v.f >= -9223372036854775808.0 && v.f < 9223372036854775808.0))
          fail(line, "cannot convert float " + python_float(v.f, false) + " to a 64-bit integer");
        return Value::integer(static_cast<int64_t>(v.f));
      }
      if (v.type == Value::Type::Bool) return Value::integer(v.b);
      if (v.type == Value::Type::String) {
        try {
          return Value::integer(std::stoll(strip_chars(v.s, true, true, nullptr)));
        } catch (const std::exception&) {
        }
      }
      return Value::integer(0);
    }
    if (f == "float") return is_number(v) ? Value::number(as_double(v)) : Value::number(0);
    if (f == "abs") {
      if (v.type == Value::Type::Int) {
        if (v.i == INT64_MIN) int_overflow("abs");
        return Value::integer(v.i < 0 ? -v.i : v.i);
      }
      return Value::number(std::fabs(as_double(v)));
    }
    if (f == "replace") {
      if (args.size() < 2) fail(line, "replace needs two arguments");
      const std::string from = to_str(args[0]), to = to_str(args[1]), subject = to_str(v);
      if (!from.empty() && to.size() > from.size())
        check_string_size(subject.size() / from.size() * to.size() + subject.size());
      return Value::string(replace_all(to_str(v), to_str(args[0]), to_str(args[1]),
                                       args.size() > 2 && args[2].type == Value::Type::Int ? args[2].i : -1));
    }
    if (f == "items") return method(v, "items", args, kwargs, line);
    if (f == "unique") {
      List out;
      for (const auto& x : as_list(v, line)) {
        charge(out.size());
        if (std::none_of(out.begin(), out.end(), [&](const Value& y) { return equal(x, y); }))
          out.push_back(x);
      }
      return Value::make_list(std::move(out));
    }
    if (f == "selectattr" || f == "rejectattr" || f == "select" || f == "reject") {
      const bool by_attr = f == "selectattr" || f == "rejectattr";
      const bool keep_true = f == "selectattr" || f == "select";
      List out;
      for (const auto& x : as_list(v, line)) {
        charge();
        const Value subject = by_attr ? (args.empty() ? Value() : get_attr(x, to_str(args[0]), line)) : x;
        const size_t test_at = by_attr ? 1 : 0;
        bool r;
        if (args.size() > test_at) {
          std::vector<Value> targs(args.begin() + static_cast<std::ptrdiff_t>(test_at) + 1, args.end());
          r = run_test(to_str(args[test_at]), subject, targs, line);
        } else {
          r = truthy(subject);
        }
        if (r == keep_true) out.push_back(x);
      }
      return Value::make_list(std::move(out));
    }
    if (f == "map") {
      const Value* attr = arg(args, kwargs, 99, "attribute");
      List out;
      for (const auto& x : as_list(v, line)) {
        charge();
        if (attr) {
          out.push_back(get_attr(x, to_str(*attr), line));
        } else {
          if (args.empty()) fail(line, "map needs a filter name or attribute=");
          Expr fake;
          fake.kind = Expr::Kind::Filter;
          fake.name = to_str(args[0]);
          fake.line = line;
          auto lit = std::make_shared<Expr>();
          lit->kind = Expr::Kind::Literal;
          lit->literal = x;
          fake.args.push_back(lit);
          for (size_t k = 1; k < args.size(); ++k) {
            auto a = std::make_shared<Expr>();
            a->kind = Expr::Kind::Literal;
            a->literal = args[k];
            fake.args.push_back(a);
          }
          out.push_back(filter(fake));
        }
      }
      return Value::make_list(std::move(out));
    }
    if (f == "indent") {
      const Value* width = arg(args, kwargs, 0, "width");
      const Value* first = arg(args, kwargs, 1, "first");
      const int64_t w = width && width->type == Value::Type::Int ? width->i : 4;
      check_string_size(w < 0 ? 0 : static_cast<uint64_t>(w));
      const std::string pad(w < 0 ? 0 : static_cast<size_t>(w), ' ');
      const std::string s = to_str(v);
      std::string out;
      bool at_line_start = first && truthy(*first);
      for (size_t k = 0; k < s.size(); ++k) {
        if (at_line_start && s[k] != '\n') {
          out += pad;
          check_string_size(out.size());
          charge(1 + pad.size() / 64);
        }
        at_line_start = false;
        out += s[k];
        if (s[k] == '\n') at_line_start = true;
      }
      return Value::string(std::move(out));
    }
    fail(line, "unknown filter '" + f + "'");
  }

  static bool run_test(const std::string& name, const Value& v, const std::vector<Value>& args, int line) {
    if (name == "defined") return v.defined();
    if (name == "undefined") return !v.defined();
    if (name == "none") return v.type == Value::Type::None;
    if (name == "string") return v.type == Value::Type::String;
    if (name == "number") return v.type == Value::Type::Int || v.type == Value::Type::Float;
    if (name == "integer") return v.type == Value::Type::Int;
    if (name == "float") return v.type == Value::Type::Float;
    if (name == "boolean") return v.type == Value::Type::Bool;
    if (name == "true") return v.type == Value::Type::Bool && v.b;
    if (name == "false") return v.type == Value::Type::Bool && !v.b;
    if (name == "mapping") return v.type == Value::Type::Dict;
    if (name == "sequence")
      return v.type == Value::Type::List || v.type == Value::Type::String || v.type == Value::Type::Dict;
    if (name == "iterable")
      return v.type == Value::Type::List || v.type == Value::Type::String || v.type == Value::Type::Dict;
    if (name == "callable") return v.type == Value::Type::Function;
    if (name == "lower") return v.type == Value::Type::String && map_case(v.s, 0) == v.s;
    if (name == "upper") return v.type == Value::Type::String && map_case(v.s, 1) == v.s;
    if (name == "even" || name == "odd") {
      if (v.type != Value::Type::Int) fail(line, "'" + name + "' needs an integer");
      return (py_mod(v.i, 2) == 0) == (name == "even");
    }
    if (name == "divisibleby") {
      if (v.type != Value::Type::Int || args.empty() || args[0].type != Value::Type::Int || args[0].i == 0)
        fail(line, "divisibleby needs integers");
      return py_mod(v.i, args[0].i) == 0;
    }
    if (args.empty()) fail(line, "test '" + name + "' needs an argument");
    if (name == "eq" || name == "==" || name == "equalto" || name == "sameas") return equal(v, args[0]);
    if (name == "ne" || name == "!=") return !equal(v, args[0]);
    if (name == "in") {
      const Value& c = args[0];
      if (c.type == Value::Type::String)
        return v.type == Value::Type::String && c.s.find(v.s) != std::string::npos;
      if (c.type == Value::Type::List)
        return std::any_of(c.list->begin(), c.list->end(), [&](const Value& x) { return equal(x, v); });
      if (c.type == Value::Type::Dict) return v.type == Value::Type::String && c.find(v.s);
      return false;
    }
    if (name == "gt" || name == "greaterthan") return compare(v, args[0]) > 0;
    if (name == "lt" || name == "lessthan") return compare(v, args[0]) < 0;
    if (name == "ge") return compare(v, args[0]) >= 0;
    if (name == "le") return compare(v, args[0]) <= 0;
    fail(line, "unknown test '" + name + "'");
  }

  bool test(const Expr& e) {
    const Value v = eval(*e.args[0]);
    std::vector<Value> args;
    Kwargs kwargs;
    eval_args(e, 1, args, kwargs);
    return run_test(e.name, v, args, e.line);
  }

  Template::Output& out_;
  std::vector<std::shared_ptr<Dict>> written_namespaces_;
  std::vector<Scope> scopes_;
  int line_ = 0;  // of the statement or expression being run, for the budget errors
};

}  // namespace

Template::Template(const std::string& source, const std::string& origin)
    : origin_(origin), body_(parse_template(source, origin)) {}

Template::Output Template::render(const Dict& variables) const {
  Output out;
  Renderer r(variables, out);
  try {
    r.run(body_);
  } catch (const RenderError& e) {
    throw Error(origin_ + ":" + std::to_string(e.line) + ": " + e.what,
                "the chat template failed while rendering this conversation");
  } catch (const BreakSignal&) {
    throw Error(origin_ + ": {% break %} outside a loop");
  } catch (const ContinueSignal&) {
    throw Error(origin_ + ": {% continue %} outside a loop");
  }
  return out;
}

}  // namespace forja::jinja
