// A Jinja2 subset for chat templates: values, the parsed template tree, and the renderer. Whitespace rules
// follow transformers' environment (trim_blocks and lstrip_blocks on, `-` markers honoured).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace forja::jinja {

struct Value;
using List = std::vector<Value>;
using Dict = std::vector<std::pair<std::string, Value>>;  // keeps insertion order, like a Python dict
using Kwargs = std::vector<std::pair<std::string, Value>>;
using Function = std::function<Value(std::vector<Value>&, Kwargs&)>;

struct Value {
  enum class Type { Undefined, None, Bool, Int, Float, String, List, Dict, Function };
  Type type = Type::Undefined;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::string s;
  std::shared_ptr<List> list;
  std::shared_ptr<Dict> dict;
  std::shared_ptr<Function> fn;
  bool is_namespace = false;

  static Value none() {
    Value v;
    v.type = Type::None;
    return v;
  }
  static Value boolean(bool x) {
    Value v;
    v.type = Type::Bool;
    v.b = x;
    return v;
  }
  static Value integer(int64_t x) {
    Value v;
    v.type = Type::Int;
    v.i = x;
    return v;
  }
  static Value number(double x) {
    Value v;
    v.type = Type::Float;
    v.f = x;
    return v;
  }
  static Value string(std::string x) {
    Value v;
    v.type = Type::String;
    v.s = std::move(x);
    return v;
  }
  static Value make_list(List x = {}) {
    Value v;
    v.type = Type::List;
    v.list = std::make_shared<List>(std::move(x));
    return v;
  }
  static Value make_dict(Dict x = {}) {
    Value v;
    v.type = Type::Dict;
    v.dict = std::make_shared<Dict>(std::move(x));
    return v;
  }
  static Value function(Function f) {
    Value v;
    v.type = Type::Function;
    v.fn = std::make_shared<Function>(std::move(f));
    return v;
  }

  Value() = default;
  Value(const Value&) = default;
  Value(Value&&) noexcept = default;
  Value& operator=(const Value&) = default;
  Value& operator=(Value&&) noexcept = default;
  // Frees nested lists and dicts with a loop instead of recursion: a template can build a chain of
  // containers far deeper than the stack (through a namespace that it keeps extending).
  ~Value();

  bool defined() const { return type != Type::Undefined; }
  const Value* find(const std::string& key) const;
  void set(const std::string& key, Value v);
};

// Parses JSON text into a Value (for tool lists and extra variables handed to a template).
Value from_json_text(const std::string& text);

struct Node;
using NodePtr = std::shared_ptr<Node>;

class Template {
 public:
  // origin names the template in error messages (a file path or "built-in chatml").
  Template(const std::string& source, const std::string& origin);

  struct Output {
    std::string text;
    std::vector<std::pair<size_t, size_t>> generation_spans;  // {% generation %} blocks, byte ranges of text
  };
  Output render(const Dict& variables) const;
  const std::string& origin() const { return origin_; }

 private:
  std::string origin_;
  std::vector<NodePtr> body_;
};

// Thrown by raise_exception(); message() is the template's own text.
struct TemplateException {
  std::string message;
};

// Parser entry (jinja_parser.cpp).
std::vector<NodePtr> parse_template(const std::string& source, const std::string& origin);

// ---- the tree ----
struct Expr;
using ExprPtr = std::shared_ptr<Expr>;

struct Expr {
  enum class Kind { Literal, Name, List, Dict, Attr, Index, Slice, Call, Filter, Test, Unary, Binary, Cond };
  Kind kind;
  Value literal;
  std::string name;           // Name, Attr, Filter, Test, operator for Unary/Binary
  std::vector<ExprPtr> args;  // operands / call args / list items / dict key,value pairs
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  bool negated = false;  // `is not`
  int line = 0;
  int depth = 1;  // of the subtree, counted by the parser
};

struct Node {
  enum class Kind { Text, Output, If, For, Set, SetBlock, Generation, Break, Continue };
  Kind kind;
  int line = 0;
  std::string text;
  ExprPtr expr;                                                    // Output value, Set value, For iterable
  std::vector<std::pair<ExprPtr, std::vector<NodePtr>>> branches;  // If: (condition or null for else, body)
  std::vector<std::string> targets;  // For loop variables; Set: name or {namespace, attribute}
  std::string set_attr;
  ExprPtr filter;  // For ... if filter
  std::vector<NodePtr> body, else_body;
};

}  // namespace forja::jinja
