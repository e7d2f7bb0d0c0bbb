// The C-style rendering of the CPU's register tiles (scheduler/register_tile.h) and packed
// panels: vector types and their masked loads and stores, each tile's vectors loaded before its
// body and stored after, the vector updates of its rows, and the fill of a packed panel.
#include <algorithm>
#include <functional>
#include <map>
#include <stdexcept>

#include "backends/c_style.h"
#include "backends/packed_weights.h"

namespace kiln {

namespace {

/** The local holding row `r` of register tile `t` when the tile has a row count: the row, or
 *  the last existing one past the count (bound by render_tile). */
std::string clamped_row(const LoopNode& t, int64_t r) {
  return t.name + "_row" + std::to_string(r);
}

/** A stmt's or alloc's args at row `r` and lane offset `lane` of register tile `t`; a row past
 *  the tile's row count (tile_row_count) takes the last existing row's. */
std::vector<AstExprPtr> tile_args(const LoopNode& t, const std::vector<AstExprPtr>& args, int64_t r,
                                  int64_t lane) {
  AstExprPtr row = t.tile_row_count && r > 0 ? ast_iter(clamped_row(t, r))
                                             : ast_op("add", {t.tile_row_origin, ast_int(r)});
  AstExprPtr col = ast_op("add", {t.tile_lane_origin, ast_int(lane)});
  std::vector<AstExprPtr> out;
  for (const AstExprPtr& a : args)
    out.push_back(a ? substitute(substitute(a, t.tile_row, row), t.tile_lane, col) : nullptr);
  return out;
}

/** The local holding lane `l` of a register tile along k (LoopNode::k_lanes) that has a lane
 *  count: the lane, or the last existing one past the count (bound by render_k_tile). */
std::string clamped_lane(const LoopNode& t, int64_t l) {
  return t.name + "_lane" + std::to_string(l);
}

/** A stmt's or alloc's args at row `r` and lane `l` of register tile along k `t`; rows and
 *  lanes past the tile's counts take the last existing row's and lane's. */
std::vector<AstExprPtr> k_tile_args(const LoopNode& t, const std::vector<AstExprPtr>& args,
                                    int64_t r, int64_t l) {
  AstExprPtr row = t.tile_row_count && r > 0 ? ast_iter(clamped_row(t, r))
                                             : ast_op("add", {t.tile_row_origin, ast_int(r)});
  AstExprPtr col = t.tile_lane_count && l > 0 ? ast_iter(clamped_lane(t, l))
                                              : ast_op("add", {t.tile_lane_origin, ast_int(l)});
  std::vector<AstExprPtr> out;
  for (const AstExprPtr& a : args)
    out.push_back(a ? substitute(substitute(a, t.tile_row, row), t.tile_lane, col) : nullptr);
  return out;
}

/** The vector helpers of one element type; $-names are filled in by vector_helpers. */
const char* const kVectorHelpers = R"(typedef $T $V __attribute__((vector_size($B), aligned($A)));
typedef $I $VI __attribute__((vector_size($B)));
KILN_FN $V kiln_vld_$S(const $T* p) { $V v; memcpy(&v, p, sizeof v); return v; }
KILN_FN void kiln_vst_$S($T* p, $V v) { memcpy(p, &v, sizeof v); }
typedef $T $VA __attribute__((vector_size($B)));
#if defined(__clang__)
KILN_FN void kiln_vstnt_$S($T* p, $V v) { __builtin_nontemporal_store(($VA)v, ($VA*)p); }
#else
KILN_FN void kiln_vstnt_$S($T* p, $V v) { *($VA*)p = ($VA)v; }
#endif
)";

/** Lanes [lo, hi) of p + off, zeros elsewhere (a masked load): the processor's masked load
 *  where it has one ($MASKLOAD: AVX-512's or AVX's; lanes masked off are never touched), else
 *  the whole vector read and the other lanes cleared where it lies inside the buffer's `count`
 *  elements, else lane by lane. The store writes lanes [lo, hi) of v, by the processor's masked
 *  store where it has one ($MASKSTORE). Both take the whole vector when every lane is in. */
const char* const kMaskedHelpers =
    R"(KILN_FN $V kiln_vldm_$S(const $T* p, int64_t off, int64_t lo, int64_t hi, int64_t count) {
  if (lo <= 0 && hi >= $N) return kiln_vld_$S(p + off);
  int64_t a = lo > 0 ? lo : 0, e = hi < $N ? hi : $N;
$MASKLOAD  if (off >= 0 && off + $N <= count) {
    const $VI iota = $IOTA;
    $VI keep = (iota >= ($I)a) & (iota < ($I)e);
    return ($V)(($VI)kiln_vld_$S(p + off) & keep);
  }
  $T t[$N] = {0};
  for (int64_t l = a; l < e; ++l) t[l] = p[off + l];
  return kiln_vld_$S(t);
}
KILN_FN void kiln_vstm_$S($T* p, int64_t off, int64_t lo, int64_t hi, $V v) {
  if (lo <= 0 && hi >= $N) { kiln_vst_$S(p + off, v); return; }
  int64_t a = lo > 0 ? lo : 0, e = hi < $N ? hi : $N;
$MASKSTORE  $T t[$N];
  memcpy(t, &v, sizeof v);
  for (int64_t l = a; l < e; ++l) p[off + l] = t[l];
}
)";

