#include "dsl/parser.h"

#include "ir/sizes.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "ir/limits.h"

namespace kiln {

SourceLoc SourceText::loc(size_t offset) const {
  SourceLoc l;
  l.file = file;
  if (pos.empty()) return l;
  if (offset >= pos.size()) offset = pos.size() - 1;
  l.line = pos[offset].first;
  l.col = pos[offset].second;
  return l;
}

std::string expr_str(const Expr& e) {
  switch (e.kind) {
    case Expr::Kind::number:
    case Expr::Kind::name:
      return e.text;
    case Expr::Kind::boolean:
      return e.number ? "true" : "false";
    case Expr::Kind::string:
      return "\"" + e.text + "\"";
    case Expr::Kind::ellipsis:
      return "...";
    case Expr::Kind::unary:
      return e.text + expr_str(*e.items[0]);
    case Expr::Kind::binary:
      return "(" + expr_str(*e.items[0]) + " " + e.text + " " + expr_str(*e.items[1]) + ")";
    case Expr::Kind::call: {
      std::string s = e.text + "(";
      for (size_t i = 0; i < e.args.size(); ++i)
        s += (i ? ", " : "") + (e.args[i].name.empty() ? "" : e.args[i].name + "=") +
             expr_str(*e.args[i].value);
      return s + ")";
    }
    case Expr::Kind::subscript:
    case Expr::Kind::list: {
      std::string s = e.kind == Expr::Kind::list ? "[" : expr_str(*e.items[0]) + "[";
      for (size_t i = e.kind == Expr::Kind::list ? 0 : 1; i < e.items.size(); ++i)
        s += (s.back() == '[' ? "" : ", ") + expr_str(*e.items[i]);
      return s + "]";
    }
  }
  return "?";
}

namespace {

enum class Tok { end, newline, number, name, string, punct };

struct Token {
  Tok kind = Tok::end;
  std::string text;
  size_t offset = 0;
};

/** Splits text into tokens; newlines inside brackets are dropped. */
std::vector<Token> lex(const SourceText& src) {
  static const char* kPuncts[] = {"...", "**", "//", "<<", ">>", "<=", ">=", "==", "!=", "(",
                                  ")",   "[",  "]",  ",",  "=",  "+",  "-",  "*",  "/",  "%",
                                  "<",   ">",  "&",  "|",  "^",  "~",  "!",  ";"};
  const std::string& s = src.text;
  std::vector<Token> out;
  int depth = 0;
  size_t i = 0;
  while (i < s.size()) {
    char c = s[i];
    if (c == '#') {
      while (i < s.size() && s[i] != '\n')
        ++i;
    } else if (c == '\n' || c == ';') {
      if (depth == 0) out.push_back({Tok::newline, std::string(1, c), i});
      ++i;
    } else if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (std::isdigit(static_cast<unsigned char>(c)) ||
               (c == '.' && i + 1 < s.size() &&
                std::isdigit(static_cast<unsigned char>(s[i + 1])))) {
      size_t b = i;
      while (i < s.size() &&
             (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '.' || s[i] == '_' ||
              ((s[i] == '+' || s[i] == '-') && (s[i - 1] == 'e' || s[i - 1] == 'E'))))
        ++i;
      out.push_back({Tok::number, s.substr(b, i - b), b});
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t b = i;
      while (i < s.size() && (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '_'))
        ++i;
      out.push_back({Tok::name, s.substr(b, i - b), b});
    } else if (c == '"' || c == '\'') {
      size_t b = i++;
      while (i < s.size() && s[i] != c && s[i] != '\n')
        ++i;
      if (i >= s.size() || s[i] != c) throw SpecError(src.loc(b), "unterminated string literal");
      out.push_back({Tok::string, s.substr(b + 1, i - b - 1), b});
      ++i;
    } else {
      bool matched = false;
      for (const char* p : kPuncts) {
        size_t n = std::char_traits<char>::length(p);
        if (s.compare(i, n, p) == 0) {
          if (*p == '(' || *p == '[') ++depth;
          if ((*p == ')' || *p == ']') && depth > 0) --depth;
          out.push_back({Tok::punct, p, i});
          i += n;
          matched = true;
          break;
        }
      }
      if (!matched)
        throw SpecError(src.loc(i), std::string("unexpected character '") + c +
                                        "'; expected a name, a number or an operator");
    }
  }
  out.push_back({Tok::end, "", s.size()});
  return out;
}

class Parser {
 public:
  explicit Parser(const SourceText& src) : src_(src), toks_(lex(src)) {}

