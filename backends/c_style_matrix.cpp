// The C-style rendering of matrix-unit tiles and packs (LoopNode::matrix; AMX with BF16 dot
// products, scheduler/register_tile.h): the packs' bf16 arrays and their fills, and each tile's
// four 16 × 16 tile registers of f32 sums, loaded (or zeroed), updated 32 k at a time by
// `tdpbf16ps` from the packs, and stored. The instructions are inline assembly, which GCC and
// clang both take without intrinsics headers. The module asks Linux for the tile data itself
// before its first tile configuration (the driver has asked already; a module loaded
// elsewhere, `kiln compile --object`, has not).
#include <stdexcept>

#include "backends/c_style.h"
#include "backends/packed_weights.h"

namespace kiln {

namespace {

/** Every tile register 16 rows of 64 bytes (palette 1): a tile of 16 × 16 f32 or i32 sums, 16
 *  rows of 32 bf16 (64 8-bit integers) of the row operand, 16 k pairs (quads) of 16 lanes of
 *  the lane operand. */
const char* const kMatrixHelpers =
    R"amx(#define KILN_AMX_LOAD(t, p, stride) __asm__ volatile("tileloadd (%0,%1,1), %%tmm" #t : : "r"(p), "r"((int64_t)(stride)) : "memory")
#define KILN_AMX_STORE(t, p, stride) __asm__ volatile("tilestored %%tmm" #t ", (%0,%1,1)" : : "r"(p), "r"((int64_t)(stride)) : "memory")
#define KILN_AMX_ZERO(t) __asm__ volatile("tilezero %%tmm" #t : :)
#define KILN_AMX_DP(op, acc, a, b) __asm__ volatile(#op " %%tmm" #b ", %%tmm" #a ", %%tmm" #acc : :)
static int kiln_amx_granted;
KILN_FN void kiln_amx_begin(void) {
  if (!kiln_amx_granted) {  /* Linux's arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) */
    long r;
    __asm__ volatile("syscall" : "=a"(r) : "a"(158L), "D"(0x1023L), "S"(18L) : "rcx", "r11", "memory");
    kiln_amx_granted = 1;
  }
  static const unsigned char config[64] __attribute__((aligned(64))) = {
      1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
      64, 0, 64, 0, 64, 0, 64, 0, 64, 0, 64, 0, 64, 0, 64, 0,
      0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
      16, 16, 16, 16, 16, 16, 16, 16, 0, 0, 0, 0, 0, 0, 0, 0};
  __asm__ volatile("ldtilecfg %0" : : "m"(config));
}
KILN_FN void kiln_amx_end(void) { __asm__ volatile("tilerelease" : :); }
)amx";

/** A stmt's args with iterator `iter` replaced by `value` (an iterator the fill does not bind). */
std::vector<AstExprPtr> with(const std::vector<AstExprPtr>& args, const std::string& iter,
                             const AstExprPtr& value) {
  std::vector<AstExprPtr> out;
  for (const AstExprPtr& a : args)
    out.push_back(a ? substitute(a, iter, value) : nullptr);
  return out;
}

/** The load a matrix pack holds (the row operand's when it has rows, else the lane operand's),
 *  found from its fill's statement node `fill` with iterator `unbound` read as 0. */
const ScalarExpr& packed_load(const Kernel& k, const LoopNode& pack, const LoopNode& fill,
                              std::vector<AstExprPtr>& args) {
  const bool rows = pack.tile_rows > 0;
  args = with(fill.args, rows ? pack.tile_lane : pack.tile_row, ast_int(0));
  LoopNode bound = fill;
  bound.args = args;
  std::set<std::string> along = driven_iterators(bound, pack.tile_lane),
                        across = driven_iterators(bound, pack.tile_row);
  const Statement& st = k.statements.at(fill.statement);
  std::vector<const ScalarExpr*> loads =
      rows ? row_shared_loads(st, across, along) : row_shared_loads(st, along, across);
  if (loads.size() != 1)
    throw std::logic_error("a matrix pack whose statement has no single operand to pack");
  return *loads[0];
}

/** The load matrix pack `pack` holds. */
const ScalarExpr& packed_load(const Kernel& k, const LoopNode& pack) {
  std::vector<const LoopNode*> fills = nodes_of(*pack.body.at(0), LoopNode::Kind::stmt);
  if (fills.empty()) throw std::logic_error("a matrix pack without its fill statement");
  std::vector<AstExprPtr> args;
  return packed_load(k, pack, *fills[0], args);
}

/** Bytes of one value in the packs of statement `st`: 2 (bf16, summing in f32) or 1 (8-bit
 *  integers, summing in i32). */
int value_bytes(const KernelPlan& plan, const Statement& st) {
  return plan.buffers.at(st.buffer).dtype == DType::f32 ? 2 : 1;
}

}  // namespace