/** The checked forms (--config CHECK=1): each element read or written is checked. */
const char* const kCheckedMaskedHelpers =
    R"(KILN_FN $V kiln_vldmc_$S(const $T* p, int64_t off, int64_t lo, int64_t hi, int64_t count, int64_t buffer) {
  $T t[$N] = {0};
  for (int64_t l = lo > 0 ? lo : 0; l < hi && l < $N; ++l) t[l] = p[kiln_check(off + l, count, buffer)];
  return kiln_vld_$S(t);
}
KILN_FN void kiln_vstmc_$S($T* p, int64_t off, int64_t lo, int64_t hi, $V v, int64_t count, int64_t buffer) {
  $T t[$N];
  memcpy(t, &v, sizeof v);
  for (int64_t l = lo > 0 ? lo : 0; l < hi && l < $N; ++l) p[kiln_check(off + l, count, buffer)] = t[l];
}
)";

/** The masked load's and store's lines on the processor's own masked accesses for vectors of
 *  `bytes` bytes (f64 lanes where `f64`): AVX-512's (a bit mask) for 64, AVX's (a vector of
 *  sign bits) for 32, each under its feature macro; none for other widths. Lanes [a, e) of
 *  the helpers' bodies ($-names still to fill). A partial register tile's loads then cost one
 *  instruction in its k loop, with no branch and nothing spilled around one. */
std::pair<std::string, std::string> hardware_masks(int bytes, bool f64) {
  const std::string sd = f64 ? "d" : "s";
  std::string feature, mask, load, store;
  if (bytes == 64) {
    feature = "__AVX512F__";
    mask = "    const unsigned kiln_m = e > a ? ((1u << e) - 1u) & ~((1u << a) - 1u) : 0u;\n";
    const std::string bits = f64 ? "(unsigned char)kiln_m" : "(unsigned short)kiln_m";
    load =
        "return ($V)__builtin_ia32_loadup" + sd + "512_mask(p + off, (kiln_vn){0}, " + bits + ");";
    store = "__builtin_ia32_storeup" + sd + "512_mask(p + off, (kiln_vn)v, " + bits + ");";
  } else if (bytes == 32) {
    feature = "__AVX__";
    mask =
        "    const $VI iota = $IOTA;\n    const $VI keep = (iota >= ($I)a) & (iota < ($I)e);\n"
        "    typedef " +
        std::string(f64 ? "long long" : "int") + " kiln_vk __attribute__((vector_size(32)));\n";
    load = "return ($V)__builtin_ia32_maskloadp" + sd +
           "256((const kiln_vn*)(p + off), (kiln_vk)keep);";
    store =
        "__builtin_ia32_maskstorep" + sd + "256((kiln_vn*)(p + off), (kiln_vk)keep, (kiln_vn)v);";
  } else {
    return {"", ""};
  }
  const std::string type =
      "    typedef $T kiln_vn __attribute__((vector_size(" + std::to_string(bytes) + ")));\n";
  return {"#if defined(" + feature + ")\n  {\n" + type + mask + "    " + load + "\n  }\n#endif\n",
          "#if defined(" + feature + ")\n  if (a < e) {\n" + type + mask + "    " + store +
              "\n    return;\n  }\n#endif\n"};
}

}  // namespace

