#include <toml++/toml.h>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "dsl/parser.h"
#include "dsl/source_text.h"
#include "dsl/spec.h"
#include "ir/data_dirs.h"
#include "ir/size_facts.h"

namespace kiln {

namespace {

SourceLoc node_loc(const std::string& file, const toml::source_region& r) {
  return SourceLoc{file, static_cast<int>(r.begin.line), static_cast<int>(r.begin.column)};
}

int utf8_length(uint32_t cp) {
  return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
}

class Loader {
 public:
  explicit Loader(std::string path) : path_(std::move(path)) {}

  std::unique_ptr<SpecFile> load() {
    std::ifstream in(path_);
    if (!in) throw SpecError(SourceLoc{path_, 0, 0}, "cannot read spec file '" + path_ + "'");
    std::stringstream buf;
    buf << in.rdbuf();
    return parse(buf.str());
  }

  /** Parses `text` as the contents of the file called path_. */
  std::unique_ptr<SpecFile> parse(const std::string& text) {
    std::string line;
    std::istringstream ls(text);
    while (std::getline(ls, line))
      lines_.push_back(line);
    toml::table root;
    try {
      root = toml::parse(text, path_);
    } catch (const toml::parse_error& e) {
      throw SpecError(node_loc(path_, e.source()),
                      "TOML syntax error: " + std::string(e.description()));
    }
    auto file = std::make_unique<SpecFile>();
    file->path = path_;
    for (const auto& [key, node] : sorted(root)) {
      if (key == "meta") {
        meta(*file, node);
        continue;
      }
      const toml::table* t = node->as_table();
      if (!t)
        throw SpecError(loc(*node), "'" + key + "' must be a table (a composite such as [" + key +
                                        "]) or [meta]");
      auto c = composite(key, *t, loc(*node));
      c->file = file.get();
      file->composites.push_back(std::move(c));
    }
    return file;
  }

 private:
  using Entry = std::pair<std::string, const toml::node*>;

  /** Table entries in the order they are written in the file. */
  static std::vector<Entry> sorted(const toml::table& t) {
    std::vector<Entry> out;
    for (const auto& [k, v] : t)
      out.push_back({std::string(k.str()), &v});
    std::stable_sort(out.begin(), out.end(), [](const Entry& a, const Entry& b) {
      const auto &x = a.second->source().begin, &y = b.second->source().begin;
      return x.line != y.line ? x.line < y.line : x.column < y.column;
    });
    return out;
  }

  SourceLoc loc(const toml::node& n) const { return node_loc(path_, n.source()); }

  /** Where `key` is written in `t`; the position of its value when toml++ did not record it. */
  SourceLoc key_loc(const toml::table& t, const std::string& key, const toml::node& value) const {
    for (const auto& [k, v] : t)
      if (k.str() == key && k.source().begin.line > 0) return node_loc(path_, k.source());
    return loc(value);
  }

  SourceText text_of(const toml::node& n, const std::string& value) const {
    auto b = n.source().begin;
    return source_text(path_, lines_, static_cast<int>(b.line), static_cast<int>(b.column), value);
  }

  std::string string_value(const toml::node& n, const std::string& what) const {
    if (const auto* s = n.as_string()) return s->get();
    throw SpecError(loc(n), what + " must be a string");
  }

  std::string relative_path(const std::string& p) const {
    if (!p.empty() && p[0] == '/') return p;
    auto slash = path_.rfind('/');
    return slash == std::string::npos ? p : path_.substr(0, slash + 1) + p;
  }

  /** A `use` entry: `std:NAME` is NAME in the standard library of composites (ops/, or an
   *  install's share/kiln/ops); any other path is relative to this file, and where no such file
   *  exists, a relative path is looked up in the standard library too. */
  std::string used_path(const std::string& given, const SourceLoc& at) const {
    auto library = [&]() -> std::string {
      try {
        return data_dir(DataDir::ops);
      } catch (const DataDirError& e) {
        if (given.starts_with("std:")) throw SpecError(at, e.what());
        return "";
      }
    };
    if (given.starts_with("std:")) return library() + "/" + given.substr(4);
    std::string here = relative_path(given);
    if (given.empty() || given[0] == '/' || std::filesystem::exists(here)) return here;
    std::string std_dir = library();
    if (!std_dir.empty() && std::filesystem::exists(std_dir + "/" + given))
      return std_dir + "/" + given;
    return here;
  }