std::string CStyleRenderer::matrix_helpers() const {
  return kMatrixHelpers;
}

std::string CStyleRenderer::render_matrix_pack(const Context& c, const LoopNode& n,
                                               int depth) const {
  std::string pad(2 * depth, ' '), in = pad + "  ";
  const bool rows = n.tile_rows > 0;
  // The row operand's values (bf16 or 8-bit integers); the lane operand's pairs (quads) of
  // them, a 32-bit word each.
  const int bytes = value_bytes(c.plan, c.kernel.statements.at(n.statement));
  const std::string array = n.name + "_0", count = n.name + "_k";
  const std::string type = !rows ? "uint32_t" : bytes == 2 ? "uint16_t" : "uint8_t";
  const int64_t elements = n.pack_depth * (rows ? n.tile_rows : n.pack_lanes * bytes / 4);
  std::string s = pad + "{\n";
  std::string params = c.local_params, args = c.local_args;
  if (n.pack_lane_base) {
    s += in + "const int64_t " + n.name + "_base = " + ast_expr_to_c(*n.pack_lane_base) + ";\n";
    c.local_params += ", const int64_t " + n.name + "_base";
    c.local_args += ", " + n.name + "_base";
  }
  s += in + "const int64_t " + count + " = " +
       (n.pack_count ? ast_expr_to_c(*n.pack_count) : std::to_string(n.pack_depth)) + ";\n";
  c.local_params += ", const int64_t " + count + ", " + type + "* restrict " + array;
  c.local_args += ", " + count + ", " + array;
  s += in + type + " " + array + "[" + std::to_string(elements) +
       "] __attribute__((aligned(64)));\n";
  // The k rows past the last block's end, up to the next step of the unit, are read as zeros.
  s += in + "if (" + count + " < " + std::to_string(n.pack_depth) + ") __builtin_memset(" + array +
       ", 0, sizeof " + array + ");\n";
  const LoopNode* filling = c.filling;
  c.filling = &n;
  s += render_node(c, *n.body.at(0), depth + 1);
  c.filling = filling;
  const LoopNode* outer = rows ? c.row_pack : c.pack;
  (rows ? c.row_pack : c.pack) = &n;
  if (rows) s += in + "kiln_amx_begin();\n";
  for (size_t i = 1; i < n.body.size(); ++i)
    s += render_node(c, *n.body[i], depth + 1);
  if (rows) s += in + "kiln_amx_end();\n";
  (rows ? c.row_pack : c.pack) = outer;
  c.local_params = params;
  c.local_args = args;
  return s + pad + "}\n";
}