std::string CStyleRenderer::vector_helpers(const RenderOptions& options) const {
  std::string s;
  bool checked = options.bounds_checks;
  for (DType t : {DType::f32, DType::f64}) {
    int bytes = dtype_bits(t) / 8, n = options.vector_bytes / bytes;
    std::string iota = "{";
    for (int l = 0; l < n; ++l)
      iota += (l ? ", " : "") + std::to_string(l);
    std::string name(dtype_name(t));
    const auto [load, store] = hardware_masks(options.vector_bytes, t == DType::f64);
    // Longer names before their prefixes: $IOTA before $I, $VI before $V.
    const std::pair<std::string, std::string> subst[] = {
        {"$MASKLOAD", load},
        {"$MASKSTORE", store},
        {"$IOTA", iota + "}"},
        {"$VI", "kiln_vi" + name.substr(1)},
        {"$VA", "kiln_va" + name},
        {"$V", "kiln_v" + name},
        {"$T", t == DType::f64 ? "double" : "float"},
        {"$I", t == DType::f64 ? "int64_t" : "int32_t"},
        {"$S", name},
        {"$B", std::to_string(options.vector_bytes)},
        {"$A", std::to_string(bytes)},
        {"$N", std::to_string(n)}};
    std::string text =
        std::string(kVectorHelpers) + (checked ? kCheckedMaskedHelpers : kMaskedHelpers);
    for (const auto& [from, to] : subst)
      for (size_t at = text.find(from); at != std::string::npos;
           at = text.find(from, at + to.size()))
        text.replace(at, from.size(), to);
    s += text;
  }
  // A vector of f16 or bf16 neighbours widened to f32 at once: vcvtph2ps where the processor
  // has F16C (else each lane by the portable conversion); a bf16 is the upper half of its f32.
  const std::string n = std::to_string(options.vector_bytes / 4),
                    half = std::to_string(options.vector_bytes / 2);
  s += "KILN_FN kiln_vf32 kiln_vld_f16(const uint16_t* p) {\n#ifdef KILN_F16C\n"
       "  typedef _Float16 kiln_vh __attribute__((vector_size(" +
       half +
       "), aligned(2)));\n"
       "  kiln_vh h; memcpy(&h, p, sizeof h); return __builtin_convertvector(h, kiln_vf32);\n"
       "#else\n  kiln_vf32 v; for (int l = 0; l < " +
       n +
       "; ++l) v[l] = kiln_f16_to_f32(p[l]); return v;\n#endif\n}\n"
       "KILN_FN kiln_vf32 kiln_vld_bf16(const uint16_t* p) {\n"
       "  typedef uint16_t kiln_vu16 __attribute__((vector_size(" +
       half +
       "), aligned(2)));\n"
       "  typedef uint32_t kiln_vu32 __attribute__((vector_size(" +
       std::to_string(options.vector_bytes) +
       ")));\n"
       "  kiln_vu16 h; memcpy(&h, p, sizeof h);\n"
       "  kiln_vu32 w = __builtin_convertvector(h, kiln_vu32) << 16;\n"
       "  kiln_vf32 v; memcpy(&v, &w, sizeof v); return v;\n}\n";
  s += "KILN_FN int64_t kiln_min_int(int64_t a, int64_t b) { return a < b ? a : b; }\n";
  // Orders a thread's non-temporal stores before whatever follows (another thread's reads).
  s += "KILN_FN void kiln_sfence(void) {\n#if defined(__x86_64__) || defined(__i386__)\n"
       "  __builtin_ia32_sfence();\n#endif\n}\n";
  return s;
}

std::string CStyleRenderer::lane_count(const LoopNode& tile, int64_t from) const {
  std::string count = ast_expr_to_c(*tile.tile_lane_count);
  return from == 0 ? count : "(" + count + " - " + std::to_string(from) + ")";
}

std::string CStyleRenderer::masked_vector(const Context& c, int buffer, const std::string& offset,
                                          const std::string& lo, const std::string& hi,
                                          const std::string& store) const {
  DType dtype = c.plan.buffers[buffer].dtype;
  std::string t = dtype == DType::f64 ? "f64" : "f32", b = "b" + std::to_string(buffer);
  std::string fn = (store.empty() ? "kiln_vldm" : "kiln_vstm") +
                   std::string(c.options.bounds_checks ? "c_" : "_") + t;
  std::string args =
      b + ", " + offset + ", " + lo + ", " + hi + (store.empty() ? "" : ", " + store);
  if (c.options.bounds_checks)
    args += ", " + buffer_elements(c, buffer) + ", " + std::to_string(buffer);
  else if (store.empty())
    args += ", " + buffer_elements(c, buffer);
  return fn + "(" + args + ")";
}

