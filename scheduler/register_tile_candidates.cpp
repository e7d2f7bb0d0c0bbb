// What register_tile may tile and the shape it takes (scheduler/register_tile.h): the
// statements a vector or matrix-unit tile runs, and the program's automatic tile shape. The
// transform itself is register_tile.cpp.
#include <set>

#include "scheduler/register_tile.h"

namespace kiln {

const ScalarExpr* matrix_factor(const KernelPlan& plan, const ScalarExpr& f, DType sum) {
  // A bf16 load as it is or widened to f32; an 8-bit integer widened to i32. Both exact.
  const ScalarExpr* load = &f;
  if (f.kind == ScalarExpr::Kind::op && f.op == Op::cast && f.args.size() == 1 && f.dtype == sum &&
      f.mask.empty())
    load = f.args[0].get();
  else if (sum == DType::i32)
    return nullptr;
  if (load->kind != ScalarExpr::Kind::load || is_gather(*load)) return nullptr;
  DType t = plan.buffers.at(load->buffer).dtype;
  bool ok = sum == DType::f32 ? t == DType::bf16 && load->dtype == DType::bf16
                              : (t == DType::i8 || t == DType::u8) && load->dtype == t;
  return ok ? load : nullptr;
}

bool matrix_statement(const KernelPlan& plan, const Statement& s, bool bf16, bool int8) {
  if (s.kind != Statement::Kind::reduce_update || s.reduce != ReduceKind::sum || !s.value ||
      !s.domain.empty())
    return false;
  DType sum = plan.buffers.at(s.buffer).dtype;
  if (!(sum == DType::f32 && bf16) && !(sum == DType::i32 && int8)) return false;
  const ScalarExpr& v = *s.value;
  if (v.kind != ScalarExpr::Kind::op || v.op != Op::mul || v.args.size() != 2 || !v.mask.empty())
    return false;
  for (const ScalarExprPtr& f : v.args) {
    const ScalarExpr* l = matrix_factor(plan, *f, sum);
    if (!l || l->buffer == s.buffer) return false;
  }
  return true;
}

bool tileable_statement(const KernelPlan& plan, const Statement& s,
                        const std::set<std::string>& lanes, bool bf16, bool int8) {
  if ((bf16 || int8) && matrix_statement(plan, s, bf16, int8)) return true;
  if (s.kind != Statement::Kind::reduce_update || s.reduce != ReduceKind::sum || !s.value ||
      !s.domain.empty())
    return false;
  DType t = plan.buffers.at(s.buffer).dtype;
  if (t != DType::f32 && t != DType::f64) return false;
  std::vector<const ScalarExpr*> loads;
  collect_loads(*s.value, loads);
  for (const ScalarExpr* l : loads)
    if (l->buffer == s.buffer) return false;
  return lane_value(plan, *s.value, lanes, t);
}

RegisterTileShape automatic_tile_shape(const KernelPlan& plan, int full_width_bytes) {
  RegisterTileShape one_loop =
      full_width_bytes >= 64 ? RegisterTileShape{6, 4, 256, 64} : RegisterTileShape{3, 8, 256, 32};
  // Several reduction loops (a convolution's channels and window): the lanes are an image's
  // row, often short (56, 28, 14), so two vectors wide; with 32 vector registers 8 rows of them
  // (16 sums, 8 broadcasts a k step; 6-12 % faster than 6 rows on a Sapphire Rapids core at
  // 56² to 14², docs/performance.md).
  RegisterTileShape several =
      full_width_bytes >= 64 ? RegisterTileShape{8, 2, 256, 64} : RegisterTileShape{6, 2, 256, 64};
  for (const Kernel& k : plan.kernels)
    for (const Statement& s : k.statements) {
      if (s.extents.size() < 3) continue;
      std::set<std::string> all, written;
      for (size_t a = 0; a < s.extents.size(); ++a)
        all.insert(iterator_name(static_cast<int>(a)));
      if (!tileable_statement(plan, s, all)) continue;
      for (const IntExpr& e : s.index)
        e.collect_vars(written);
      size_t reduced = 0;
      for (const std::string& v : all)
        reduced += !written.count(v);
      if (reduced > 1) return several;
    }
  return one_loop;
}

bool has_register_tile_candidate(const KernelPlan& plan, const Kernel& k, bool bf16, bool int8) {
  for (const Statement& s : k.statements) {
    // A sum that reads each element once (a pooling) has no operand for a tile to keep.
    if (s.extents.size() < 3 || !reuses_a_load(s)) continue;
    std::set<std::string> all;
    for (size_t a = 0; a < s.extents.size(); ++a)
      all.insert(iterator_name(static_cast<int>(a)));
    if (tileable_statement(plan, s, all, bf16, int8)) return true;
    // A select whose condition uses some iterators is a lane value only along the others: try
    // the lanes the statement's last written dimension moves along.
    std::set<std::string> last;
    for (size_t d = s.index.size(); d-- > 0 && last.empty();)
      s.index[d].collect_vars(last);
    if (!last.empty() && tileable_statement(plan, s, last, bf16, int8)) return true;
  }
  return false;
}

}  // namespace kiln