  void meta(SpecFile& file, const toml::node* node) {
    const toml::table* t = node->as_table();
    if (!t) throw SpecError(loc(*node), "[meta] must be a table");
    for (const auto& [key, v] : sorted(*t)) {
      auto* list = key == "use" ? &file.uses : nullptr;
      if (key != "use" && key != "rules")
        throw SpecError(key_loc(*t, key, *v),
                        "unknown key '" + key + "' in [meta]; expected use or rules");
      const toml::array* a = v->as_array();
      if (!a) throw SpecError(loc(*v), "[meta] " + key + " must be an array of file paths");
      for (const auto& item : *a) {
        std::string given = string_value(item, "a path in [meta] " + key);
        std::string p = list ? used_path(given, loc(item)) : relative_path(given);
        if (list)
          list->push_back({p, loc(item)});
        else
          file.rules.push_back(p);
      }
    }
  }

  std::unique_ptr<Composite> composite(const std::string& name, const toml::table& t,
                                       SourceLoc at) {
    auto c = std::make_unique<Composite>();
    c->name = name;
    c->loc = at;
    bool has_body = false, has_out = false;
    for (const auto& [key, v] : sorted(t)) {
      if (key == "doc") {
        c->doc = string_value(*v, "doc");
      } else if (key == "in" || key == "out") {
        params(key == "in" ? c->inputs : c->outputs, *v, key);
        has_out |= key == "out";
      } else if (key == "attrs") {
        attrs(*c, *v);
      } else if (key == "types") {
        types(*c, *v);
      } else if (key == "body") {
        c->body_loc = loc(*v);
        c->body = parse_body(text_of(*v, string_value(*v, "body")));
        has_body = true;
      } else if (key == "test") {
        test(*c, *v);
      } else if (key == "baseline") {
        baselines(*c, *v);
      } else if (key == "where") {
        facts(*c, *v);
      } else if (key == "state") {
        state_pairs(*c, *v);
      } else {
        throw SpecError(key_loc(t, key, *v),
                        "unknown key '" + key + "' in composite '" + name +
                            "'; expected doc, in, out, attrs, types, where, body, test, "
                            "baseline or state");
      }
    }
    if (!has_out) throw SpecError(at, "composite '" + name + "' has no 'out' table");
    if (!has_body) throw SpecError(at, "composite '" + name + "' has no 'body'");
    check_state(*c);
    check_type_names(*c);
    return c;
  }

  void state_pairs(Composite& c, const toml::node& n) {
    const toml::table* t = n.as_table();
    if (!t)
      throw SpecError(loc(n),
                      "'state' must be a table of output = \"input\", e.g. { k_out = "
                      "\"k\" }: the output the input becomes on the next call");
    for (const auto& [key, v] : sorted(*t))
      c.state.push_back({key, string_value(*v, "the input that state '" + key + "' becomes"),
                         key_loc(*t, key, *v), loc(*v)});
  }

  /** Each state pair names an output and a non-const input of one type, each once. */
  void check_state(const Composite& c) const {
    auto find = [](const std::vector<Param>& ps, const std::string& n) -> const Param* {
      for (const Param& p : ps)
        if (p.name == n) return &p;
      return nullptr;
    };
    auto type_str = [](const TypeSpec& t) {
      std::string s = t.dtype + (t.batch ? "[..." : "[");
      for (size_t k = 0; k < t.dims.size(); ++k)
        s += (k || t.batch ? ", " : "") + expr_str(*t.dims[k]);
      return s + "]";
    };
    std::set<std::string> inputs;
    for (const StatePair& p : c.state) {
      const Param* out = find(c.outputs, p.output);
      const Param* in = find(c.inputs, p.input);
      if (!out)
        throw SpecError(p.loc, "state '" + p.output + "' of '" + c.name +
                                   "' is not one of its outputs; a state pair is output = "
                                   "\"input\"");
      if (!in)
        throw SpecError(p.input_loc, "state '" + p.output + "' of '" + c.name + "' becomes '" +
                                         p.input + "', which is not one of its inputs");
      if (in->type.is_const)
        throw SpecError(p.input_loc, "state '" + p.output + "' becomes input '" + p.input +
                                         "', which is const; a state input changes between calls");
      if (!inputs.insert(p.input).second)
        throw SpecError(p.input_loc, "input '" + p.input + "' is the state of two outputs");
      if (!out->type.has_shape || type_str(out->type) != type_str(in->type))
        throw SpecError(p.input_loc, "state '" + p.output + "' is " + out->type.text +
                                         " but input '" + p.input + "' is " + in->type.text +
                                         "; a state and its input have one type");
    }
  }