std::string CStyleRenderer::render_tile(const Context& c, const LoopNode& n, int depth) const {
  if (n.k_lanes > 0) return render_k_tile(c, n, depth);
  std::string pad(2 * depth, ' '), in = pad + "  ";
  const Statement& st = c.kernel.statements.at(n.statement);
  DType dtype = c.plan.buffers[st.buffer].dtype;
  std::string t = dtype == DType::f64 ? "f64" : "f32";
  int lanes = c.options.vector_bytes / (dtype_bits(dtype) / 8);
  if ((dtype != DType::f32 && dtype != DType::f64) || n.tile_lanes % lanes != 0)
    throw std::runtime_error("a register tile of " + std::to_string(n.tile_lanes) + " " +
                             std::string(dtype_name(dtype)) + " lanes does not fit vectors of " +
                             std::to_string(c.options.vector_bytes) + " bytes");
  // The tile's element offsets, from the iterators outside the nest, row by row; a partial
  // tile (tile_lane_count) reads and writes only the lanes that exist, and stores only the rows
  // that exist (tile_row_count; the others load the last row's elements and compute on them).
  auto each = [&](bool store, const std::string& in) {
    std::string out;
    for (int64_t r = 0; r < n.tile_rows; ++r) {
      bool guarded = store && n.tile_row_count && r > 0;
      if (guarded) out += in + "if (" + std::to_string(r) + " < " + n.name + "_rows) {\n";
      for (int64_t v = 0; v < n.tile_lanes / lanes; ++v) {
        std::string name = n.name + "_" + std::to_string(r) + "_" + std::to_string(v);
        std::string offset = int_expr_to_c(linear_index(c, st.buffer, st.index), c.sizes);
        std::string io;
        if (!n.tile_lane_count)
          io = store ? "kiln_vst_" + t + "(" + render_vector_address(c, st.buffer, offset, lanes) +
                           ", " + name + ")"
                     : name + " = kiln_vld_" + t + "(" +
                           render_vector_address(c, st.buffer, offset, lanes) + ")";
        else
          io =
              (store ? "" : name + " = ") +
              masked_vector(c, st.buffer, offset, "0", lane_count(n, v * lanes), store ? name : "");
        out += in + (guarded ? "  { " : "{ ") + bind_line(tile_args(n, n.args, r, v * lanes)) + io +
               "; }\n";
      }
      if (guarded) out += in + "}\n";
    }
    return out;
  };
  std::string s = pad + "{\n";
  if (n.tile_row_count) {
    std::string rows = n.name + "_rows", origin = ast_expr_to_c(*n.tile_row_origin);
    s += in + "const int64_t " + rows + " = " + ast_expr_to_c(*n.tile_row_count) + ";\n";
    for (int64_t r = 1; r < n.tile_rows; ++r)
      s += in + "const int64_t " + clamped_row(n, r) + " = " + origin + " + (" + std::to_string(r) +
           " < " + rows + " ? " + std::to_string(r) + " : " + rows + " - 1);\n";
  }
  for (int64_t r = 0; r < n.tile_rows; ++r) {
    s += in + "kiln_v" + t;
    for (int64_t v = 0; v < n.tile_lanes / lanes; ++v)
      s += std::string(v ? "," : "") + " " + n.name + "_" + std::to_string(r) + "_" +
           std::to_string(v);
    s += ";\n";
  }
  if (n.tile_fresh) {  // the first block starts from the sum's identity (the init folded in)
    s += in + "if (" + ast_expr_to_c(*n.tile_fresh) + ") {\n";
    for (int64_t r = 0; r < n.tile_rows; ++r)
      for (int64_t v = 0; v < n.tile_lanes / lanes; ++v)
        s += in + "  " + n.name + "_" + std::to_string(r) + "_" + std::to_string(v) + " = (kiln_v" +
             t + "){0};\n";
    s += in + "} else {\n" + each(false, in + "  ") + in + "}\n";
  } else {
    s += each(false, in);
  }
  const LoopNode* outer = c.tile;
  c.tile = &n;
  for (const LoopNodePtr& child : n.body)
    s += render_node(c, *child, depth + 1);
  c.tile = outer;
  s += each(true, in);
  return s + pad + "}\n";
}

std::string CStyleRenderer::render_k_tile(const Context& c, const LoopNode& n, int depth) const {
  std::string pad(2 * depth, ' '), in = pad + "  ";
  const Statement& st = c.kernel.statements.at(n.statement);
  DType dtype = c.plan.buffers[st.buffer].dtype;
  const std::string t = dtype == DType::f64 ? "f64" : "f32",
                    type = dtype == DType::f64 ? "double" : "float";
  const int64_t lanes = c.options.vector_bytes / (dtype_bits(dtype) / 8);
  if ((dtype != DType::f32 && dtype != DType::f64) || n.k_lanes != lanes || n.body.size() != 2)
    throw std::logic_error("a register tile along k of " + std::to_string(n.k_lanes) + " " +
                           std::string(dtype_name(dtype)) + " lanes for vectors of " +
                           std::to_string(c.options.vector_bytes) + " bytes");
  auto name = [&](const std::string& kind, int64_t r, int64_t l) {
    return n.name + kind + std::to_string(r) + "_" + std::to_string(l);
  };
  std::string s = pad + "{\n";
  // Rows and lanes past the counts read the last existing row's and lane's operands.
  if (n.tile_row_count) {
    std::string rows = n.name + "_rows", origin = ast_expr_to_c(*n.tile_row_origin);
    s += in + "const int64_t " + rows + " = " + ast_expr_to_c(*n.tile_row_count) + ";\n";
    for (int64_t r = 1; r < n.tile_rows; ++r)
      s += in + "const int64_t " + clamped_row(n, r) + " = " + origin + " + (" + std::to_string(r) +
           " < " + rows + " ? " + std::to_string(r) + " : " + rows + " - 1);\n";
  }
  if (n.tile_lane_count) {
    std::string count = n.name + "_lanes", origin = ast_expr_to_c(*n.tile_lane_origin);
    s += in + "const int64_t " + count + " = " + ast_expr_to_c(*n.tile_lane_count) + ";\n";
    for (int64_t l = 1; l < n.tile_lanes; ++l)
      s += in + "const int64_t " + clamped_lane(n, l) + " = " + origin + " + (" +
           std::to_string(l) + " < " + count + " ? " + std::to_string(l) + " : " + count +
           " - 1);\n";
  }
  for (int64_t r = 0; r < n.tile_rows; ++r)
    for (int64_t l = 0; l < n.tile_lanes; ++l)
      s += in + "kiln_v" + t + " " + name("_", r, l) + " = (kiln_v" + t + "){0};\n";
  const LoopNode* outer = c.tile;
  c.tile = &n;
  s += render_node(c, *n.body[0], depth + 1);
  // Each vector's lanes summed, then the k left one at a time.
  for (int64_t r = 0; r < n.tile_rows; ++r)
    for (int64_t l = 0; l < n.tile_lanes; ++l)
      s += in + type + " " + name("_s", r, l) + " = 0; { " + type + " kiln_h[" +
           std::to_string(lanes) + "]; memcpy(kiln_h, &" + name("_", r, l) +
           ", sizeof kiln_h); for (int kiln_l = 0; kiln_l < " + std::to_string(lanes) +
           "; ++kiln_l) " + name("_s", r, l) + " += kiln_h[kiln_l]; }\n";
  s += render_node(c, *n.body[1], depth + 1);
  c.tile = outer;
  // The sums stored (the init folded in) or added to the elements, those that exist.
  for (int64_t r = 0; r < n.tile_rows; ++r)
    for (int64_t l = 0; l < n.tile_lanes; ++l) {
      std::string cond;
      if (n.tile_row_count && r > 0) cond = std::to_string(r) + " < " + n.name + "_rows";
      if (n.tile_lane_count && l > 0)
        cond += (cond.empty() ? "" : " && ") + std::to_string(l) + " < " + n.name + "_lanes";
      c.bound.clear();
      c.index_bound.clear();
      std::string element = render_index(c, st.buffer, st.index);
      s += in + (cond.empty() ? "" : "if (" + cond + ") ") + "{ " +
           bind_line(k_tile_args(n, n.args, r, l)) + element + (n.tile_init >= 0 ? " = " : " += ") +
           name("_s", r, l) + "; }\n";
    }
  return s + pad + "}\n";
}

