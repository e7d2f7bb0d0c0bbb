#include "scheduler/share_kernels.h"

#include <cstdio>
#include <map>

#include "scheduler/schedule_cache.h"

namespace kiln {

namespace {

/** Writes one kernel's statements with buffers by their place among its parameters and every
 *  expression node once (a node seen before is written as its number). */
class KeyWriter {
 public:
  KeyWriter(const KernelPlan& plan, const Kernel& k) : plan_(plan) {
    for (size_t i = 0; i < k.buffers.size(); ++i)
      local_[k.buffers[i]] = static_cast<int>(i);
  }

  std::string buffer(int b) const {
    auto it = local_.find(b);
    return it == local_.end() ? "?" + plan_.buffers.at(b).name : "B" + std::to_string(it->second);
  }

  static std::string index(const std::vector<IntExpr>& ix) {
    std::string s = "[";
    for (const IntExpr& e : ix)
      s += e.key() + ",";
    return s + "]";
  }

  std::string expr(const ScalarExpr& e) {
    if (auto it = seen_.find(&e); it != seen_.end()) return "#" + std::to_string(it->second);
    std::string s =
        "(" + std::to_string(static_cast<int>(e.kind)) + " " + std::string(dtype_name(e.dtype));
    switch (e.kind) {
      case ScalarExpr::Kind::load:
        s += " " + buffer(e.buffer) + index(e.index);
        break;
      case ScalarExpr::Kind::iterator:
        s += " " + index(e.index);
        break;
      case ScalarExpr::Kind::constant: {
        char bits[64];
        std::snprintf(bits, sizeof bits, " %a %lld", e.value, static_cast<long long>(e.int_value));
        s += bits;
        if (e.symbolic) s += " " + e.size_value.key();
        break;
      }
      case ScalarExpr::Kind::op:
        s += " " + std::string(op_name(e.op));
        break;
    }
    for (const ScalarExprPtr& a : e.args)
      s += " " + (a ? expr(*a) : std::string("-"));
    for (const MaskBound& m : e.mask)
      s += " ?" + m.expr.key() + "<" + m.bound.key();
    seen_.emplace(&e, static_cast<int>(seen_.size()));
    return s + ")";
  }

 private:
  const KernelPlan& plan_;
  std::map<int, int> local_;
  std::map<const ScalarExpr*, int> seen_;
};

/** How many kernels touch each buffer. */
std::vector<int> kernels_touching(const KernelPlan& plan) {
  std::vector<int> n(plan.buffers.size(), 0);
  for (const Kernel& k : plan.kernels)
    for (int b : k.buffers)
      ++n[static_cast<size_t>(b)];
  return n;
}

std::string code_key(const KernelPlan& plan, const Kernel& k, const std::vector<int>& touching) {
  KeyWriter w(plan, k);
  std::string key;
  for (int b : k.buffers) {
    const Buffer& buf = plan.buffers[b];
    key +=
        w.buffer(b) + " " + std::string(dtype_name(buf.dtype)) + KeyWriter::index(buf.shape) + " " +
        buffer_kind_name(buf.kind) + (buf.constant ? " const" : "") +
        (buf.window_of >= 0 ? " window" : "") +
        (buf.kind == BufferKind::temp && touching[static_cast<size_t>(b)] <= 1 ? " private" : "") +
        "\n";
  }
  for (const Statement& s : k.statements) {
    key += std::to_string(static_cast<int>(s.kind)) + " " +
           std::to_string(static_cast<int>(s.reduce)) + " " + KeyWriter::index(s.extents) +
           KeyWriter::index(s.domain) + KeyWriter::index(s.needed) + " " + w.buffer(s.buffer) +
           KeyWriter::index(s.index);
    if (s.value) key += " = " + w.expr(*s.value);
    if (s.kind == Statement::Kind::call) {
      key += " " + s.routine;
      for (int b : s.args)
        key += " " + w.buffer(b);
    }
    key += "\n";
  }
  return key + kernel_shape_key(plan, k);
}

}  // namespace

std::string kernel_code_key(const KernelPlan& plan, const Kernel& k) {
  return code_key(plan, k, kernels_touching(plan));
}

int share_kernels(KernelPlan& plan) {
  const std::vector<int> touching = kernels_touching(plan);
  std::map<std::string, int> first;
  int shared = 0;
  for (size_t i = 0; i < plan.kernels.size(); ++i) {
    Kernel& k = plan.kernels[i];
    auto [it, fresh] = first.try_emplace(code_key(plan, k, touching), static_cast<int>(i));
    k.code_of = fresh ? -1 : it->second;
    shared += !fresh;
  }
  return shared;
}

}  // namespace kiln