  std::vector<BodyStatement> body() {
    std::vector<BodyStatement> out;
    skip_newlines();
    while (peek().kind != Tok::end) {
      out.push_back(statement());
      if (peek().kind != Tok::end && peek().kind != Tok::newline)
        fail(peek(), "expected the end of the statement");
      skip_newlines();
    }
    return out;
  }

  ExprPtr whole_expression() {
    skip_newlines();
    ExprPtr e = expression();
    skip_newlines();
    if (peek().kind != Tok::end) fail(peek(), "expected the end of the expression");
    return e;
  }

  TypeSpec type() {
    TypeSpec t;
    t.text = src_.text;
    t.loc = src_.loc(peek().offset);
    if (peek().kind == Tok::name && peek().text == "const") {
      t.is_const = true;
      next();
    }
    if (peek().kind != Tok::name)
      fail(peek(), "expected a dtype such as f32 or a type variable such as T");
    t.dtype_loc = loc(peek());
    t.dtype = next().text;
    if (accept("[")) {
      t.has_shape = true;
      if (!check("]")) {
        do {
          if (check("...")) {
            if (!t.dims.empty() || t.batch) fail(peek(), "'...' may only be the first dimension");
            next();
            t.batch = true;
          } else {
            if (t.dims.size() == static_cast<size_t>(kMaxRank))
              throw SpecError(loc(peek()), "a tensor type may have at most " +
                                               std::to_string(kMaxRank) + " dimensions");
            t.dims.push_back(expression());
          }
        } while (accept(","));
      }
      expect("]", "to close the shape");
    }
    if (peek().kind != Tok::end) fail(peek(), "expected the end of the type");
    return t;
  }

 private:
  const Token& peek(size_t ahead = 0) const {
    return toks_[std::min(pos_ + ahead, toks_.size() - 1)];
  }
  const Token& next() { return toks_[pos_ < toks_.size() - 1 ? pos_++ : pos_]; }
  bool check(const char* p) const { return peek().kind == Tok::punct && peek().text == p; }
  bool accept(const char* p) {
    if (!check(p)) return false;
    next();
    return true;
  }
  SourceLoc loc(const Token& t) const { return src_.loc(t.offset); }
  [[noreturn]] void fail(const Token& t, const std::string& what) const {
    std::string found = t.kind == Tok::end       ? "the end of the text"
                        : t.kind == Tok::newline ? "the end of the line"
                                                 : "'" + t.text + "'";
    throw SpecError(loc(t), what + ", found " + found);
  }
  void expect(const char* p, const std::string& why) {
    if (!accept(p)) fail(peek(), std::string("expected '") + p + "' " + why);
  }
  /** Expects `p` closing the bracket `open`; the message says where `open` is, since at the
   *  end of the text the bracket that is never closed may be far away. */
  void close(const Token& open, const char* p, const std::string& what) {
    SourceLoc at = loc(open);
    expect(p, "to close " + what + " opened at " + std::to_string(at.line) + ":" +
                  std::to_string(at.col));
  }
  void skip_newlines() {
    while (peek().kind == Tok::newline)
      next();
  }