std::string CStyleRenderer::render_k_update(const Context& c, const LoopNode& n, int depth) const {
  const LoopNode& t = *c.tile;
  std::string pad(2 * depth, ' ');
  const Statement& st = c.kernel.statements.at(n.statement);
  std::string s;
  if (n.k_lanes == 0) {  // one k, on the summed scalars
    for (int64_t r = 0; r < t.tile_rows; ++r)
      for (int64_t l = 0; l < t.tile_lanes; ++l) {
        c.bound.clear();
        c.index_bound.clear();
        s += pad + "{ " + bind_line(k_tile_args(t, n.args, r, l)) + t.name + "_s" +
             std::to_string(r) + "_" + std::to_string(l) + " += " + render_value(c, *st.value) +
             "; }\n";
      }
    return s;
  }
  std::set<std::string> along = driven_iterators(n, t.k_iter),
                        lanes = driven_iterators(n, t.tile_lane),
                        rows = driven_iterators(n, t.tile_row);
  const std::string vt =
      "kiln_v" + std::string(c.plan.buffers[st.buffer].dtype == DType::f64 ? "f64" : "f32");
  std::vector<const ScalarExpr*> loads;
  collect_loads(*st.value, loads);
  // Each row's operands along k once (x's row), each lane's once (w's row j), then every
  // row by lane FMA.
  c.lane_limit.clear();
  std::vector<std::map<const ScalarExpr*, std::string>> by_row(t.tile_rows), by_lane(t.tile_lanes);
  auto bind_loads = [&](bool row_side, int64_t at) {
    for (size_t k = 0; k < loads.size(); ++k) {
      const ScalarExpr& e = *loads[k];
      if (!uses_vars(e, along) || uses_vars(e, row_side ? lanes : rows) ||
          !uses_vars(e, row_side ? rows : lanes))
        continue;
      std::string local =
          t.name + (row_side ? "_x" : "_w") + std::to_string(k) + "_" + std::to_string(at);
      c.bound.clear();
      c.index_bound.clear();
      c.lane_bound.clear();
      const std::string bind =
          bind_line(k_tile_args(t, n.args, row_side ? at : 0, row_side ? 0 : at));
      const std::string value = render_lanes(c, e, along);
      // f16 and bf16 along k: one vector widened at once (render_lanes: kiln_vld_f16 is
      // vcvtph2ps where the processor has F16C).
      s += pad + vt + " " + local + "; { " + bind + local + " = " + value + "; }\n";
      (row_side ? by_row[at] : by_lane[at])[&e] = local;
    }
  };
  for (int64_t r = 0; r < t.tile_rows; ++r)
    bind_loads(true, r);
  for (int64_t l = 0; l < t.tile_lanes; ++l)
    bind_loads(false, l);
  for (int64_t r = 0; r < t.tile_rows; ++r)
    for (int64_t l = 0; l < t.tile_lanes; ++l) {
      c.bound.clear();
      c.index_bound.clear();
      c.lane_bound = by_row[r];
      c.lane_bound.insert(by_lane[l].begin(), by_lane[l].end());
      s += pad + "{ " + bind_line(k_tile_args(t, n.args, r, l)) + t.name + "_" + std::to_string(r) +
           "_" + std::to_string(l) + " += " + render_lanes(c, *st.value, along) + "; }\n";
    }
  c.lane_bound.clear();
  return s;
}

