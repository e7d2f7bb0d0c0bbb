#include "dsl/choices.h"

#include <algorithm>
#include <charconv>
#include <sstream>
#include <stdexcept>

#include "dsl/lower.h"

namespace kiln {

namespace {

std::optional<int64_t> parse_int(const std::string& s) {
  int64_t v = 0;
  size_t b = s.find_first_not_of(' '), e = s.find_last_not_of(' ');
  if (b == std::string::npos) return std::nullopt;
  auto [p, ec] = std::from_chars(s.data() + b, s.data() + e + 1, v);
  if (ec != std::errc() || p != s.data() + e + 1) return std::nullopt;
  return v;
}

}  // namespace

DType parse_dtype_choice(const Composite& c, const std::string& name, const std::string& spelling) {
  std::optional<DType> dt = parse_dtype(spelling);
  if (!dt) throw std::invalid_argument("unknown dtype '" + spelling + "'");
  if (!resolve_type_vars(c, {}).count(name))
    throw std::invalid_argument("composite '" + c.name + "' has no type variable '" + name + "'");
  const TypeVar* tv = c.type_var(name);
  bool allowed = tv ? std::find(tv->allowed.begin(), tv->allowed.end(), *dt) != tv->allowed.end()
                    : is_float(*dt);
  if (!allowed)
    throw std::invalid_argument("type variable " + name + " of '" + c.name + "' does not allow " +
                                spelling +
                                (tv ? "" : " (it is undeclared, so it takes float dtypes)"));
  return *dt;
}

AttrValue parse_attr_choice(const std::string& text, const AttrDecl& decl) {
  AttrValue a = decl.value;
  std::invalid_argument bad("attribute '" + decl.name + "' expects a value like its default " +
                            decl.value.str() + ", got '" + text + "'");
  switch (decl.value.kind) {
    case AttrValue::Kind::integer: {
      std::optional<int64_t> v = parse_int(text);
      if (!v) throw bad;
      a.integer = *v;
      break;
    }
    case AttrValue::Kind::number: {
      std::istringstream in(text);
      if (!(in >> a.number) || !in.eof()) throw bad;
      break;
    }
    case AttrValue::Kind::boolean:
      if (text != "true" && text != "false") throw bad;
      a.boolean = text == "true";
      break;
    case AttrValue::Kind::string:
      a.string = text;
      break;
    case AttrValue::Kind::list: {
      a.list.clear();
      // `-1,-3,-2` or `[-1, -3, -2]`
      std::string items = text;
      if (items.size() >= 2 && items.front() == '[' && items.back() == ']')
        items = items.substr(1, items.size() - 2);
      std::istringstream in(items);
      for (std::string item; std::getline(in, item, ',');) {
        std::optional<int64_t> v = parse_int(item);
        if (!v) throw bad;
        AttrValue x;
        x.integer = *v;
        a.list.push_back(x);
      }
      break;
    }
  }
  return a;
}

}  // namespace kiln