  BodyStatement statement() {
    BodyStatement st;
    st.loc = loc(peek());
    do {
      if (peek().kind != Tok::name) fail(peek(), "expected a name to assign to");
      Target t;
      t.loc = loc(peek());
      t.name = next().text;
      if (accept("[")) {
        t.indexed = true;
        if (!accept("]")) {  // `t[] = ...`: a rank-0 result, every index reduced
          do {
            if (check("...") && t.indices.empty()) {  // the batch dimensions, first
              t.indices.push_back({"...", loc(peek())});
              t.bounds.push_back(nullptr);
              next();
              continue;
            }
            if (peek().kind != Tok::name)
              fail(peek(), "expected an index name on the left of '=' (index notation)");
            t.indices.push_back({peek().text, loc(peek())});
            next();
            // `p < P`: the index ranges over [0, P), for a result no output declares
            t.bounds.push_back(accept("<") ? binary_level(4) : nullptr);
          } while (accept(","));
          expect("]", "to close the indices");
        }
      }
      st.targets.push_back(std::move(t));
    } while (accept(","));
    expect("=", "after the assigned name");
    st.value = expression();
    return st;
  }

  ExprPtr make_binary(const Token& op, ExprPtr a, ExprPtr b) {
    auto e = std::make_shared<Expr>();
    e->kind = Expr::Kind::binary;
    e->loc = loc(op);
    e->text = op.text;
    e->items = {std::move(a), std::move(b)};
    return e;
  }

  /** Binary operators by precedence level, lowest first. */
  ExprPtr binary_level(int level) {
    static const std::vector<std::vector<std::string>> kLevels = {
        {"|"},
        {"^"},
        {"&"},
        {"<", "<=", ">", ">=", "==", "!="},
        {"<<", ">>"},
        {"+", "-"},
        {"*", "/", "//", "%"}};
    if (level == static_cast<int>(kLevels.size())) return unary();
    ExprPtr lhs = binary_level(level + 1);
    int chain = 0;
    for (;;) {
      const Token& t = peek();
      bool is_op = false;
      if (t.kind == Tok::punct)
        for (const std::string& op : kLevels[level])
          is_op |= t.text == op;
      if (!is_op) return lhs;
      if (++chain > kMaxChain)
        fail(t, "expected at most " + std::to_string(kMaxChain) + " operators in a row");
      Token op = next();
      lhs = make_binary(op, lhs, binary_level(level + 1));
    }
  }

  ExprPtr expression() {
    Nested guard(*this);
    return binary_level(0);
  }

  ExprPtr unary() {
    Nested guard(*this);
    if (check("-") || check("+") || check("~") || check("!")) {
      Token op = next();
      ExprPtr operand = unary();
      if (op.text == "+") return operand;
      auto e = std::make_shared<Expr>();
      e->kind = Expr::Kind::unary;
      e->loc = loc(op);
      e->text = op.text;
      e->items = {operand};
      return e;
    }
    ExprPtr base = postfix();
    if (check("**")) {
      Token op = next();
      return make_binary(op, base, unary());
    }
    return base;
  }

  ExprPtr postfix() {
    ExprPtr e = primary();
    while (check("[")) {
      Token open = next();
      auto s = std::make_shared<Expr>();
      s->kind = Expr::Kind::subscript;
      s->loc = loc(open);
      s->items.push_back(e);
      if (!check("]")) do
          s->items.push_back(expression());
        while (accept(","));
      close(open, "]", "the subscript");
      e = s;
    }
    return e;
  }