std::string CStyleRenderer::pack_element(const Context& c, const LoopNode& pack, size_t k,
                                         int64_t lane) const {
  std::string tile;  // a pack of several lane tiles: the offset of this one
  if (pack.pack_lane_base) {
    auto kept = c.kept.find(&pack);
    tile = kept != c.kept.end() ? "(" + ast_expr_to_c(*pack.tile_lane_origin) + ") * (" +
                                      kept->second.tile_stride + ") + "
                                : "(" + ast_expr_to_c(*pack.tile_lane_origin) + " - " + pack.name +
                                      "_base) * " + std::to_string(pack.pack_depth) + " + ";
  }
  return pack.name + "_" + std::to_string(k) + "[" + tile + "(" + pack.pack_iter + " - " +
         ast_expr_to_c(*pack.pack_origin) + ") * " + std::to_string(pack.tile_lanes) + " + " +
         std::to_string(lane) + "]";
}

namespace {

/** The row operands of row pack `p` in statement node `n` (its fill or a tile's update). */
std::vector<const ScalarExpr*> row_operands(const Statement& st, const LoopNode& n,
                                            const LoopNode& p) {
  return row_operand_loads(st, driven_iterators(n, p.tile_row), driven_iterators(n, p.pack_iter),
                           driven_iterators(n, p.tile_lane));
}

/** Element (row `row` from the pack's origin, the current k) of row pack `p`'s array `k`. */
std::string row_element(const LoopNode& p, size_t k, const std::string& row) {
  return p.name + "_" + std::to_string(k) + "[(" + row + ") * " + std::to_string(p.pack_depth) +
         " + (" + p.pack_iter + " - " + ast_expr_to_c(*p.pack_origin) + ")]";
}

}  // namespace

std::string CStyleRenderer::render_row_pack(const Context& c, const LoopNode& n, int depth) const {
  std::string pad(2 * depth, ' ');
  const Statement& st = c.kernel.statements.at(n.statement);
  std::vector<const LoopNode*> fill = nodes_of(*n.body.at(0), LoopNode::Kind::stmt);
  if (fill.empty()) throw std::logic_error("a row pack without its fill statement");
  const std::string type = st.value->dtype == DType::f64 ? "double" : "float";
  std::string s = pad + "{\n";
  for (size_t k = 0; k < row_operands(st, *fill[0], n).size(); ++k)
    s += pad + "  " + type + " " + n.name + "_" + std::to_string(k) + "[" +
         std::to_string(n.tile_rows * n.pack_depth) + "] __attribute__((aligned(64)));\n";
  const LoopNode* filling = c.filling;
  c.filling = &n;
  s += render_node(c, *n.body[0], depth + 1);
  c.filling = filling;
  const LoopNode* outer = c.row_pack;
  c.row_pack = &n;
  for (size_t i = 1; i < n.body.size(); ++i)
    s += render_node(c, *n.body[i], depth + 1);
  c.row_pack = outer;
  return s + pad + "}\n";
}

std::string CStyleRenderer::render_row_fill(const Context& c, const LoopNode& n, int depth) const {
  const LoopNode& p = *c.filling;
  const Statement& st = c.kernel.statements.at(n.statement);
  // The lane iterator is not bound here; the loads packed do not read it.
  std::vector<AstExprPtr> args;
  for (const AstExprPtr& a : n.args)
    args.push_back(a ? substitute(a, p.tile_lane, ast_int(0)) : nullptr);
  c.bound.clear();
  c.index_bound.clear();
  const std::string row = p.tile_row + " - " + ast_expr_to_c(*p.tile_row_origin);
  std::string s = std::string(2 * depth, ' ') + "{ " + bind_line(args);
  std::vector<const ScalarExpr*> loads = row_operands(st, n, p);
  for (size_t k = 0; k < loads.size(); ++k)
    s += std::string(k ? " " : "") + row_element(p, k, row) + " = " + render_value(c, *loads[k]) +
         ";";
  return s + " }\n";
}

std::string CStyleRenderer::render_pack(const Context& c, const LoopNode& n, int depth) const {
  if (n.tile_rows > 0) return render_row_pack(c, n, depth);
  std::string pad(2 * depth, ' ');
  const Statement& st = c.kernel.statements.at(n.statement);
  std::vector<const LoopNode*> fill = nodes_of(*n.body.at(0), LoopNode::Kind::stmt);
  if (fill.empty()) throw std::logic_error("a packed panel without its fill statement");
  std::vector<const ScalarExpr*> loads = row_shared_loads(
      st, driven_iterators(*fill[0], n.tile_lane), driven_iterators(*fill[0], n.tile_row));
  std::string type = st.value->dtype == DType::f64 ? "double" : "float";
  std::string s = pad + "{\n";
  auto kept = c.kept.find(&n);
  // A pack of several lane tiles holds its tiles' loops: outlined parallel bodies among them
  // (OpenMP) take its arrays as parameters.
  std::string params = c.local_params, args = c.local_args;
  if (n.pack_lane_base && kept == c.kept.end()) {
    s += pad + "  const int64_t " + n.name + "_base = " + ast_expr_to_c(*n.pack_lane_base) + ";\n";
    c.local_params += ", const int64_t " + n.name + "_base";
    c.local_args += ", " + n.name + "_base";
  }
  for (size_t k = 0; k < loads.size(); ++k) {
    std::string array = n.name + "_" + std::to_string(k);
    if (n.pack_lane_base) {
      c.local_params += ", " + type + "* restrict " + array;
      c.local_args += ", " + array;
    }
    if (kept != c.kept.end())  // this tile's panel in the workspace (packed_weights.h)
      s += pad + "  " + type + "* restrict " + array + " = kiln_pw" +
           std::to_string(kept->second.region + k) + " + " + kept->second.offset + ";\n";
    else
      s += pad + "  " + type + " " + array + "[" +
           std::to_string(n.pack_depth * (n.pack_lane_base ? n.pack_lanes : n.tile_lanes)) +
           "] __attribute__((aligned(64)));\n";
  }
  const LoopNode* filling = c.filling;
  c.filling = &n;
  if (kept != c.kept.end()) {
    s += pad + "  if (!kiln_packed) {\n" + render_node(c, *n.body[0], depth + 2) + pad + "  }\n";
  } else {
    s += render_node(c, *n.body[0], depth + 1);
  }
  c.filling = filling;
  const LoopNode* pack = c.pack;
  c.pack = &n;
  for (size_t i = 1; i < n.body.size(); ++i)
    s += render_node(c, *n.body[i], depth + 1);
  c.pack = pack;
  c.local_params = params;
  c.local_args = args;
  return s + pad + "}\n";
}

