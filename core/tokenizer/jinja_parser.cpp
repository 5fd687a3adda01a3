// Jinja lexer and parser: splits the source into text, {{ }} and {% %} with transformers' whitespace rules
// (trim_blocks, lstrip_blocks, `-` markers), then parses expressions by Jinja2's precedence.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>

#include "forja/error.h"
#include "jinja.h"

namespace forja::jinja {
namespace {

struct Tok {
  enum class T { Name, String, Int, Float, Op, End } t;
  std::string s;
  int64_t i = 0;
  double f = 0;
};

struct Chunk {
  enum class K { Text, Expr, Stmt } k;
  std::string text;
  int line;
};

[[noreturn]] void fail(const std::string& origin, int line, const std::string& what) {
  throw Error(origin + ":" + std::to_string(line) + ": " + what,
              "the chat template uses Jinja that Forja does not understand");
}

// The parser and the renderer recurse once per level, so deeper nesting would overflow the stack. Real chat
// templates nest a handful of blocks and expressions; Python's own recursion limit stops Jinja2 around here.
constexpr int kMaxExprDepth = 256;
constexpr int kMaxBlockDepth = 128;

// Counts one level of recursion for as long as it lives.
struct DepthGuard {
  DepthGuard(int& depth, int limit, const std::string& origin, int line, const char* what) : depth_(depth) {
    if (++depth_ > limit)
      fail(origin, line, std::string(what) + " nested deeper than " + std::to_string(limit) + " levels");
  }
  ~DepthGuard() { --depth_; }
  DepthGuard(const DepthGuard&) = delete;
  DepthGuard& operator=(const DepthGuard&) = delete;
  int& depth_;
};

// An integer literal; Python's are unbounded, Forja's are 64-bit.
int64_t parse_int_literal(const std::string& text, const std::string& origin, int line) {
  std::string digits;
  for (char c : text)
    if (c != '_') digits += c;
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (ec == std::errc::result_out_of_range)
    fail(origin, line, "integer literal " + text + " does not fit in 64 bits");
  if (ec != std::errc() || end != digits.data() + digits.size())
    fail(origin, line, "bad integer literal " + text);
  return v;
}

std::vector<Chunk> lex_chunks(const std::string& src, const std::string& origin) {
  std::vector<Chunk> out;
  size_t pos = 0;
  int line = 1;
  bool strip_next = false, trim_next = false;
  auto count_lines = [](const std::string& s) {
    int n = 0;
    for (char c : s) n += c == '\n';
    return n;
  };
  while (pos <= src.size()) {
    size_t open = src.find('{', pos);
    while (open != std::string::npos && open + 1 < src.size() && src[open + 1] != '{' &&
           src[open + 1] != '%' && src[open + 1] != '#')
      open = src.find('{', open + 1);
    if (open + 1 >= src.size()) open = std::string::npos;
    std::string text = src.substr(pos, open == std::string::npos ? std::string::npos : open - pos);
    if (strip_next) {
      size_t k = 0;
      while (k < text.size() && isspace(static_cast<unsigned char>(text[k]))) ++k;
      text.erase(0, k);
    } else if (trim_next && !text.empty() && text[0] == '\n') {
      text.erase(0, 1);
    }
    if (open == std::string::npos) {
      if (!text.empty()) out.push_back({Chunk::K::Text, text, line});
      break;
    }
    const char kind = src[open + 1];
    const bool minus_before = open + 2 < src.size() && src[open + 2] == '-';
    const bool plus_before = open + 2 < src.size() && src[open + 2] == '+';
    if (minus_before) {
      size_t e = text.size();
      while (e > 0 && isspace(static_cast<unsigned char>(text[e - 1]))) --e;
      text.erase(e);
    } else if ((kind == '%' || kind == '#') && !plus_before) {
      // lstrip_blocks: spaces and tabs between the start of a line and a block tag go away.
      size_t k = open;
      while (k > pos && (src[k - 1] == ' ' || src[k - 1] == '\t')) --k;
      const bool line_start = k == 0 || src[k - 1] == '\n';
      const size_t run = open - k;
      if (line_start && run <= text.size()) text.erase(text.size() - run);
    }
    if (!text.empty()) out.push_back({Chunk::K::Text, text, line});
    line += count_lines(src.substr(pos, open - pos));
    const std::string close = kind == '{' ? "}}" : kind == '%' ? "%}" : "#}";
    const size_t inner_start = open + 2 + ((minus_before || plus_before) ? 1 : 0);
    size_t close_at = src.find(close, inner_start);
    if (kind != '#') {
      // A string literal may contain the closing marker; skip over quoted text.
      char quote = 0;
      for (size_t k = inner_start; k + 1 < src.size(); ++k) {
        if (quote) {
          if (src[k] == '\\')
            ++k;
          else if (src[k] == quote)
            quote = 0;
        } else if (src[k] == '\'' || src[k] == '"') {
          quote = src[k];
        } else if (src.compare(k, 2, close) == 0) {
          close_at = k;
          break;
        }
      }
    }
    if (close_at == std::string::npos) fail(origin, line, "unclosed " + std::string(1, '{') + kind);
    const bool minus_after = close_at > inner_start && src[close_at - 1] == '-';
    std::string inner = src.substr(inner_start, close_at - inner_start - (minus_after ? 1 : 0));
    if (kind == '{') out.push_back({Chunk::K::Expr, inner, line});
    if (kind == '%') out.push_back({Chunk::K::Stmt, inner, line});
    line += count_lines(src.substr(open, close_at + 2 - open));
    strip_next = minus_after;
    trim_next = kind != '{';
    pos = close_at + 2;
  }
  return out;
}

std::vector<Tok> lex_expr(const std::string& s, const std::string& origin, int line) {
  std::vector<Tok> out;
  size_t i = 0;
  while (i < s.size()) {
    const char c = s[i];
    if (isspace(static_cast<unsigned char>(c))) {
      ++i;
      continue;
    }
    if (isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t j = i;
      while (j < s.size() && (isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_')) ++j;
      out.push_back({Tok::T::Name, s.substr(i, j - i)});
      i = j;
    } else if (isdigit(static_cast<unsigned char>(c))) {
      size_t j = i;
      bool is_float = false;
      while (j < s.size() && (isdigit(static_cast<unsigned char>(s[j])) || s[j] == '.' || s[j] == '_')) {
        if (s[j] == '.') {
          if (j + 1 >= s.size() || !isdigit(static_cast<unsigned char>(s[j + 1]))) break;
          is_float = true;
        }
        ++j;
      }
      std::string num = s.substr(i, j - i);
      Tok t{is_float ? Tok::T::Float : Tok::T::Int, num};
      if (is_float) {
        std::string digits;
        for (char ch : num)
          if (ch != '_') digits += ch;
        t.f = std::strtod(digits.c_str(), nullptr);  // too large gives inf, as Python's float literal does
      } else {
        t.i = parse_int_literal(num, origin, line);
      }
      out.push_back(t);
      i = j;
    } else if (c == '\'' || c == '"') {
      std::string v;
      size_t j = i + 1;
      for (; j < s.size() && s[j] != c; ++j) {
        if (s[j] == '\\' && j + 1 < s.size()) {
          const char e = s[++j];
          v += e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e;
        } else {
          v += s[j];
        }
      }
      if (j >= s.size()) fail(origin, line, "unterminated string");
      out.push_back({Tok::T::String, v});
      i = j + 1;
    } else {
      static const char* ops[] = {"//", "**", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "~", "(",
                                  ")",  "[",  "]",  "{",  "}",  ",",  ":", ".", "|", "=", "<", ">"};
      bool found = false;
      for (const char* op : ops) {
        const size_t n = std::char_traits<char>::length(op);
        if (s.compare(i, n, op) == 0) {
          out.push_back({Tok::T::Op, op});
          i += n;
          found = true;
          break;
        }
      }
      if (!found) fail(origin, line, std::string("unexpected character '") + c + "'");
    }
  }
  out.push_back({Tok::T::End, ""});
  return out;
}

class ExprParser {
 public:
  ExprParser(std::vector<Tok> toks, const std::string& origin, int line)
      : t_(std::move(toks)), origin_(origin), line_(line) {}

  bool at_end() const { return t_[p_].t == Tok::T::End; }
  bool is_op(const char* op) const { return t_[p_].t == Tok::T::Op && t_[p_].s == op; }
  bool is_name(const char* n) const { return t_[p_].t == Tok::T::Name && t_[p_].s == n; }
  void expect_op(const char* op) {
    if (!is_op(op)) fail(origin_, line_, std::string("expected '") + op + "'" + near());
    ++p_;
  }
  std::string expect_name() {
    if (t_[p_].t != Tok::T::Name) fail(origin_, line_, "expected a name" + near());
    return t_[p_++].s;
  }
  std::string near() const { return at_end() ? " at the end of the tag" : " near '" + t_[p_].s + "'"; }
  void expect_end() {
    if (!at_end()) fail(origin_, line_, "unexpected '" + t_[p_].s + "'");
  }

  ExprPtr expression() {
    DepthGuard guard(depth_, kMaxExprDepth, origin_, line_, "expression");
    ExprPtr e = or_expr();
    if (is_name("if")) {
      ++p_;
      auto c = make(Expr::Kind::Cond);
      ExprPtr cond = or_expr();
      ExprPtr other;
      if (is_name("else")) {
        ++p_;
        other = expression();
      }
      c->args = {cond, e, other};
      return sized(c);
    }
    return e;
  }

  ExprPtr or_expr() {
    ExprPtr l = and_expr();
    while (is_name("or")) {
      ++p_;
      l = bin("or", l, and_expr());
    }
    return l;
  }
  ExprPtr and_expr() {
    ExprPtr l = not_expr();
    while (is_name("and")) {
      ++p_;
      l = bin("and", l, not_expr());
    }
    return l;
  }
  ExprPtr not_expr() {
    DepthGuard guard(depth_, kMaxExprDepth, origin_, line_, "expression");
    if (is_name("not")) {
      ++p_;
      auto u = make(Expr::Kind::Unary);
      u->name = "not";
      u->args = {not_expr()};
      return sized(u);
    }
    return compare();
  }
  ExprPtr compare() {
    ExprPtr l = math1();
    for (;;) {
      if (is_op("==") || is_op("!=") || is_op("<") || is_op(">") || is_op("<=") || is_op(">=")) {
        std::string op = t_[p_++].s;
        l = bin(op, l, math1());
      } else if (is_name("in")) {
        ++p_;
        l = bin("in", l, math1());
      } else if (is_name("not") && t_[p_ + 1].t == Tok::T::Name && t_[p_ + 1].s == "in") {
        p_ += 2;
        l = bin("not in", l, math1());
      } else {
        return l;
      }
    }
  }
  ExprPtr math1() {
    ExprPtr l = concat();
    while (is_op("+") || is_op("-")) {
      std::string op = t_[p_++].s;
      l = bin(op, l, concat());
    }
    return l;
  }
  ExprPtr concat() {
    ExprPtr l = math2();
    while (is_op("~")) {
      ++p_;
      l = bin("~", l, math2());
    }
    return l;
  }
  ExprPtr math2() {
    ExprPtr l = pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      std::string op = t_[p_++].s;
      l = bin(op, l, pow());
    }
    return l;
  }
  // Jinja2 binds ** tighter than * and looser than unary minus, left to right: -2 ** 2 is 4.
  ExprPtr pow() {
    ExprPtr l = unary();
    while (is_op("**")) {
      ++p_;
      l = bin("**", l, unary());
    }
    return l;
  }
  ExprPtr unary() {
    DepthGuard guard(depth_, kMaxExprDepth, origin_, line_, "expression");
    if (is_op("-") || is_op("+")) {
      auto u = make(Expr::Kind::Unary);
      u->name = t_[p_++].s;
      u->args = {unary()};
      return sized(u);
    }
    return filters(postfix(primary()));
  }
  ExprPtr filters(ExprPtr e) {
    for (;;) {
      if (is_op("|")) {
        ++p_;
        auto f = make(Expr::Kind::Filter);
        f->name = expect_name();
        f->args = {e};
        if (is_op("(")) call_args(*f);
        e = postfix(sized(f));
      } else if (is_name("is")) {
        ++p_;
        auto t = make(Expr::Kind::Test);
        if (is_name("not")) {
          ++p_;
          t->negated = true;
        }
        t->name = t_[p_].t == Tok::T::Op && t_[p_].s == "==" ? (++p_, "==") : expect_name();
        t->args = {e};
        if (is_op("(")) {
          call_args(*t);
        } else if (!at_end() &&
                   (t_[p_].t == Tok::T::String || t_[p_].t == Tok::T::Int || t_[p_].t == Tok::T::Float ||
                    (t_[p_].t == Tok::T::Name && !is_name("and") && !is_name("or") && !is_name("else") &&
                     !is_name("if")))) {
          t->args.push_back(primary());
        }
        e = sized(t);
      } else {
        return e;
      }
    }
  }
  void call_args(Expr& call) {
    expect_op("(");
    while (!is_op(")")) {
      if (t_[p_].t == Tok::T::Name && t_[p_ + 1].t == Tok::T::Op && t_[p_ + 1].s == "=") {
        std::string key = t_[p_].s;
        p_ += 2;
        call.kwargs.emplace_back(key, expression());
      } else {
        call.args.push_back(expression());
      }
      if (!is_op(")")) expect_op(",");
    }
    ++p_;
  }
  ExprPtr postfix(ExprPtr e) {
    for (;;) {
      if (is_op(".")) {
        ++p_;
        auto a = make(Expr::Kind::Attr);
        a->name = t_[p_].t == Tok::T::Int ? std::to_string(t_[p_++].i) : expect_name();
        a->args = {e};
        e = sized(a);
      } else if (is_op("[")) {
        ++p_;
        ExprPtr first, second, third;
        if (!is_op(":")) first = expression();
        if (is_op(":")) {
          ++p_;
          if (!is_op("]") && !is_op(":")) second = expression();
          if (is_op(":")) {
            ++p_;
            if (!is_op("]")) third = expression();
          }
          auto s = make(Expr::Kind::Slice);
          s->args = {e, first, second, third};
          e = sized(s);
        } else {
          auto ix = make(Expr::Kind::Index);
          ix->args = {e, first};
          e = sized(ix);
        }
        expect_op("]");
      } else if (is_op("(")) {
        auto c = make(Expr::Kind::Call);
        c->args = {e};
        call_args(*c);
        e = sized(c);
      } else {
        return e;
      }
    }
  }
  ExprPtr primary() {
    const Tok& t = t_[p_];
    auto lit = [&](Value v) {
      auto e = make(Expr::Kind::Literal);
      e->literal = std::move(v);
      ++p_;
      return e;
    };
    switch (t.t) {
      case Tok::T::String: {
        std::string s = t.s;
        ++p_;
        while (t_[p_].t == Tok::T::String) s += t_[p_++].s;  // adjacent literals concatenate
        auto e = make(Expr::Kind::Literal);
        e->literal = Value::string(s);
        return e;
      }
      case Tok::T::Int:
        return lit(Value::integer(t.i));
      case Tok::T::Float:
        return lit(Value::number(t.f));
      case Tok::T::Name:
        if (t.s == "true" || t.s == "True") return lit(Value::boolean(true));
        if (t.s == "false" || t.s == "False") return lit(Value::boolean(false));
        if (t.s == "none" || t.s == "None") return lit(Value::none());
        {
          auto e = make(Expr::Kind::Name);
          e->name = t.s;
          ++p_;
          return e;
        }
      case Tok::T::Op:
        if (t.s == "(") {
          ++p_;
          ExprPtr e = expression();
          if (is_op(",")) {  // a tuple: treated as a list
            auto l = make(Expr::Kind::List);
            l->args.push_back(e);
            while (is_op(",")) {
              ++p_;
              if (is_op(")")) break;
              l->args.push_back(expression());
            }
            e = sized(l);
          }
          expect_op(")");
          return e;
        }
        if (t.s == "[") {
          ++p_;
          auto l = make(Expr::Kind::List);
          while (!is_op("]")) {
            l->args.push_back(expression());
            if (!is_op("]")) expect_op(",");
          }
          ++p_;
          return sized(l);
        }
        if (t.s == "{") {
          ++p_;
          auto d = make(Expr::Kind::Dict);
          while (!is_op("}")) {
            d->args.push_back(expression());
            expect_op(":");
            d->args.push_back(expression());
            if (!is_op("}")) expect_op(",");
          }
          ++p_;
          return sized(d);
        }
        break;
      case Tok::T::End:
        break;
    }
    fail(origin_, line_, "expected an expression" + near());
  }

  size_t p_ = 0;

 private:
  // Sets the node's depth from its operands and refuses one that is too deep. Left-deep chains such as
  // a + b + c or x.a.b.c are built by loops, not by recursion, so the parser's guard alone would miss them,
  // and the renderer (and the tree's destructor) recurse once per level.
  ExprPtr sized(ExprPtr e) {
    int d = 0;
    for (const auto& a : e->args)
      if (a) d = std::max(d, a->depth);
    for (const auto& [k, a] : e->kwargs) d = std::max(d, a->depth);
    e->depth = d + 1;
    if (e->depth > kMaxExprDepth)
      fail(origin_, line_, "expression nested deeper than " + std::to_string(kMaxExprDepth) + " levels");
    return e;
  }
  ExprPtr make(Expr::Kind k) {
    auto e = std::make_shared<Expr>();
    e->kind = k;
    e->line = line_;
    return e;
  }
  ExprPtr bin(const std::string& op, ExprPtr l, ExprPtr r) {
    auto b = make(Expr::Kind::Binary);
    b->name = op;
    b->args = {std::move(l), std::move(r)};
    return sized(b);
  }
  std::vector<Tok> t_;
  const std::string& origin_;
  int line_;
  int depth_ = 0;
};

class Parser {
 public:
  Parser(std::vector<Chunk> chunks, const std::string& origin) : c_(std::move(chunks)), origin_(origin) {}

  // Parses nodes until one of the end keywords; returns the keyword met (empty at the end of the source).
  std::string block(std::vector<NodePtr>& out, std::initializer_list<const char*> ends,
                    ExprParser** stop_parser) {
    DepthGuard guard(depth_, kMaxBlockDepth, origin_, i_ < c_.size() ? c_[i_].line : 0, "blocks");
    while (i_ < c_.size()) {
      const Chunk& ch = c_[i_++];
      if (ch.k == Chunk::K::Text) {
        auto n = node(Node::Kind::Text, ch.line);
        n->text = ch.text;
        out.push_back(n);
        continue;
      }
      auto ep = std::make_unique<ExprParser>(lex_expr(ch.text, origin_, ch.line), origin_, ch.line);
      if (ch.k == Chunk::K::Expr) {
        auto n = node(Node::Kind::Output, ch.line);
        n->expr = ep->expression();
        ep->expect_end();
        out.push_back(n);
        continue;
      }
      const std::string kw = ep->expect_name();
      for (const char* e : ends)
        if (kw == e) {
          held_ = std::move(ep);
          if (stop_parser) *stop_parser = held_.get();
          return kw;
        }
      if (kw == "if") {
        auto n = node(Node::Kind::If, ch.line);
        ExprPtr cond = ep->expression();
        ep->expect_end();
        for (;;) {
          std::vector<NodePtr> body;
          ExprParser* sp = nullptr;
          const std::string end = block(body, {"elif", "else", "endif"}, &sp);
          n->branches.emplace_back(cond, std::move(body));
          if (end == "endif") break;
          if (end == "else") {
            cond = nullptr;
          } else if (end == "elif") {
            cond = sp->expression();
            sp->expect_end();
          } else {
            fail(origin_, ch.line, "{% if %} without {% endif %}");
          }
          if (!cond && end == "else") {
            std::vector<NodePtr> else_body;
            if (block(else_body, {"endif"}, nullptr) != "endif")
              fail(origin_, ch.line, "{% if %} without {% endif %}");
            n->branches.emplace_back(nullptr, std::move(else_body));
            break;
          }
        }
        out.push_back(n);
      } else if (kw == "for") {
        auto n = node(Node::Kind::For, ch.line);
        n->targets.push_back(ep->expect_name());
        while (ep->is_op(",")) {
          ++ep->p_;
          n->targets.push_back(ep->expect_name());
        }
        if (ep->expect_name() != "in") fail(origin_, ch.line, "expected 'in' in {% for %}");
        n->expr = ep->or_expr();
        if (ep->is_name("if")) {
          ++ep->p_;
          n->filter = ep->expression();
        }
        if (ep->is_name("recursive")) fail(origin_, ch.line, "recursive loops are not supported");
        ep->expect_end();
        const std::string end = block(n->body, {"else", "endfor"}, nullptr);
        if (end == "else") {
          if (block(n->else_body, {"endfor"}, nullptr) != "endfor")
            fail(origin_, ch.line, "{% for %} without {% endfor %}");
        } else if (end != "endfor") {
          fail(origin_, ch.line, "{% for %} without {% endfor %}");
        }
        out.push_back(n);
      } else if (kw == "set") {
        std::string name = ep->expect_name();
        std::string attr;
        if (ep->is_op(".")) {
          ++ep->p_;
          attr = ep->expect_name();
        }
        if (!ep->is_op("=") && attr.empty()) {
          ep->expect_end();
          auto n = node(Node::Kind::SetBlock, ch.line);
          n->targets = {name};
          if (block(n->body, {"endset"}, nullptr) != "endset")
            fail(origin_, ch.line, "{% set %} without {% endset %}");
          out.push_back(n);
          continue;
        }
        ep->expect_op("=");
        auto n = node(Node::Kind::Set, ch.line);
        n->targets = {name};
        n->set_attr = attr;
        n->expr = ep->expression();
        ep->expect_end();
        out.push_back(n);
      } else if (kw == "generation") {
        auto n = node(Node::Kind::Generation, ch.line);
        if (block(n->body, {"endgeneration"}, nullptr) != "endgeneration")
          fail(origin_, ch.line, "{% generation %} without {% endgeneration %}");
        out.push_back(n);
      } else if (kw == "break" || kw == "continue") {
        out.push_back(node(kw == "break" ? Node::Kind::Break : Node::Kind::Continue, ch.line));
      } else {
        fail(origin_, ch.line, "unknown or unexpected tag {% " + kw + " %}");
      }
    }
    return {};
  }

 private:
  NodePtr node(Node::Kind k, int line) {
    auto n = std::make_shared<Node>();
    n->kind = k;
    n->line = line;
    return n;
  }
  std::vector<Chunk> c_;
  size_t i_ = 0;
  const std::string& origin_;
  std::unique_ptr<ExprParser> held_;
  int depth_ = 0;
};

}  // namespace

std::vector<NodePtr> parse_template(const std::string& source, const std::string& origin) {
  // Jinja's default keep_trailing_newline=False: one newline at the very end of the template is dropped.
  std::string src = source;
  if (!src.empty() && src.back() == '\n') src.pop_back();
  Parser p(lex_chunks(src, origin), origin);
  std::vector<NodePtr> body;
  const std::string end =
      p.block(body, {"endif", "endfor", "elif", "else", "endset", "endgeneration"}, nullptr);
  if (!end.empty()) fail(origin, 0, "{% " + end + " %} without a matching opening tag");
  return body;
}

}  // namespace forja::jinja
