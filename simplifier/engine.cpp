#include "simplifier/engine.h"

#include <algorithm>
#include <cstring>
#include <iomanip>
#include <set>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

#include "simplifier/match.h"

namespace kiln {

namespace {

/** Everything that makes two nodes equal, as text. */
std::string node_key(const Node& n) {
  std::ostringstream k;
  uint64_t bits = 0;
  std::memcpy(&bits, &n.value, sizeof bits);
  k << static_cast<int>(n.op) << ' ' << static_cast<int>(n.dtype) << ' ' << shape_str(n.shape)
    << " (";
  for (NodeId o : n.operands)
    k << o << ',';
  k << ") " << bits << ' ' << n.int_value;
  if (n.symbolic) k << " s" << n.size_value.str();
  if (n.op == Op::index || n.op == Op::gather) k << " a" << n.axis;
  if (n.op == Op::view) k << " v" << n.view.str();
  if (n.op == Op::reduce) {
    k << " r" << static_cast<int>(n.reduce_kind);
    for (int a : n.axes)
      k << ',' << a;
    for (const IntExpr& d : n.domain)
      k << ';' << d.key();
  }
  if (n.op == Op::scan) k << " c" << static_cast<int>(n.combine) << ',' << n.axes.at(0);
  if (n.op == Op::scatter) k << " c" << static_cast<int>(n.combine) << " a" << n.axis;
  if (!n.name.empty()) k << " n" << n.name << (n.constant_input ? "c" : "");
  return k.str();
}

/** `mul %3, %4 : f32[N]` */
std::string node_text(const Node& n) {
  std::string s(op_name(n.op));
  if (n.op == Op::constant) s += " " + constant_str(n);
  for (size_t k = 0; k < n.operands.size(); ++k)
    s += (k ? ", %" : " %") + std::to_string(n.operands[k]);
  return s + " : " + std::string(dtype_name(n.dtype)) + shape_str(n.shape);
}

class Engine : public Rewriter {
 public:
  Engine(const RuleSet& rules, const SimplifyOptions& opt, SimplifyResult& result)
      : rules_(rules), opt_(opt), result_(result) {
    for (int op = 0; op < kNumOps; ++op)
      by_op_.push_back(rules.for_op(static_cast<Op>(op)));
  }

  const Graph& graph() const override { return out_; }
  const SimplifyOptions& options() const override { return opt_; }

  /** One bottom-up pass over `in`; returns the rebuilt graph without dead nodes. */
  Graph pass(const Graph& in) {
    out_ = Graph();
    out_.name = in.name;
    out_.size_vars = in.size_vars;
    out_.checks = in.checks;
    keys_.clear();
    applied_.clear();
    std::vector<NodeId> map(in.size(), -1);
    for (NodeId id : in.inputs) {
      map[id] = intern(in[id]);
      out_.inputs.push_back(map[id]);
    }
    for (NodeId id = 0; id < static_cast<NodeId>(in.size()); ++id) {
      if (map[id] >= 0) continue;
      Node n = in[id];
      for (NodeId& o : n.operands)
        o = map[o];
      map[id] = emit(std::move(n));
    }
    for (const GraphOutput& o : in.outputs)
      out_.outputs.push_back({o.name, map[o.node]});
    return without_dead_nodes(out_);
  }

  NodeId emit(Node n) override {
    if (++depth_ > opt_.max_rewrites) cycle_error(n, "replacements nest without end");
    std::vector<const Rule*> history;
    for (;;) {
      const Rule* fired = nullptr;
      std::optional<Rewrite> r;
      for (const Rule* rule : by_op_[static_cast<int>(n.op)]) {
        r = try_rule(*rule, n);
        if (r) {
          fired = rule;
          break;
        }
      }
      if (!fired) break;
      history.push_back(fired);
      applied_.insert(fired->name);
      std::string after = r->existing ? "%" + std::to_string(*r->existing) : node_text(r->node);
      result_.trace.push_back(fired->name + ": " + node_text(n) + "  ->  " + after);
      if (r->existing) {
        --depth_;
        return *r->existing;
      }
      n = std::move(r->node);
      if (static_cast<int>(history.size()) >= opt_.max_rewrites) cycle_error(n, names(history));
    }
    --depth_;
    return intern(n);
  }

  /** Rules that applied in the last pass. */
  const std::set<std::string>& applied() const { return applied_; }

 private:
  const RuleSet& rules_;
  const SimplifyOptions& opt_;
  SimplifyResult& result_;
  std::vector<std::vector<const Rule*>> by_op_;
  Graph out_;
  std::unordered_map<std::string, NodeId> keys_;
  std::set<std::string> applied_;
  int depth_ = 0;

