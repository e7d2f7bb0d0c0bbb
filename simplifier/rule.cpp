#include "simplifier/rule.h"

#include <algorithm>
#include <filesystem>

#include "ir/data_dirs.h"
#include "simplifier/code_rules.h"
#include "simplifier/rule_file.h"

namespace kiln {

void RuleSet::add(Rule rule) {
  for (Rule& r : rules_)
    if (r.name == rule.name) {
      r = std::move(rule);
      return;
    }
  rules_.push_back(std::move(rule));
}

std::vector<const Rule*> RuleSet::for_op(Op op) const {
  std::vector<const Rule*> out;
  for (const Rule& r : rules_)
    if (std::find(r.roots.begin(), r.roots.end(), op) != r.roots.end()) out.push_back(&r);
  return out;
}

const Rule* RuleSet::find(const std::string& name) const {
  for (const Rule& r : rules_)
    if (r.name == name) return &r;
  return nullptr;
}

std::string shipped_rules_dir() {
  return data_dir(DataDir::rules);
}

namespace {

RuleSet load_shipped_rules() {
  RuleSet set;
  for (Rule& r : code_rules())
    set.add(std::move(r));
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(shipped_rules_dir()))
    if (e.path().extension() == ".toml") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  for (const std::string& f : files)
    for (Rule& r : load_rule_file(f))
      set.add(std::move(r));
  return set;
}

}  // namespace

const RuleSet& shipped_rules() {
  static const RuleSet set = load_shipped_rules();  // read once per process
  return set;
}

RuleSet rules_with(const std::vector<std::string>& files) {
  RuleSet set = shipped_rules();
  for (const std::string& f : files)
    for (Rule& r : load_rule_file(f))
      set.add(std::move(r));
  return set;
}

}  // namespace kiln