std::string CStyleRenderer::render_matrix_fill(const Context& c, const LoopNode& n,
                                               int depth) const {
  const LoopNode& p = *c.filling;
  const bool rows = p.tile_rows > 0;
  const int bytes = value_bytes(c.plan, c.kernel.statements.at(n.statement));
  // The iterator the fill leaves unbound (the lanes for the row operand, the rows for the
  // lane operand) reads as 0: the operand packed does not use it.
  std::vector<AstExprPtr> args;
  const ScalarExpr& load = packed_load(c.kernel, p, n, args);
  const std::string bits = bytes == 2 ? "uint16_t" : "uint8_t";
  auto value = [&]() -> std::string {
    c.bound.clear();
    c.index_bound.clear();
    if (load.mask.empty() && !is_gather(load))
      return "(" + bits + ")" +
             render_access(c, load.buffer,
                           int_expr_to_c(linear_index(c, load.buffer, load.index), c.sizes));
    return bytes == 2 ? "kiln_f32_to_bf16(" + render_value(c, load) + ")"
                      : "(" + bits + ")(" + render_value(c, load) + ")";
  };
  const std::string k = "(" + p.pack_iter + " - " + ast_expr_to_c(*p.pack_origin) + ")";
  const std::string d = std::to_string(p.pack_depth), pad(2 * depth, ' ');
  if (rows)
    return pad + "{ " + bind_line(args) + p.name + "_0[(" + p.tile_row + " - " +
           ast_expr_to_c(*p.tile_row_origin) + ") * " + d + " + " + k + "] = " + value() + "; }\n";
  // The values of k rows k, k + 1 (, k + 2, k + 3) as one word, k's lowest; 0 past the block.
  const int group = 4 / bytes;
  const std::string origin = ast_expr_to_c(*p.tile_lane_origin);
  std::string at = "(" + origin + " - " + p.name + "_base) * " +
                   std::to_string(p.pack_depth / group) + " + (" + k + " >> " +
                   (group == 2 ? "1" : "2") + ") * " + std::to_string(p.tile_lanes) + " + (" +
                   p.tile_lane + " - " + origin + ")";
  std::string s = pad + "{\n" + pad + "  uint32_t kiln_w;\n";
  s += pad + "  { " + bind_line(args) + "kiln_w = (uint32_t)" + value() + "; }\n";
  for (int g = 1; g < group; ++g) {
    std::vector<AstExprPtr> next =
        with(args, p.pack_iter, ast_op("add", {ast_iter(p.pack_iter), ast_int(g)}));
    s += pad + "  if (" + k + " + " + std::to_string(g) + " < " + p.name + "_k) { " +
         bind_line(next) + "kiln_w |= (uint32_t)" + value() + " << " +
         std::to_string(8 * bytes * g) + "; }\n";
  }
  s += pad + "  " + p.name + "_0[" + at + "] = kiln_w;\n";
  return s + pad + "}\n";
}

