#include "ir/verifier.h"

#include <algorithm>

#include <set>
#include <stdexcept>
#include "ir/externs.h"

namespace kiln {

namespace {

std::string dt(DType t) {
  return std::string(dtype_name(t));
}

/** Collects the problems of one node, each prefixed "%id (op): ". */
class NodeChecker {
 public:
  NodeChecker(const Graph& g, NodeId id, std::vector<std::string>& out)
      : g_(g), id_(id), n_(g[id]), out_(out) {}

  void run() {
    if (static_cast<int>(n_.op) >= kNumOps) {
      out_.push_back("%" + std::to_string(id_) + " (?): unknown op");
      return;
    }
    if (!check_operands()) return;
    if (is_elementwise(n_.op)) check_elementwise_shapes();
    check_dtypes();
    if (n_.op == Op::view) check_view();
    if (n_.op == Op::reduce) check_reduce();
    if (n_.op == Op::scan) check_scan();
    if (n_.op == Op::extern_call) check_extern();
    if (n_.op == Op::gather) check_gather();
    if (n_.op == Op::scatter) check_scatter();
    if (n_.op == Op::index && (n_.axis < 0 || n_.axis >= static_cast<int>(n_.shape.size())))
      report("axis " + std::to_string(n_.axis) + " is out of range for rank " +
             std::to_string(n_.shape.size()));
    if (n_.op == Op::input && std::find(g_.inputs.begin(), g_.inputs.end(), id_) == g_.inputs.end())
      report("input '" + n_.name + "' is not listed among the graph's inputs");
    check_size_vars();
  }

 private:
  void report(const std::string& what) {
    out_.push_back("%" + std::to_string(id_) + " (" + std::string(op_name(n_.op)) + "): " + what);
  }

  const Node& operand(size_t k) const { return g_[n_.operands[k]]; }

  /** Arity and operand order; false when the operands cannot be looked at. */
  bool check_operands() {
    int arity = op_info(n_.op).arity;
    if (arity >= 0 && n_.operands.size() != static_cast<size_t>(arity)) {
      report("expects " + std::to_string(arity) + " operands, has " +
             std::to_string(n_.operands.size()));
      return false;
    }
    bool ok = true;
    for (NodeId o : n_.operands) {
      if (o < 0 || o >= id_) {
        report("operand %" + std::to_string(o) + " does not precede its user");
        ok = false;
      }
    }
    return ok;
  }

  void check_elementwise_shapes() {
    for (size_t k = 0; k < n_.operands.size(); ++k)
      if (!same_shape(operand(k).shape, n_.shape))
        report("operand %" + std::to_string(n_.operands[k]) + " has shape " +
               shape_str(operand(k).shape) + " but the node has " + shape_str(n_.shape));
  }

  void require(bool ok, const std::string& what) {
    if (!ok) report(what);
  }

  void check_dtypes() {
    DType t = n_.dtype;
    OpClass cls = op_info(n_.op).cls;
    if (cls == OpClass::unary) {
      DType a = operand(0).dtype;
      require(a == t, "operand dtype " + dt(a) + " differs from the result's " + dt(t));
      bool float_only = n_.op == Op::recip || n_.op == Op::sqrt || n_.op == Op::exp2 ||
                        n_.op == Op::log2 || n_.op == Op::sin;
      if (float_only) require(is_float(a), "needs a float dtype, got " + dt(a));
      if (n_.op == Op::logical_not)
        require(is_int(a) || a == DType::boolean, "needs an integer or bool dtype, got " + dt(a));
    } else if (cls == OpClass::binary) {
      check_binary_dtypes();
    } else if (n_.op == Op::where) {
      require(operand(0).dtype == DType::boolean,
              "condition has dtype " + dt(operand(0).dtype) + ", not bool");
      for (size_t k = 1; k < 3; ++k)
        require(operand(k).dtype == t, "operand %" + std::to_string(n_.operands[k]) +
                                           " has dtype " + dt(operand(k).dtype) +
                                           " but the node has " + dt(t));
    } else if (n_.op == Op::mulacc) {
      for (size_t k = 0; k < 3; ++k)
        require(operand(k).dtype == t, "operand %" + std::to_string(n_.operands[k]) +
                                           " has dtype " + dt(operand(k).dtype) +
                                           " but the node has " + dt(t));
    } else if (n_.op == Op::bitcast) {
      require(
          dtype_bits(operand(0).dtype) == dtype_bits(t),
          "bitcast between types of different widths: " + dt(operand(0).dtype) + " -> " + dt(t));
    } else if (n_.op == Op::view || n_.op == Op::copy || n_.op == Op::reduce || n_.op == Op::scan ||
               n_.op == Op::gather || n_.op == Op::scatter) {
      require(operand(0).dtype == t,
              "operand dtype " + dt(operand(0).dtype) + " differs from the result's " + dt(t));
    }
  }