std::string CStyleRenderer::render_pack_fill(const Context& c, const LoopNode& n, int depth) const {
  const LoopNode& p = *c.filling;
  std::string pad(2 * depth, ' ');
  const Statement& st = c.kernel.statements.at(n.statement);
  std::set<std::string> along = driven_iterators(n, p.tile_lane);
  std::vector<const ScalarExpr*> loads =
      row_shared_loads(st, along, driven_iterators(n, p.tile_row));
  std::string t = st.value->dtype == DType::f64 ? "f64" : "f32";
  int lanes = c.options.vector_bytes / (t == "f64" ? 8 : 4);  // f16 and bf16 pack as f32
  std::string s;
  if (n.fill_k > 0) return s + render_transposed_fill(c, n, loads, t, depth);
  for (int64_t v = 0; v < p.tile_lanes / lanes; ++v) {
    // The row iterator is not bound here; the loads packed do not read it.
    AstExprPtr col = ast_op("add", {p.tile_lane_origin, ast_int(v * lanes)});
    std::vector<AstExprPtr> args;
    for (const AstExprPtr& a : n.args)
      args.push_back(a ? substitute(substitute(a, p.tile_row, ast_int(0)), p.tile_lane, col)
                       : nullptr);
    c.bound.clear();
    c.index_bound.clear();
    c.lane_limit = p.tile_lane_count ? lane_count(p, v * lanes) : "";
    s += pad + "{ " + bind_line(args);
    for (size_t k = 0; k < loads.size(); ++k)
      s += std::string(k ? " " : "") + "kiln_vst_" + t + "(&" + pack_element(c, p, k, v * lanes) +
           ", " + render_lanes(c, *loads[k], along) + ");";
    s += " }\n";
  }
  c.lane_limit.clear();
  return s;
}

std::string CStyleRenderer::render_transposed_fill(const Context& c, const LoopNode& n,
                                                   const std::vector<const ScalarExpr*>& loads,
                                                   const std::string& t, int depth) const {
  const LoopNode& p = *c.filling;
  const int64_t lanes = n.fill_k;
  if (lanes != c.options.vector_bytes / (t == "f64" ? 8 : 4) || p.tile_lanes % lanes)
    throw std::logic_error("a transposed pack fill of " + std::to_string(lanes) +
                           " k rows for vectors of another width");
  std::string pad(2 * depth, ' '), vt = "kiln_v" + t;
  std::set<std::string> along = driven_iterators(n, p.pack_iter);
  std::string s;
  c.lane_limit.clear();
  for (int64_t v = 0; v < p.tile_lanes / lanes; ++v) {
    s += pad + "{\n";
    // Lane v · lanes + r's operands along k (one vector each: its fill_k k rows) ...
    for (int64_t r = 0; r < lanes; ++r) {
      AstExprPtr col = ast_op("add", {p.tile_lane_origin, ast_int(v * lanes + r)});
      std::vector<AstExprPtr> args;
      for (const AstExprPtr& a : n.args)
        args.push_back(a ? substitute(substitute(a, p.tile_row, ast_int(0)), p.tile_lane, col)
                         : nullptr);
      c.bound.clear();
      c.index_bound.clear();
      for (size_t k = 0; k < loads.size(); ++k)
        s += pad + "  " + vt + " kiln_x" + std::to_string(k) + "_0_" + std::to_string(r) + ";\n";
      s += pad + "  { " + bind_line(args);
      for (size_t k = 0; k < loads.size(); ++k)
        s += "kiln_x" + std::to_string(k) + "_0_" + std::to_string(r) + " = " +
             render_lanes(c, *loads[k], along) + "; ";
      s += "}\n";
    }
    // ... transposed: stage b swaps bit b of the row with bit b of the lane (rows r and r + b
    // exchange the halves where their lanes' bit b differs), log2(lanes) stages in all ...
    int stage = 0;
    for (int64_t b = 1; b < lanes; b *= 2, ++stage) {
      for (size_t k = 0; k < loads.size(); ++k) {
        const std::string from = "kiln_x" + std::to_string(k) + "_" + std::to_string(stage) + "_",
                          to = "kiln_x" + std::to_string(k) + "_" + std::to_string(stage + 1) + "_";
        for (int64_t r = 0; r < lanes; ++r) {
          if (r & b) continue;
          std::string low, high;
          for (int64_t l = 0; l < lanes; ++l) {
            low += ", " + std::to_string((l & b) ? lanes + l - b : l);
            high += ", " + std::to_string((l & b) ? lanes + l : l + b);
          }
          const std::string pair = from + std::to_string(r) + ", " + from + std::to_string(r + b);
          s += pad + "  " + vt + " " + to + std::to_string(r) + " = __builtin_shufflevector(" +
               pair + low + ");\n";
          s += pad + "  " + vt + " " + to + std::to_string(r + b) + " = __builtin_shufflevector(" +
               pair + high + ");\n";
        }
      }
    }
    // ... and k row r of the block stored as lanes v · lanes + 0..lanes-1 of the pack.
    for (int64_t r = 0; r < lanes; ++r)
      for (size_t k = 0; k < loads.size(); ++k)
        s += pad + "  kiln_vst_" + t + "(&" + pack_element(c, p, k, r * p.tile_lanes + v * lanes) +
             ", kiln_x" + std::to_string(k) + "_" + std::to_string(stage) + "_" +
             std::to_string(r) + ");\n";
    s += pad + "}\n";
  }
  return s;
}