std::string CStyleRenderer::render_matrix_tile(const Context& c, const LoopNode& n,
                                               int depth) const {
  const LoopNode *a = c.row_pack, *b = c.pack;
  if (!a || !b || !a->matrix || !b->matrix || n.tile_rows != 32 || n.tile_lanes != 32 ||
      b->tile_lanes != 32 || a->tile_rows != 32)
    throw std::logic_error("a matrix tile outside its two matrix packs");
  std::string pad(2 * depth, ' '), in = pad + "  ";
  const Statement& st = c.kernel.statements.at(n.statement);
  const std::string t = n.name, sums = t + "_c", buffer = "b" + std::to_string(st.buffer);
  // bf16 pairs into f32 sums, or 8-bit integers (each signed or not) in quads into i32 ones.
  const int bytes = value_bytes(c.plan, st), step = 64 / bytes;
  const bool bf16 = bytes == 2;
  auto sign = [&](const LoopNode& pack) {
    return c.plan.buffers.at(packed_load(c.kernel, pack).buffer).dtype == DType::u8 ? "u" : "s";
  };
  const std::string op = bf16 ? "tdpbf16ps" : std::string("tdpb") + sign(*a) + sign(*b) + "d";
  const std::string sum_type = bf16 ? "float" : "int32_t", zero = bf16 ? "0.0f" : "0";
  const std::string offset = int_expr_to_c(linear_index(c, st.buffer, st.index), c.sizes);
  AstExprPtr row1 = ast_op("add", {n.tile_row_origin, ast_int(1)});
  std::vector<AstExprPtr> at0, at1;
  for (const AstExprPtr& e : n.args) {
    at0.push_back(e ? substitute(substitute(e, n.tile_row, n.tile_row_origin), n.tile_lane,
                                 n.tile_lane_origin)
                    : nullptr);
    at1.push_back(e ? substitute(substitute(e, n.tile_row, row1), n.tile_lane, n.tile_lane_origin)
                    : nullptr);
  }
  std::string s = pad + "{\n";
  s += in + "const int64_t " + t +
       "_rows = " + (n.tile_row_count ? ast_expr_to_c(*n.tile_row_count) : "32") + ", " + t +
       "_lanes = " + (n.tile_lane_count ? ast_expr_to_c(*n.tile_lane_count) : "32") + ";\n";
  // The sums' first element and the elements from one row to the next, in the buffer.
  s += in + "int64_t " + t + "_at, " + t + "_ld;\n";
  s += in + "{ " + bind_line(at0) + t + "_at = " + offset + "; }\n";
  s += in + "{ " + bind_line(at1) + t + "_ld = " + offset + " - " + t + "_at; }\n";
  // A whole tile moves between the buffer and the tile registers directly; a partial one (and
  // every one under bounds checks) through a local copy.
  s += in + "const int " + t +
       "_direct = " + (c.options.bounds_checks ? "0" : t + "_rows == 32 && " + t + "_lanes == 32") +
       ";\n";
  s += in + sum_type + " " + sums + "[1024] __attribute__((aligned(64)));\n";
  const std::string element = "(" + t + "_at + r * " + t + "_ld + l)";
  auto moves = [&](const std::string& op, const std::string& pad) {
    std::string o;
    for (int q = 0; q < 4; ++q) {
      std::string at = t + "_at + " + (q >= 2 ? "16 * " + t + "_ld + " : "") + (q % 2 ? "16" : "0");
      o += pad + op + "(" + std::to_string(q) + ", &" + buffer + "[" + at + "], " + t +
           "_ld * 4);\n";
    }
    return o;
  };
  auto local = [&](const std::string& op, const std::string& pad) {
    std::string o;
    for (int q = 0; q < 4; ++q)
      o += pad + op + "(" + std::to_string(q) + ", &" + sums + "[" +
           std::to_string(q / 2 * 512 + q % 2 * 16) + "], 128);\n";
    return o;
  };
  std::string load_local = in + "  for (int64_t r = 0; r < 32; ++r)\n" + in +
                           "    for (int64_t l = 0; l < 32; ++l)\n" + in + "      " + sums +
                           "[r * 32 + l] = r < " + t + "_rows && l < " + t + "_lanes ? " +
                           render_access(c, st.buffer, element) + " : " + zero + ";\n" +
                           local("KILN_AMX_LOAD", in + "  ");
  std::string load = in + "if (" + t + "_direct) {\n" + moves("KILN_AMX_LOAD", in + "  ") + in +
                     "} else {\n" + load_local + in + "}\n";
  if (n.tile_fresh) {  // the first block starts from 0 (the init folded in)
    s += in + "if (" + ast_expr_to_c(*n.tile_fresh) + ") {\n";
    for (int q = 0; q < 4; ++q)
      s += in + "  KILN_AMX_ZERO(" + std::to_string(q) + ");\n";
    s += in + "} else {\n";
    for (size_t at = 0; at < load.size();) {  // the load, indented one more level
      size_t end = load.find('\n', at);
      s += "  " + load.substr(at, end - at + 1);
      at = end + 1;
    }
    s += in + "}\n";
  } else {
    s += load;
  }
  // 64 bytes of k a step: rows 0-15 and 16-31 of the row pack, lanes 0-15 and 16-31 of the
  // lane pack (its words: k / (4 / bytes) rows of 32 lanes).
  const std::string d = std::to_string(a->pack_depth),
                    row_bytes = d + " * " + std::to_string(bytes);
  const std::string lanes_at = "(" + ast_expr_to_c(*n.tile_lane_origin) + " - " + b->name +
                               "_base) * " + std::to_string(b->pack_depth * bytes / 4);
  const std::string words = "kiln_kk * " + std::to_string(8 * bytes);
  s += in + "for (int64_t kiln_kk = 0; kiln_kk < " + b->name +
       "_k; kiln_kk += " + std::to_string(step) + ") {\n";
  s += in + "  KILN_AMX_LOAD(4, &" + a->name + "_0[kiln_kk], " + row_bytes + ");\n";
  s +=
      in + "  KILN_AMX_LOAD(5, &" + a->name + "_0[16 * " + d + " + kiln_kk], " + row_bytes + ");\n";
  s += in + "  KILN_AMX_LOAD(6, &" + b->name + "_0[" + lanes_at + " + " + words + "], 128);\n";
  s += in + "  KILN_AMX_LOAD(7, &" + b->name + "_0[" + lanes_at + " + " + words + " + 16], 128);\n";
  for (const char* q : {"0, 4, 6", "1, 4, 7", "2, 5, 6", "3, 5, 7"})
    s += in + "  KILN_AMX_DP(" + op + ", " + q + ");\n";
  s += in + "}\n";
  s += in + "if (" + t + "_direct) {\n" + moves("KILN_AMX_STORE", in + "  ") + in + "} else {\n" +
       local("KILN_AMX_STORE", in + "  ") + in + "  for (int64_t r = 0; r < " + t +
       "_rows; ++r)\n" + in + "    for (int64_t l = 0; l < " + t + "_lanes; ++l)\n" + in +
       "      " + render_access(c, st.buffer, element) + " = " + sums + "[r * 32 + l];\n" + in +
       "}\n";
  return s + pad + "}\n";
}

}  // namespace kiln