  void check_binary_dtypes() {
    DType a = operand(0).dtype, b = operand(1).dtype;
    if (a != b) {
      report("operand dtypes differ: " + dt(a) + " and " + dt(b));
      return;
    }
    bool compare = n_.op == Op::cmplt || n_.op == Op::cmpeq;
    DType expected = compare ? DType::boolean : a;
    require(n_.dtype == expected, "result dtype " + dt(n_.dtype) + " should be " + dt(expected));
    bool int_only = n_.op == Op::idiv || n_.op == Op::shl || n_.op == Op::shr;
    bool int_or_bool = n_.op == Op::bit_and || n_.op == Op::bit_or || n_.op == Op::bit_xor;
    if (int_only) require(is_int(a), "needs an integer dtype, got " + dt(a));
    if (int_or_bool)
      require(is_int(a) || a == DType::boolean, "needs an integer or bool dtype, got " + dt(a));
  }

  /** index: an integer tensor of src's rank, equal to it but along `axis`, and the result's
   *  shape. */
  void check_gather() {
    const Node& index = operand(1);
    require(same_shape(index.shape, n_.shape), "index has shape " + shape_str(index.shape) +
                                                   " but the node has " + shape_str(n_.shape));
    check_index_along(operand(0).shape, "source");
  }

  /** base: the result's shape; index and src: one shape, equal to base's but along `axis`;
   *  src: base's dtype; a scatter combiner. */
  void check_scatter() {
    const Node &base = operand(0), &index = operand(1), &src = operand(2);
    require(same_shape(base.shape, n_.shape),
            "base has shape " + shape_str(base.shape) + " but the node has " + shape_str(n_.shape));
    require(src.dtype == n_.dtype,
            "src has dtype " + dt(src.dtype) + " but the node has " + dt(n_.dtype));
    require(same_shape(index.shape, src.shape), "index of shape " + shape_str(index.shape) +
                                                    " differs from src's " + shape_str(src.shape));
    require(
        is_scatter_combiner(n_.combine),
        "scatter combiner '" + std::string(op_name(n_.combine)) + "' is not one of add, mul, max");
    require(n_.dtype != DType::boolean || n_.combine == Op::max,
            "scatter combiner '" + std::string(op_name(n_.combine)) + "' of a bool tensor");
    check_index_along(base.shape, "base");
  }

  /** Operand 1, the positions: an integer tensor of `target`'s rank, equal to it in every
   *  dimension but `axis`. */
  void check_index_along(const Shape& target, const std::string& what) {
    const Node& index = operand(1);
    require(is_int(index.dtype), "index has dtype " + dt(index.dtype) + ", not an integer");
    if (n_.axis < 0 || n_.axis >= static_cast<int>(target.size())) {
      report("axis " + std::to_string(n_.axis) + " is out of range for rank " +
             std::to_string(target.size()));
      return;
    }
    bool fits = index.shape.size() == target.size();
    for (size_t d = 0; fits && d < target.size(); ++d)
      fits = static_cast<int>(d) == n_.axis || index.shape[d] == target[d];
    require(fits, "index of shape " + shape_str(index.shape) + " does not fit " + what + " " +
                      shape_str(target) + " along axis " + std::to_string(n_.axis));
  }

  void check_view() {
    const View& v = n_.view;
    size_t rank = operand(0).shape.size();
    require(v.index.size() == rank, "view has " + std::to_string(v.index.size()) +
                                        " index expressions for a source of rank " +
                                        std::to_string(rank));
    require(same_shape(v.shape, n_.shape),
            "view shape " + shape_str(v.shape) + " differs from the node's " + shape_str(n_.shape));
    std::set<std::string> vars;
    for (const IntExpr& e : v.index)
      e.collect_vars(vars);
    for (const MaskBound& m : v.mask)
      m.expr.collect_vars(vars);
    for (const std::string& name : vars) {
      if (name[0] != '%') continue;
      bool ok = name.size() > 1 && name.find_first_not_of("0123456789", 1) == std::string::npos &&
                name.size() < 10 && std::stoul(name.substr(1)) < v.shape.size();
      require(ok, "index variable " + name + " is outside the view's rank " +
                      std::to_string(v.shape.size()));
    }
  }