  void params(std::vector<Param>& out, const toml::node& n, const std::string& what) {
    const toml::table* t = n.as_table();
    if (!t)
      throw SpecError(loc(n),
                      "'" + what + "' must be a table of name = \"type\", e.g. { x = \"T[N]\" }");
    for (const auto& [key, v] : sorted(*t)) {
      Param p;
      p.name = key;
      p.loc = loc(*v);
      p.type = parse_type(text_of(*v, string_value(*v, "the type of '" + key + "'")));
      if (p.type.is_const && what == "out")
        throw SpecError(p.type.loc, "an output cannot be marked const");
      out.push_back(std::move(p));
    }
  }

  AttrValue attr_value(const toml::node& v) const {
    AttrValue a;
    if (auto i = v.as_integer()) {
      a.kind = AttrValue::Kind::integer;
      a.integer = i->get();
    } else if (auto f = v.as_floating_point()) {
      a.kind = AttrValue::Kind::number;
      a.number = f->get();
    } else if (auto b = v.as_boolean()) {
      a.kind = AttrValue::Kind::boolean;
      a.boolean = b->get();
    } else if (auto s = v.as_string()) {
      a.kind = AttrValue::Kind::string;
      a.string = s->get();
    } else if (auto arr = v.as_array()) {
      a.kind = AttrValue::Kind::list;
      for (const auto& item : *arr)
        a.list.push_back(attr_value(item));
    } else {
      throw SpecError(loc(v), "an attribute must be an integer, float, bool, string or array");
    }
    return a;
  }

  void attrs(Composite& c, const toml::node& n) {
    const toml::table* t = n.as_table();
    if (!t) throw SpecError(loc(n), "'attrs' must be a table of name = default");
    for (const auto& [key, v] : sorted(*t))
      c.attrs.push_back({key, attr_value(*v), loc(*v)});
  }

  void types(Composite& c, const toml::node& n) {
    const toml::table* t = n.as_table();
    if (!t) throw SpecError(loc(n), "'types' must be a table such as { T = [\"f32\", \"f64\"] }");
    for (const auto& [key, v] : sorted(*t)) {
      TypeVar tv{key, {}, loc(*v)};
      const toml::array* a = v->as_array();
      if (!a || a->empty())
        throw SpecError(loc(*v), "type variable '" + key + "' needs a non-empty array of dtypes");
      for (const auto& item : *a) {
        std::string s = string_value(item, "a dtype");
        auto d = parse_dtype(s);
        if (!d)
          throw SpecError(loc(item),
                          "unknown dtype '" + s +
                              "'; expected f64, f32, f16, bf16, i64, i32, i16, i8, u8, u16, "
                              "u32, u64 "
                              "or bool");
        tv.allowed.push_back(*d);
      }
      c.types.push_back(std::move(tv));
    }
  }