  std::optional<Rewrite> try_rule(const Rule& rule, const Node& n) {
    if (rule.fastmath && !opt_.fastmath) return std::nullopt;
    RuleStats& st = result_.stats[rule.name];
    ++st.attempts;
    std::optional<Rewrite> r;
    if (rule.code) {
      r = rule.code(n, *this);
      if (r) ++st.matches;
    } else {
      Bindings b;
      if (!match_root(*rule.pattern, n, out_, b)) return std::nullopt;
      ++st.matches;
      if (rule.guard && !guard_holds(*rule.guard, b, out_, opt_)) return std::nullopt;
      r = instantiate(*rule.replacement, b, n, *this);
    }
    if (r) ++st.applied;
    return r;
  }

  NodeId intern(const Node& n) {
    std::string key = node_key(n);
    auto it = keys_.find(key);
    if (it != keys_.end()) {
      ++result_.shared;
      return it->second;
    }
    NodeId id = out_.add(n);
    keys_.emplace(std::move(key), id);
    return id;
  }

  static std::string names(const std::vector<const Rule*>& history) {
    std::vector<std::string> seen;
    for (size_t k = history.size() > 8 ? history.size() - 8 : 0; k < history.size(); ++k)
      if (std::find(seen.begin(), seen.end(), history[k]->name) == seen.end())
        seen.push_back(history[k]->name);
    std::string s;
    for (const std::string& n : seen)
      s += (s.empty() ? "" : ", ") + n;
    return "a cycle of rules: " + s;
  }

  [[noreturn]] void cycle_error(const Node& n, const std::string& why) {
    throw std::runtime_error("simplifier: the rules do not converge at `" + node_text(n) +
                             "`: " + why + " (bound: " + std::to_string(opt_.max_rewrites) +
                             " rewrites at one node)");
  }

  Graph without_dead_nodes(const Graph& g) {
    std::vector<bool> live(g.size(), false);
    for (const GraphOutput& o : g.outputs)
      live[o.node] = true;
    for (NodeId id : g.inputs)
      live[id] = true;
    for (NodeId id = static_cast<NodeId>(g.size()) - 1; id >= 0; --id)
      if (live[id])
        for (NodeId o : g[id].operands)
          live[o] = true;
    Graph out;
    out.name = g.name;
    out.size_vars = g.size_vars;
    out.checks = g.checks;
    std::vector<NodeId> map(g.size(), -1);
    for (NodeId id = 0; id < static_cast<NodeId>(g.size()); ++id) {
      if (!live[id]) {
        ++result_.removed;
        continue;
      }
      Node n = g[id];
      for (NodeId& o : n.operands)
        o = map[o];
      map[id] = out.add(std::move(n));
    }
    for (NodeId id : g.inputs)
      out.inputs.push_back(map[id]);
    for (const GraphOutput& o : g.outputs)
      out.outputs.push_back({o.name, map[o.node]});
    return out;
  }
};

}  // namespace

SimplifyResult simplify(const Graph& g, const RuleSet& rules, const SimplifyOptions& opt) {
  SimplifyResult result;
  Engine engine(rules, opt, result);
  Graph current = g;
  std::string text = graph_to_text(current);
  for (int pass = 1;; ++pass) {
    Graph next = engine.pass(current);
    result.passes = pass;
    std::string next_text = graph_to_text(next);
    if (next_text == text) {
      result.graph = std::move(next);
      return result;
    }
    if (pass == opt.max_passes) {
      std::string names;
      for (const std::string& n : engine.applied())
        names += (names.empty() ? "" : ", ") + n;
      throw std::runtime_error("simplifier: the graph of " + g.name + " still changes after " +
                               std::to_string(pass) + " passes; rules applied in the last pass: " +
                               (names.empty() ? "(none: sharing or dead code)" : names));
    }
    current = std::move(next);
    text = std::move(next_text);
  }
}

std::string stats_to_text(const Graph& before, const SimplifyResult& r) {
  std::ostringstream out;
  out << "// simplified " << before.name << ": " << before.size() << " -> " << r.graph.size()
      << " nodes in " << r.passes << " passes; " << r.shared << " shared (cse), " << r.removed
      << " dead removed (dce)\n";
  out << "// " << std::left << std::setw(28) << "rule" << std::right << std::setw(10) << "tried"
      << std::setw(10) << "matched" << std::setw(10) << "applied"
      << "\n";
  for (const auto& [name, st] : r.stats)
    out << "// " << std::left << std::setw(28) << name << std::right << std::setw(10) << st.attempts
        << std::setw(10) << st.matches << std::setw(10) << st.applied << "\n";
  return out.str();
}

}  // namespace kiln