  void check_reduce() {
    const Shape& src = operand(0).shape;
    Shape expected = src;
    for (size_t k = 0; k < n_.axes.size(); ++k) {
      int ax = n_.axes[k];
      if (ax < 0 || ax >= static_cast<int>(src.size())) {
        report("reduce axis " + std::to_string(ax) + " is out of range for rank " +
               std::to_string(src.size()));
        return;
      }
      if (k > 0 && ax <= n_.axes[k - 1]) {
        report("reduce axes are not ascending and unique");
        return;
      }
      expected[ax] = 1;
    }
    require(same_shape(expected, n_.shape),
            "shape " + shape_str(n_.shape) + " should be " + shape_str(expected));
    for (const IntExpr& d : n_.domain) {
      std::set<std::string> vars;
      d.collect_vars(vars);
      for (const std::string& name : vars)
        require(name[0] != '%' || axis_variable(name, src.size()),
                "domain bound " + d.str() + " >= 0 uses " + name + ", outside the operand's rank " +
                    std::to_string(src.size()));
    }
  }

  void check_scan() {
    const Shape& src = operand(0).shape;
    if (n_.axes.size() != 1 || n_.axes[0] < 0 || n_.axes[0] >= static_cast<int>(src.size())) {
      report("a scan needs one axis within the operand's rank " + std::to_string(src.size()));
      return;
    }
    require(same_shape(src, n_.shape),
            "shape " + shape_str(n_.shape) + " should be " + shape_str(src));
    if (!is_scan_combiner(n_.combine)) {
      report("scan combiner '" + std::string(op_name(n_.combine)) +
             "' is not one of add, mul, max, and, or, xor");
      return;
    }
    DType t = operand(0).dtype;
    bool bitwise = n_.combine != Op::add && n_.combine != Op::mul && n_.combine != Op::max;
    require(!(bitwise && is_float(t)), "scan combiner '" + std::string(op_name(n_.combine)) +
                                           "' needs an integer or bool dtype, got " + dt(t));
    require(!(t == DType::boolean && !bitwise && n_.combine != Op::max),
            "scan combiner '" + std::string(op_name(n_.combine)) + "' of a bool tensor");
  }

  /** "%k" with k < rank. */
  static bool axis_variable(const std::string& name, size_t rank) {
    return name.size() > 1 && name.size() < 10 &&
           name.find_first_not_of("0123456789", 1) == std::string::npos &&
           std::stoul(name.substr(1)) < rank;
  }

  /** The routine's operand rule, and the node's type against the type the rule gives. */
  void check_extern() {
    std::vector<ValueType> types;
    for (size_t k = 0; k < n_.operands.size(); ++k)
      types.push_back({operand(k).dtype, operand(k).shape});
    ExternResult r = extern_result_type(n_.name, types);
    if (!r.error.empty()) {
      report(r.error);
      return;
    }
    require(n_.dtype == r.type.dtype && same_shape(n_.shape, r.type.shape),
            "result type " + dt(n_.dtype) + shape_str(n_.shape) + " should be " + dt(r.type.dtype) +
                shape_str(r.type.shape));
  }

  void check_size_vars() {
    std::set<std::string> vars;
    for (const IntExpr& d : n_.shape)
      d.collect_vars(vars);
    if (n_.op == Op::view) {
      for (const IntExpr& e : n_.view.index)
        e.collect_vars(vars);
      for (const MaskBound& m : n_.view.mask) {
        m.expr.collect_vars(vars);
        m.bound.collect_vars(vars);
      }
    }
    for (const std::string& name : vars)
      if (name[0] != '%' &&
          std::find(g_.size_vars.begin(), g_.size_vars.end(), name) == g_.size_vars.end())
        report("size variable '" + name + "' is not among the graph's size variables");
  }

  const Graph& g_;
  NodeId id_;
  const Node& n_;
  std::vector<std::string>& out_;
};

}  // namespace

std::vector<std::string> verify(const Graph& g) {
  std::vector<std::string> problems;
  for (NodeId id = 0; id < static_cast<NodeId>(g.size()); ++id)
    NodeChecker(g, id, problems).run();
  for (size_t k = 0; k < g.inputs.size(); ++k) {
    NodeId id = g.inputs[k];
    bool exists = id >= 0 && id < static_cast<NodeId>(g.size());
    if (!exists || g[id].op != Op::input)
      problems.push_back("input #" + std::to_string(k) + ": %" + std::to_string(id) +
                         (exists ? " is not an input node" : " does not exist"));
  }
  for (const GraphOutput& o : g.outputs)
    if (o.node < 0 || o.node >= static_cast<NodeId>(g.size()))
      problems.push_back("output '" + o.name + "': %" + std::to_string(o.node) + " does not exist");
  return problems;
}

void verify_or_throw(const Graph& g) {
  std::vector<std::string> problems = verify(g);
  if (!problems.empty()) throw std::logic_error(problems.front());
}

}  // namespace kiln