  ExprPtr number(const Token& t) {
    auto e = std::make_shared<Expr>();
    e->kind = Expr::Kind::number;
    e->loc = loc(t);
    e->text = t.text;
    std::string digits;
    for (char c : t.text)
      if (c != '_') digits += c;
    char* end = nullptr;
    bool hex = digits.size() > 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X');
    bool integral = hex || digits.find_first_of(".eE") == std::string::npos;
    if (integral) {
      errno = 0;
      e->integer = std::strtoll(digits.c_str(), &end, hex ? 16 : 10);
      e->number = static_cast<double>(e->integer);
      if (errno == ERANGE) {  // past int64: a u64 value, or out of range
        errno = 0;
        uint64_t u = std::strtoull(digits.c_str(), &end, hex ? 16 : 10);
        if (errno)
          throw SpecError(loc(t),
                          "integer literal '" + t.text + "' is out of range (past 2^64 - 1)");
        e->integer = static_cast<int64_t>(u);
        e->number = static_cast<double>(u);
        e->wide = true;
      }
      e->is_integer = true;
    } else {
      e->number = std::strtod(digits.c_str(), &end);
    }
    if (end == nullptr || *end != '\0')
      throw SpecError(loc(t), "malformed number '" + t.text + "'");
    return e;
  }

  ExprPtr primary() {
    const Token& t = peek();
    if (t.kind == Tok::number) return number(next());
    if (t.kind == Tok::string) {
      auto e = std::make_shared<Expr>();
      e->kind = Expr::Kind::string;
      e->loc = loc(t);
      e->text = next().text;
      return e;
    }
    if (t.kind == Tok::name) {
      Token name = next();
      auto e = std::make_shared<Expr>();
      e->loc = loc(name);
      e->text = name.text;
      if (name.text == "true" || name.text == "false") {
        e->kind = Expr::Kind::boolean;
        e->number = name.text == "true";
        return e;
      }
      if (!check("(")) {
        e->kind = Expr::Kind::name;
        return e;
      }
      Token open = next();
      e->kind = Expr::Kind::call;
      if (!check(")")) do {
          Arg a;
          a.loc = loc(peek());
          if (peek().kind == Tok::name && peek(1).kind == Tok::punct && peek(1).text == "=") {
            a.name = next().text;
            next();
          } else if (!e->args.empty() && !e->args.back().name.empty()) {
            fail(peek(), "expected a keyword argument (name=value) after keyword arguments");
          }
          a.value = expression();
          e->args.push_back(std::move(a));
        } while (accept(","));
      close(open, ")", "the argument list of '" + name.text + "'");
      return e;
    }
    if (check("(")) {
      Token open = next();
      ExprPtr e = expression();
      close(open, ")", "the parenthesis");
      return e;
    }
    if (check("[")) {
      Token open = next();
      auto e = std::make_shared<Expr>();
      e->kind = Expr::Kind::list;
      e->loc = loc(open);
      if (!check("]")) do
          e->items.push_back(expression());
        while (accept(","));
      close(open, "]", "the list");
      return e;
    }
    if (check("...")) {
      auto e = std::make_shared<Expr>();
      e->kind = Expr::Kind::ellipsis;
      e->loc = loc(next());
      return e;
    }
    fail(t, "expected an expression (a name, a number, a call or a parenthesis)");
  }

  /** Limits that keep deep or long input from overflowing the stack of the recursive parser
   *  and of everything that walks the tree after it. */
  static constexpr int kMaxNesting = 200;
  static constexpr int kMaxChain = 1000;

  /** Counts one level of nesting for as long as it lives. */
  class Nested {
   public:
    explicit Nested(Parser& p) : p_(p) {
      if (++p_.depth_ > kMaxNesting)
        p_.fail(p_.peek(), "expected at most " + std::to_string(kMaxNesting) +
                               " levels of nested parentheses, brackets and unary operators");
    }
    ~Nested() { --p_.depth_; }
    Nested(const Nested&) = delete;
    Nested& operator=(const Nested&) = delete;

   private:
    Parser& p_;
  };

  const SourceText& src_;
  std::vector<Token> toks_;
  size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace

std::vector<BodyStatement> parse_body(const SourceText& src) {
  return Parser(src).body();
}

ExprPtr parse_expression(const SourceText& src) {
  return Parser(src).whole_expression();
}

TypeSpec parse_type(const SourceText& src) {
  return Parser(src).type();
}

}  // namespace kiln
