#include "backends/c_style.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <stdexcept>

#include "backends/c_externs.h"
#include "backends/c_prelude.h"

namespace kiln {

namespace {

std::string size_name(const std::string& v) {
  return "s_" + v;
}

std::string atom_to_c(const IntAtom& a, const std::set<std::string>& sizes) {
  switch (a.kind) {
    case IntAtom::Kind::var:
      return sizes.count(a.name) ? size_name(a.name) : a.name;
    case IntAtom::Kind::floordiv:
    case IntAtom::Kind::mod: {
      // A run-time divisor takes the non-trapping variant (backends/c_prelude.cpp).
      std::string fn = a.kind == IntAtom::Kind::floordiv ? "kiln_fdiv" : "kiln_fmod";
      if (!a.b.as_constant()) fn += "_v";
      return fn + "(" + int_expr_to_c(a.a, sizes) + ", " + int_expr_to_c(a.b, sizes) + ")";
    }
  }
  return "?";
}

std::string int_type(DType t) {
  switch (t) {
    case DType::i64:
      return "int64_t";
    case DType::i32:
      return "int32_t";
    case DType::i16:
      return "int16_t";
    case DType::i8:
      return "int8_t";
    case DType::u8:
    case DType::boolean:
      return "uint8_t";
    default:
      return "?";
  }
}

}  // namespace

bool has_runtime_divisor(const IntExpr& e) {
  for (const IntExpr::Term& t : e.terms())
    for (const auto& f : t.factors)
      if (f->kind != IntAtom::Kind::var &&
          (!f->b.as_constant() || has_runtime_divisor(f->a) || has_runtime_divisor(f->b)))
        return true;
  return false;
}

std::string int_expr_to_c(const IntExpr& e, const std::set<std::string>& sizes) {
  if (e.terms().empty()) return "0";
  std::string s;
  for (const IntExpr::Term& t : e.terms()) {
    std::string term = std::to_string(t.coeff < 0 ? -t.coeff : t.coeff);
    if (!t.factors.empty()) {
      term = (t.coeff == 1 || t.coeff == -1) ? "" : term + " * ";
      for (size_t k = 0; k < t.factors.size(); ++k)
        term += (k ? " * " : "") + atom_to_c(*t.factors[k], sizes);
    }
    if (s.empty())
      s = (t.coeff < 0 ? "-" : "") + term;
    else
      s += (t.coeff < 0 ? " - " : " + ") + term;
  }
  return "(" + s + ")";
}

std::string ast_expr_to_c(const AstExpr& e) {
  switch (e.kind) {
    case AstExpr::Kind::integer:
      return std::to_string(e.value);
    case AstExpr::Kind::iterator:
      return e.name;
    case AstExpr::Kind::param:
      return size_name(e.name);
    case AstExpr::Kind::op:
      break;
  }
  auto arg = [&](size_t k) { return ast_expr_to_c(*e.args[k]); };
  static const std::map<std::string, std::string> kInfix = {
      {"add", "+"},    {"sub", "-"},    {"mul", "*"},  {"div", "/"}, {"pdiv_q", "/"},
      {"pdiv_r", "%"}, {"zdiv_r", "%"}, {"and", "&&"}, {"or", "||"}, {"eq", "=="},
      {"le", "<="},    {"lt", "<"},     {"ge", ">="},  {"gt", ">"}};
  if (auto it = kInfix.find(e.op); it != kInfix.end())
    return "(" + arg(0) + " " + it->second + " " + arg(1) + ")";
  if (e.op == "minus") return "(-" + arg(0) + ")";
  if (e.op == "fdiv_q") return "kiln_fdiv(" + arg(0) + ", " + arg(1) + ")";
  if (e.op == "min" || e.op == "max") {
    std::string s = arg(0);
    for (size_t k = 1; k < e.args.size(); ++k)
      s = "(" + s + (e.op == "min" ? " < " : " > ") + arg(k) + " ? " + s + " : " + arg(k) + ")";
    return s;
  }
  if (e.op == "select") return "(" + arg(0) + " ? " + arg(1) + " : " + arg(2) + ")";
  throw std::runtime_error("cannot render isl AST operation '" + e.op + "'");
}

std::string CStyleRenderer::prelude() const {
  return std::string(kCPreludeHead) + kPreludeFunctions;
}

std::string CStyleRenderer::signature(const std::string& symbol) const {
  return "void " + symbol + "(void* const* restrict buffers, const int64_t* restrict sizes)";
}

std::string CStyleRenderer::loop_annotation(const LoopNode&, const LoopSite&) const {
  return "";
}

std::string CStyleRenderer::compute_type(DType t) const {
  if (t == DType::f64) return "double";
  if (is_float(t)) return "float";
  return int_type(t);
}

std::string CStyleRenderer::storage_type(DType t) const {
  if (t == DType::f16 || t == DType::bf16) return "uint16_t";
  return compute_type(t);
}

std::string CStyleRenderer::float_literal(double v, DType t) const {
  std::string suffix = t == DType::f64 ? "" : "f";
  if (std::isnan(v)) return t == DType::f64 ? "((double)KILN_NAN)" : "KILN_NAN";
  if (std::isinf(v))
    return std::string(v < 0 ? "-" : "") + (t == DType::f64 ? "((double)KILN_INF)" : "KILN_INF");
  char buf[40];
  std::snprintf(buf, sizeof buf, t == DType::f64 ? "%.17g" : "%.9g", v);
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s + suffix;
}

std::string CStyleRenderer::math_call(const std::string& fn, DType t, const std::string& a) const {
  return "__builtin_" + fn + (t == DType::f64 ? "" : "f") + "(" + a + ")";
}

std::string CStyleRenderer::extern_helpers(const KernelPlan& plan) const {
  return c_extern_helpers(plan);
}

std::string CStyleRenderer::extern_call(const KernelPlan& plan, const Statement& st) const {
  return c_extern_call(plan, st);
}

std::vector<std::string> CStyleRenderer::extern_symbols(const KernelPlan& plan) const {
  return c_extern_symbols(plan);
}

std::string CStyleRenderer::render(const KernelPlan& plan, const std::vector<LoopNest>& nests,
                                   const std::vector<std::string>& symbols,
                                   const RenderOptions& options) const {
  std::string s = prelude() + extern_helpers(plan) + plan_declarations(plan);
  if (options.bounds_checks) s += bounds_check_helpers();
  for (size_t k = 0; k < plan.kernels.size(); ++k)
    s += "\n" + render_function(plan, plan.kernels[k], nests[k], symbols[k], options);
  return s;
}

std::string CStyleRenderer::render_function(const KernelPlan& plan, const Kernel& k,
                                            const LoopNest& nest, const std::string& symbol,
                                            const RenderOptions& options) const {
  // The loops live in a static function whose buffer parameters are `restrict`: compilers
  // honour restrict on parameters (LLVM's noalias), not on locals, so this is what lets them
  // keep accumulators in registers and vectorise without runtime alias checks.
  Context c{plan, k,  options, nest,    {plan.size_vars.begin(), plan.size_vars.end()},
            {},   {}, {},      nullptr, {}};
  std::string params, call;
  for (size_t v = 0; v < plan.size_vars.size(); ++v) {
    params +=
        std::string(params.empty() ? "" : ", ") + "const int64_t " + size_name(plan.size_vars[v]);
    call += std::string(call.empty() ? "" : ", ") + "sizes[" + std::to_string(v) + "]";
  }
  int args = 0;
  for (const Buffer& b : plan.buffers)
    if (b.kind != BufferKind::temp) ++args;
  for (int b : k.buffers) {
    const Buffer& buf = plan.buffers[b];
    int slot = buf.kind == BufferKind::temp ? args + buf.slot : buf.arg;
    std::string type = storage_type(buf.dtype);
    std::string qual = buf.kind == BufferKind::input ? "const " : "";
    params += std::string(params.empty() ? "" : ", ") + qual + type + "* restrict b" +
              std::to_string(b) + " /* " + buf.name + " */";
    call += std::string(call.empty() ? "" : ", ") + "(" + qual + type + "*)buffers[" +
            std::to_string(slot) + "]";
  }
  std::string s = loops_qualifier() + "void " + symbol + "_loops(" + params + ") {\n";
  s += render_node(c, *nest.root, 1) + "}\n\n";
  return s + entry(plan, nest, symbol, symbol + "_loops(" + call + ")");
}

std::string CStyleRenderer::bounds_check_helpers() const {
  return kCBoundsCheck;
}

std::string CStyleRenderer::plan_declarations(const KernelPlan&) const {
  return "";
}

std::string CStyleRenderer::loops_qualifier() const {
  return "static ";
}

std::string CStyleRenderer::entry(const KernelPlan&, const LoopNest&, const std::string& symbol,
                                  const std::string& call) const {
  return signature(symbol) + " {\n  " + call + ";\n}\n";
}

std::string CStyleRenderer::loop_header(const Context&, const LoopNode& n, const std::string& init,
                                        const std::string& cond) const {
  return "for (int64_t " + n.iter + " = " + init + "; " + cond + "; " + n.iter +
         " += " + std::to_string(n.step) + ")";
}

std::string CStyleRenderer::barrier() const {
  throw std::runtime_error("the C renderer has no barrier: kernels run on one CPU thread");
}

std::string CStyleRenderer::single_condition() const {
  return "";
}

std::string CStyleRenderer::bind_iterators(const std::vector<AstExprPtr>& args,
                                           const std::string& pad) const {
  std::string s;
  for (size_t k = 0; k < args.size(); ++k)
    if (args[k])
      s += pad + "const int64_t " + iterator_name(static_cast<int>(k)) + " = " +
           ast_expr_to_c(*args[k]) + ";\n";
  return s;
}

namespace {

/** A perfect nest of parallel loops below and including `n`: its depth. */
int parallel_depth(const LoopNode& n) {
  if (n.kind == LoopNode::Kind::block && n.body.size() == 1) return parallel_depth(*n.body[0]);
  if (n.kind != LoopNode::Kind::loop || n.mapping != Mapping::parallel) return 0;
  return 1 + (n.body.size() == 1 ? parallel_depth(*n.body[0]) : 0);
}

}  // namespace

std::string CStyleRenderer::render_loop(const Context& c, const LoopNode& n, int depth,
                                        int collapsed) const {
  std::string pad(2 * depth, ' ');
  LoopSite site{c.kernel, n.reduction ? c.accumulator : nullptr};
  site.collapsed = collapsed > 0;
  if (n.mapping == Mapping::parallel && !site.collapsed) site.collapse = parallel_depth(n);
  std::string note = loop_annotation(n, site);
  std::string s = note.empty() ? "" : pad + note + "\n";
  // The condition without its outer parentheses: OpenMP's canonical loop form (which GCC
  // enforces) wants `iter < bound`, not `(iter < bound)`.
  std::string cond = ast_expr_to_c(*n.cond);
  if (n.cond->kind == AstExpr::Kind::op && n.cond->op != "select" && cond.front() == '(' &&
      cond.back() == ')')
    cond = cond.substr(1, cond.size() - 2);
  s += pad + loop_header(c, n, ast_expr_to_c(*n.init), cond) + " {\n";
  // The loops a parallel annotation collapsed are the next ones down a perfect nest.
  int inner = site.collapsed ? collapsed - 1 : site.collapse - 1;
  c.loops.push_back(&n);
  for (const LoopNodePtr& child : n.body)
    s += render_node(c, *child, depth + 1, n.body.size() == 1 ? inner : 0);
  c.loops.pop_back();
  return s + pad + "}\n";
}

std::string CStyleRenderer::nest_runs(const LoopNode& n) const {
  std::vector<const LoopNode*> loops;
  if (n.body.size() == 1) perfect_nest(*n.body[0], loops);
  std::string runs;
  for (const LoopNode* l : loops) {
    AstExprPtr first = substitute(l->cond, l->iter, l->init);
    runs += (runs.empty() ? "" : " && ") + ast_expr_to_c(*first);
  }
  return runs.empty() ? "1" : runs;
}

std::string CStyleRenderer::render_alloc(const Context& c, const LoopNode& n, int depth) const {
  std::string pad(2 * depth, ' ');
  const Statement& st = c.kernel.statements.at(n.statement);
  DType dtype = c.plan.buffers[st.buffer].dtype;
  std::string type = compute_type(dtype);
  // The element's index, from the iterators outside the nest.
  std::string s = pad + "{\n" + bind_iterators(n.args, pad + "  ");
  std::string element = render_index(c, st.buffer, st.index);
  // Loads and stores only when the nest runs: its loops are rectangular, so it runs when each
  // loop's condition holds at its first value.
  s += pad + "  if (" + nest_runs(n) + ") {\n";
  s += pad + "    " + type + " " + n.name + " = " + from_storage(dtype, element) + ";\n";
  const LoopNode* outer = c.accumulator;
  c.accumulator = &n;
  c.promoted[&st] = n.name;
  for (const LoopNodePtr& child : n.body)
    s += render_node(c, *child, depth + 2);
  c.promoted.erase(&st);
  c.accumulator = outer;
  s += pad + "    " + element + " = " + to_storage(dtype, n.name) + ";\n";
  return s + pad + "  }\n" + pad + "}\n";
}

std::string CStyleRenderer::render_node(const Context& c, const LoopNode& n, int depth,
                                        int collapsed) const {
  std::string pad(2 * depth, ' ');
  std::string s;
  switch (n.kind) {
    case LoopNode::Kind::block:
      for (const LoopNodePtr& child : n.body)
        s += render_node(c, *child, depth, n.body.size() == 1 ? collapsed : 0);
      return s;
    case LoopNode::Kind::loop:
      return render_loop(c, n, depth, collapsed);
    case LoopNode::Kind::alloc:
      return render_alloc(c, n, depth);
    case LoopNode::Kind::barrier:
      return pad + barrier() + "\n";
    case LoopNode::Kind::single: {
      std::string cond = single_condition();
      if (cond.empty()) {
        for (const LoopNodePtr& child : n.body)
          s += render_node(c, *child, depth);
        return s;
      }
      s += pad + "if (" + cond + ") {\n";
      for (const LoopNodePtr& child : n.body)
        s += render_node(c, *child, depth + 1);
      return s + pad + "}\n";
    }
    case LoopNode::Kind::guard:
      s += pad + "if " + ast_expr_to_c(*n.cond) + " {\n";
      for (const LoopNodePtr& child : n.body)
        s += render_node(c, *child, depth + 1);
      return s + pad + "}\n";
    case LoopNode::Kind::stmt: {
      s += pad + "{\n" + bind_iterators(n.args, pad + "  ");
      const Statement& st = c.kernel.statements[n.statement];
      c.bound.clear();
      c.index_bound.clear();
      // Shared subexpressions first: binding them fills c.bound, which the statement reads.
      std::string text = st.value ? bind_shared(c, *st.value) : "";
      text += render_statement(c, st);
      for (size_t from = 0, to; from < text.size(); from = to + 1) {
        to = std::min(text.find('\n', from), text.size());
        s += pad + "  " + text.substr(from, to - from) + "\n";
      }
      return s + pad + "}\n";
    }
  }
  return s;
}

}  // namespace kiln