  void test(Composite& c, const toml::node& n) {
    const toml::table* t = n.as_table();
    if (!t) throw SpecError(loc(n), "'test' must be a table");
    for (const auto& [key, v] : sorted(*t)) {
      if (key == "sizes") {
        const toml::table* s = v->as_table();
        if (!s) throw SpecError(loc(*v), "test sizes must be a table such as { N = [1, 7] }");
        for (const auto& [var, vals] : sorted(*s))
          c.test.sizes[var] = int_list(*vals);
      } else if (key == "batch") {
        const toml::array* a = v->as_array();
        if (!a) throw SpecError(loc(*v), "test batch must be an array such as [3, 5]");
        if (!a->empty() && (*a)[0].is_array())
          for (const auto& b : *a)
            c.test.batches.push_back(int_list(b));
        else
          c.test.batches.push_back(int_list(*v));
      } else if (key == "rtol" || key == "atol") {
        auto x = v->value<double>();
        if (!x) throw SpecError(loc(*v), key + " must be a number");
        (key == "rtol" ? c.test.rtol : c.test.atol) = *x;
      } else if (key == "range") {
        const toml::table* r = v->as_table();
        if (!r) throw SpecError(loc(*v), "test range must be a table such as { x = [0.1, 4] }");
        for (const auto& [input, lohi] : sorted(*r)) {
          const toml::array* a = lohi->as_array();
          auto lo = a && a->size() == 2 ? (*a)[0].value<double>() : std::nullopt;
          auto hi = a && a->size() == 2 ? (*a)[1].value<double>() : std::nullopt;
          if (!lo || !hi || *lo >= *hi)
            throw SpecError(loc(*lohi), "a test range must be [low, high] with low < high");
          c.test.ranges[input] = {*lo, *hi};
        }
      } else if (key == "grad") {
        auto g = v->value<bool>();
        if (!g || !v->is_boolean()) throw SpecError(loc(*v), "test grad must be true or false");
        c.test.grad = *g;
      } else {
        throw SpecError(key_loc(*t, key, *v), "unknown key '" + key +
                                                  "' in test; expected sizes, batch, rtol, atol, "
                                                  "range or grad");
      }
    }
  }

  /** `where = ["C == F", "C % groups == 0"]`: each string one comparison of size expressions. */
  void facts(Composite& c, const toml::node& n) {
    const toml::array* a = n.as_array();
    if (!a) throw SpecError(loc(n), "'where' must be an array of facts such as [\"C == F\"]");
    for (const auto& item : *a) {
      std::string text = string_value(item, "a fact in 'where'");
      SourceText src = text_of(item, text);
      ExprPtr e = parse_expression(src);
      if (e->kind != Expr::Kind::binary || !parse_relation(e->text))
        throw SpecError(src.loc(0),
                        "a fact must compare two size expressions with ==, !=, <, "
                        "<=, > or >=, such as \"C == F\" or \"C % groups == 0\"; "
                        "found '" +
                            text + "'");
      c.facts.push_back({text, e, src.loc(0)});
    }
  }

  /** `baseline = { torch = "F.softmax(x, -1)" }`: the peers kiln bench --vs can run. */
  void baselines(Composite& c, const toml::node& n) {
    const toml::table* t = n.as_table();
    if (!t)
      throw SpecError(loc(n), "baseline must be a table such as { torch = \"F.softmax(x, -1)\" }");
    for (const auto& [key, v] : sorted(*t)) {
      if (key != "torch")
        throw SpecError(key_loc(*t, key, *v), "unknown baseline '" + key + "'; expected torch");
      std::string code = string_value(*v, "baseline " + key);
      if (code.find_first_not_of(" \t\n") == std::string::npos)
        throw SpecError(loc(*v), "baseline " + key + " is empty");
      c.baselines[key] = {code, loc(*v)};
    }
  }

  std::vector<int64_t> int_list(const toml::node& n) const {
    std::vector<int64_t> out;
    // as_integer, not value<int64_t>: toml++ converts a float such as 1e308 to int64_t
    // before checking its range (undefined behaviour)
    if (const toml::value<int64_t>* i = n.as_integer()) return {i->get()};
    const toml::array* a = n.as_array();
    if (a)
      for (const auto& item : *a) {
        if (!item.is_integer()) throw SpecError(loc(item), "expected an integer");
        out.push_back(item.as_integer()->get());
      }
    else
      throw SpecError(loc(n), "expected an integer or an array of integers");
    return out;
  }

  void check_type_names(const Composite& c) const {
    for (const auto* list : {&c.inputs, &c.outputs})
      for (const Param& p : *list) {
        const std::string& d = p.type.dtype;
        if (parse_dtype(d) || c.type_var(d)) continue;
        if (!std::isupper(static_cast<unsigned char>(d[0])))
          throw SpecError(
              p.type.dtype_loc,
              "unknown dtype '" + d +
                  "'; expected f64, f32, f16, bf16, i64, i32, i16, i8, u8, u16, u32, u64, "
                  "bool or a "
                  "type variable (a capitalised name such as T)");
      }
  }

