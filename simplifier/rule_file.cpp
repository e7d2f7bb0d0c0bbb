#include "simplifier/rule_file.h"

#include <toml++/toml.h>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "dsl/parser.h"
#include "dsl/source_text.h"
#include "simplifier/match.h"

namespace kiln {

namespace {

SourceLoc loc_of(const std::string& file, const toml::source_position& p) {
  return SourceLoc{file, static_cast<int>(p.line), static_cast<int>(p.column)};
}

/** The first variable of `p` that is not in `known`, or null. */
const Pattern* unknown_var(const Pattern& p, const std::set<std::string>& known) {
  if ((p.kind == Pattern::Kind::any || p.kind == Pattern::Kind::constant) && !known.count(p.name))
    return &p;
  for (const PatternPtr& a : p.args)
    if (const Pattern* u = unknown_var(*a, known)) return u;
  return nullptr;
}

class RuleFileReader {
 public:
  RuleFileReader(const std::string& text, const std::string& path) : path_(path) {
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
      lines_.push_back(line);
  }

  std::vector<Rule> read(const std::string& text) {
    toml::table root;
    try {
      root = toml::parse(text, path_);
    } catch (const toml::parse_error& e) {
      throw SpecError(loc_of(path_, e.source().begin),
                      "TOML syntax error: " + std::string(e.description()));
    }
    std::vector<std::pair<std::string, const toml::node*>> entries;
    for (const auto& [k, v] : root)
      entries.push_back({std::string(k.str()), &v});
    std::stable_sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) {
      const auto &x = a.second->source().begin, &y = b.second->source().begin;
      return x.line != y.line ? x.line < y.line : x.column < y.column;
    });
    std::vector<Rule> rules;
    for (const auto& [name, node] : entries)
      rules.push_back(rule(name, *node));
    return rules;
  }

 private:
  std::string path_;
  std::vector<std::string> lines_;

  SourceLoc loc(const toml::node& n) const { return loc_of(path_, n.source().begin); }

  SourceText text_of(const toml::node& n, const std::string& value) const {
    auto b = n.source().begin;
    return source_text(path_, lines_, static_cast<int>(b.line), static_cast<int>(b.column), value);
  }

  const toml::node& string_field(const toml::table& t, const char* key, const SourceLoc& at,
                                 bool required) const {
    static const toml::value<std::string> missing("");
    const toml::node* n = t.get(key);
    if (!n) {
      if (required) throw SpecError(at, std::string("the rule has no '") + key + "'");
      return missing;
    }
    if (!n->is_string()) throw SpecError(loc(*n), std::string("'") + key + "' must be a string");
    return *n;
  }

  Rule rule(const std::string& name, const toml::node& node) const {
    const toml::table* t = node.as_table();
    SourceLoc at = loc(node);
    if (!t)
      throw SpecError(at, "rule '" + name +
                              "' must be a table: name = { pattern = \"...\", "
                              "replacement = \"...\" }");
    for (const auto& [k, v] : *t) {
      std::string key(k.str());
      if (key != "pattern" && key != "replacement" && key != "guard" && key != "comment" &&
          key != "fastmath")
        throw SpecError(loc(v), "unknown key '" + key + "' in rule '" + name +
                                    "'; expected pattern, replacement, guard, comment or fastmath");
    }
    Rule r;
    r.name = name;
    r.set = std::filesystem::path(path_).stem().string();
    r.loc = at;
    const toml::node& pattern = string_field(*t, "pattern", at, true);
    const toml::node& replacement = string_field(*t, "replacement", at, true);
    r.pattern = parse_pattern(text_of(pattern, pattern.value_or(std::string())), false);
    if (r.pattern->kind != Pattern::Kind::op)
      throw SpecError(loc(pattern),
                      "a pattern must start with an op, found '" + pattern_str(*r.pattern) + "'");
    r.roots = {r.pattern->op};
    r.replacement = parse_pattern(text_of(replacement, replacement.value_or(std::string())), true);
    std::set<std::string> vars;
    pattern_variables(*r.pattern, vars);
    if (const Pattern* u = unknown_var(*r.replacement, vars))
      throw SpecError(u->loc, "'" + u->name + "' is not a variable of the pattern");
    const toml::node& guard = string_field(*t, "guard", at, false);
    if (!guard.value_or(std::string()).empty()) {
      r.guard = parse_expression(text_of(guard, guard.value_or(std::string())));
      check_guard(*r.guard, *r.pattern);
    }
    r.comment = string_field(*t, "comment", at, false).value_or(std::string());
    if (const toml::node* f = t->get("fastmath")) {
      if (!f->is_boolean()) throw SpecError(loc(*f), "'fastmath' must be true or false");
      r.fastmath = f->value_or(false);
    }
    return r;
  }
};

}  // namespace

std::vector<Rule> parse_rule_text(const std::string& text, const std::string& path) {
  return RuleFileReader(text, path).read(text);
}

std::vector<Rule> load_rule_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw SpecError(SourceLoc{path, 0, 0}, "cannot read the rule file '" + path + "'");
  std::stringstream text;
  text << in.rdbuf();
  return parse_rule_text(text.str(), path);
}

}  // namespace kiln