std::string CStyleRenderer::render_tile_update(const Context& c, const LoopNode& n,
                                               int depth) const {
  if (c.tile->k_lanes > 0) return render_k_update(c, n, depth);
  const LoopNode& t = *c.tile;
  std::string pad(2 * depth, ' ');
  const Statement& st = c.kernel.statements.at(n.statement);
  int lanes = c.options.vector_bytes / (dtype_bits(c.plan.buffers[st.buffer].dtype) / 8);
  std::set<std::string> along = driven_iterators(n, t.tile_lane),
                        across = driven_iterators(n, t.tile_row);
  // Per vector of lanes: the vector loads that every row shares (b's row in a matmul, the
  // input's in a convolution) once into locals, from the packed panel where there is one;
  // then each row's update.
  std::vector<const ScalarExpr*> loads = row_shared_loads(st, along, across);
  std::string t_name = st.value->dtype == DType::f64 ? "f64" : "f32";
  std::string type = "kiln_v" + t_name + " ";
  const LoopNode* pack = c.pack && c.pack->statement == n.statement ? c.pack : nullptr;
  // The rows' operands from their pack where there is one (render_row_pack): row r's, or past
  // the tile's row count the last existing row's.
  const LoopNode* rp = c.row_pack && !c.row_pack->matrix && c.row_pack->statement == n.statement
                           ? c.row_pack
                           : nullptr;
  std::vector<const ScalarExpr*> row_loads;
  if (rp) row_loads = row_operands(st, n, *rp);
  auto row_offset = [&](int64_t r) {
    if (r == 0) return std::string("0");
    if (!t.tile_row_count) return std::to_string(r);
    return clamped_row(t, r) + " - (" + ast_expr_to_c(*t.tile_row_origin) + ")";
  };
  std::string s;
  for (int64_t v = 0; v < t.tile_lanes / lanes; ++v) {
    c.lane_limit = t.tile_lane_count ? lane_count(t, v * lanes) : "";
    c.lane_bound.clear();
    std::string shared;
    for (size_t k = 0; k < loads.size(); ++k) {
      std::string name = "kiln_lane" + std::to_string(k);
      std::string value =
          pack ? "kiln_vld_" + t_name + "(&" + pack_element(c, *pack, k, v * lanes) + ")"
               : render_lanes(c, *loads[k], along);
      shared += (shared.empty() ? "" : " ") + type + name + " = " + value + ";";
      c.lane_bound[loads[k]] = name;
    }
    std::string in = pad;
    if (!shared.empty()) {
      s += pad + "{ " + bind_line(tile_args(t, n.args, 0, v * lanes)) + shared + "\n";
      in += "  ";
    }
    for (int64_t r = 0; r < t.tile_rows; ++r) {
      c.bound.clear();
      c.index_bound.clear();
      for (size_t k = 0; k < row_loads.size(); ++k)
        c.bound[row_loads[k]] = row_element(*rp, k, row_offset(r));
      s += in + "{ " + bind_line(tile_args(t, n.args, r, v * lanes)) + t.name + "_" +
           std::to_string(r) + "_" + std::to_string(v) +
           " += " + render_lanes(c, *st.value, along) + "; }\n";
    }
    if (!shared.empty()) s += pad + "}\n";
  }
  c.lane_limit.clear();
  c.lane_bound.clear();
  c.bound.clear();
  return s;
}

}  // namespace kiln