  std::string path_;
  std::vector<std::string> lines_;
};

}  // namespace

// Walks the raw text from the opening quote; falls back to the quote's position if the walk
// disagrees with the parsed value (it never should).
std::vector<std::pair<int, int>> string_positions(const std::vector<std::string>& lines, int line,
                                                  int col, const std::string& value) {
  std::vector<std::pair<int, int>> pos;
  size_t r = line - 1, c = col - 1;
  auto fallback = [&] { return std::vector<std::pair<int, int>>(value.size() + 1, {line, col}); };
  if (r >= lines.size()) return fallback();
  auto raw = [&]() -> char { return c < lines[r].size() ? lines[r][c] : '\n'; };
  auto advance = [&] {
    if (c < lines[r].size()) {
      ++c;
    } else if (r + 1 < lines.size()) {
      ++r;
      c = 0;
    } else {
      ++c;
    }
  };
  std::string open = lines[r].substr(c, 3);
  bool multi = open == "\"\"\"" || open == "'''";
  bool basic = lines[r][c] == '"';
  for (int k = 0; k < (multi ? 3 : 1); ++k)
    advance();
  if (multi && raw() == '\r') advance();
  if (multi && raw() == '\n') advance();
  size_t k = 0;
  while (k < value.size()) {
    if (r >= lines.size() || (r == lines.size() - 1 && c > lines[r].size())) return fallback();
    std::pair<int, int> here{static_cast<int>(r + 1), static_cast<int>(c + 1)};
    if (basic && raw() == '\\') {
      advance();
      char e = raw();
      if (e == ' ' || e == '\t' || e == '\n' || e == '\r') {
        while (raw() == ' ' || raw() == '\t' || raw() == '\n' || raw() == '\r')
          advance();
        continue;
      }
      int bytes = 1;
      if (e == 'u' || e == 'U') {
        std::string hex;
        for (int h = 0; h < (e == 'u' ? 4 : 8); ++h) {
          advance();
          hex += raw();
        }
        bytes = utf8_length(static_cast<uint32_t>(std::stoul(hex, nullptr, 16)));
      }
      advance();
      for (int b = 0; b < bytes; ++b, ++k)
        pos.push_back(here);
      continue;
    }
    if (raw() != value[k] && !(raw() == '\n' && value[k] == '\n')) return fallback();
    pos.push_back(here);
    advance();
    ++k;
  }
  pos.push_back({static_cast<int>(r + 1), static_cast<int>(c + 1)});
  return pos;
}

SourceText source_text(const std::string& file, const std::vector<std::string>& lines, int line,
                       int col, const std::string& value) {
  SourceText s;
  s.text = value;
  s.file = file;
  s.pos = string_positions(lines, line, col, value);
  return s;
}

std::string AttrValue::str() const {
  switch (kind) {
    case Kind::integer:
      return std::to_string(integer);
    case Kind::number: {
      std::ostringstream s;
      s << number;
      return s.str();
    }
    case Kind::boolean:
      return boolean ? "true" : "false";
    case Kind::string:
      return "\"" + string + "\"";
    case Kind::list: {
      std::string s = "[";
      for (size_t i = 0; i < list.size(); ++i)
        s += (i ? ", " : "") + list[i].str();
      return s + "]";
    }
  }
  return "?";
}

size_t TestSpec::case_count() const {
  size_t n = 1;
  for (const auto& [k, v] : sizes)
    n = std::max(n, v.size());
  return n;
}

std::map<std::string, int64_t> TestSpec::case_sizes(size_t k) const {
  std::map<std::string, int64_t> out;
  for (const auto& [var, v] : sizes)
    if (!v.empty()) out[var] = v[std::min(k, v.size() - 1)];
  return out;
}

const TypeVar* Composite::type_var(const std::string& n) const {
  for (const TypeVar& t : types)
    if (t.name == n) return &t;
  return nullptr;
}

const AttrDecl* Composite::attr(const std::string& n) const {
  for (const AttrDecl& a : attrs)
    if (a.name == n) return &a;
  return nullptr;
}

const Composite* SpecFile::find(const std::string& name) const {
  for (const auto& c : composites)
    if (c->name == name) return c.get();
  return nullptr;
}

std::unique_ptr<SpecFile> load_spec_file(const std::string& path) {
  return Loader(path).load();
}

std::unique_ptr<SpecFile> parse_spec_text(const std::string& text, const std::string& name) {
  remember_source(name, text);
  return Loader(name).parse(text);
}

}  // namespace kiln
