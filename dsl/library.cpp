#include "dsl/library.h"

#include <filesystem>
#include <functional>
#include <set>

#include "dsl/builtins.h"
#include "ir/data_dirs.h"

namespace kiln {

namespace {

/** Calls a body makes, in order: (callee name, location). */
void collect_calls(const Expr& e, std::vector<std::pair<std::string, SourceLoc>>& out) {
  if (e.kind == Expr::Kind::call) out.push_back({e.text, e.loc});
  for (const ExprPtr& x : e.items)
    collect_calls(*x, out);
  for (const Arg& a : e.args)
    collect_calls(*a.value, out);
}

}  // namespace

const SpecFile& Library::load(const std::string& path) {
  std::string file = path;
  if (path.starts_with("std:")) try {
      file = data_dir(DataDir::ops) + "/" + path.substr(4);
    } catch (const DataDirError& e) {
      throw SpecError(SourceLoc{path, 0, 0}, e.what());
    }
  const SpecFile& f = load_file(file, SourceLoc{});
  check_call_cycles(f);
  return f;
}

const SpecFile& Library::load_text(const std::string& text, const std::string& name) {
  // Not a path: a key no file's canonical path can take.
  std::string key = "\x01string:" + name;
  auto parsed = parse_spec_text(text, name);
  SpecFile* f = parsed.get();
  files_[key] = std::move(parsed);
  for (const auto& [p, loc] : f->uses)
    f->used.push_back(&load_file(p, loc));
  check_call_cycles(*f);
  return *f;
}

const SpecFile& Library::load_file(const std::string& path, const SourceLoc& used_at) {
  std::error_code ec;
  std::string key = std::filesystem::weakly_canonical(path, ec).string();
  if (ec) key = path;
  if (auto it = files_.find(key); it != files_.end()) return *it->second;
  if (!std::filesystem::exists(path)) {
    if (used_at.valid()) throw SpecError(used_at, "used spec file '" + path + "' does not exist");
    throw SpecError(SourceLoc{path, 0, 0}, "spec file '" + path + "' does not exist");
  }
  if (std::filesystem::is_directory(path, ec)) {  // reads as an empty file: say what it is
    std::string what = "'" + path + "' is a folder, not a spec file";
    throw SpecError(used_at.valid() ? used_at : SourceLoc{path, 0, 0}, what);
  }
  SpecFile* f = files_.emplace(key, load_spec_file(path)).first->second.get();
  for (const auto& [p, loc] : f->uses)
    f->used.push_back(&load_file(p, loc));
  return *f;
}

const Composite* Library::resolve(const SpecFile& from, const std::string& name) const {
  if (const Composite* c = from.find(name)) return c;
  for (const SpecFile* u : from.used)
    if (const Composite* c = u->find(name)) return c;
  return nullptr;
}

std::vector<const SpecFile*> Library::files() const {
  std::vector<const SpecFile*> out;
  for (const auto& [k, f] : files_)
    out.push_back(f.get());
  return out;
}

void Library::check_call_cycles(const SpecFile& root) const {
  enum class Mark { none, active, done };
  std::map<const Composite*, Mark> marks;
  std::vector<const Composite*> stack;
  std::function<void(const Composite*)> visit = [&](const Composite* c) {
    marks[c] = Mark::active;
    stack.push_back(c);
    std::vector<std::pair<std::string, SourceLoc>> calls;
    for (const BodyStatement& s : c->body)
      collect_calls(*s.value, calls);
    for (const auto& [name, loc] : calls) {
      if (is_builtin(name)) continue;
      const Composite* callee = resolve(*c->file, name);
      if (!callee) continue;  // reported when the body is lowered
      if (marks[callee] == Mark::active) {
        std::string cycle;
        bool in = false;
        for (const Composite* s : stack) {
          in |= s == callee;
          if (in) cycle += s->name + " (" + s->file->path + ") -> ";
        }
        throw SpecError(loc, "call cycle: " + cycle + callee->name +
                                 "; a composite may not call itself, directly or indirectly");
      }
      if (marks[callee] == Mark::none) visit(callee);
    }
    stack.pop_back();
    marks[c] = Mark::done;
  };
  for (const auto& [k, f] : files_)
    for (const auto& c : f->composites)
      if (marks[c.get()] == Mark::none) visit(c.get());
}

}  // namespace kiln
