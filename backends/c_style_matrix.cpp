// The C-style rendering of matrix-unit tiles and packs (LoopNode::matrix; AMX with BF16 dot
// products, scheduler/register_tile.h): the packs' bf16 arrays and their fills, and each tile's
// four 16 × 16 tile registers of f32 sums, loaded (or zeroed), updated 32 k at a time by
// `tdpbf16ps` from the packs, and stored. The instructions are inline assembly, which GCC and
// clang both take without intrinsics headers. The module asks Linux for the tile data itself
// before its first tile configuration (the driver has asked already; a module loaded
// elsewhere, `kiln compile --object`, has not). A matrix tile of 8-bit integers on VNNI
// vectors instead (LoopNode::dot_bytes): the same packs (a's bytes and b's quads, with the
// xor and the sums its signs need), and the tile's rows × vectors of i32 sums in vector
// registers, one `vpdpbusd` per row and vector per k quad. A matrix tile of bf16 values on
// vectors (AVX512-BF16): the same with b's pairs of k and f32 sums, one `vdpbf16ps` per row and
// vector per k pair.
#include <functional>
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

/** The dot product of bytes (both widths): each 32-bit lane of `acc` plus the four products of
 *  u's bytes, unsigned, by s's, signed (vpdpbusd, not the saturating vpdpbusds). Where the
 *  compiler targets no such instruction, the bytes widened to 16 bits and two vpmaddwd (16-bit
 *  products summed in pairs into 32 bits: exact for bytes; AVX512BW, AVX2), else the same sums
 *  in plain vector code. */
const char* const kDotMacros =
    R"dot(#define KILN_DPBUSD_SUMS(V, VI) \
  for (int q = 0; q < 32; q += 8) \
    acc += (V)((VI)((u >> q) & 0xff) * (((VI)(s << (24 - q))) >> 24));
#define KILN_DPBUSD_WORDS(V, H, HU, R) \
  { \
    H ue = (H)((HU)u & 0xff), uo = (H)((HU)u >> 8), se = (H)((HU)s << 8) >> 8, so = (H)s >> 8; \
    V e, o; \
    __asm__("vpmaddwd %2, %1, %0" : "=" R(e) : R(ue), R(se)); \
    __asm__("vpmaddwd %2, %1, %0" : "=" R(o) : R(uo), R(so)); \
    acc += e + o; \
  }
)dot";

/** VNNI vectors of $B bytes of i32 sums (unsigned: they wrap), their 16-bit halves, and their
 *  dot product of bytes; $-names are filled in by dot_helpers. */
const char* const kDotHelpers =
    R"dot(typedef uint32_t kiln_vdot$B __attribute__((vector_size($B)));
typedef int32_t kiln_vdoti$B __attribute__((vector_size($B)));
typedef int16_t kiln_vdoth$B __attribute__((vector_size($B)));
typedef uint16_t kiln_vdothu$B __attribute__((vector_size($B)));
KILN_FN kiln_vdot$B kiln_dpbusd$B(kiln_vdot$B acc, kiln_vdot$B u, kiln_vdot$B s) {
#if $VNNI && defined(__x86_64__)
  __asm__("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(u), "v"(s));
#elif $VEX && defined(__x86_64__)
  __asm__("%{vex%} vpdpbusd %2, %1, %0" : "+x"(acc) : "x"(u), "x"(s));
#elif $WIDE && defined(__x86_64__)
  KILN_DPBUSD_WORDS(kiln_vdot$B, kiln_vdoth$B, kiln_vdothu$B, "$R")
#else
  KILN_DPBUSD_SUMS(kiln_vdot$B, kiln_vdoti$B)
#endif
  return acc;
}
)dot";

/** Vectors of $B bytes of f32 sums and of bf16 pairs, and their dot product: each f32 lane of
 *  `acc` plus the two products of a's pair by b's (vdpbf16ps, which flushes denormals). Where
 *  the compiler targets no such instruction, the pairs widened to f32 (a bf16 is the upper half
 *  of its f32) in plain vector code. */
const char* const kBf16DotHelpers =
    R"dot(typedef float kiln_vdpbf$B __attribute__((vector_size($B)));
typedef uint32_t kiln_vdpbfu$B __attribute__((vector_size($B)));
KILN_FN kiln_vdpbf$B kiln_dpbf16ps$B(kiln_vdpbf$B acc, kiln_vdpbfu$B a, kiln_vdpbfu$B b) {
#if $BF16 && defined(__x86_64__)
  __asm__("vdpbf16ps %2, %1, %0" : "+v"(acc) : "v"(a), "v"(b));
#else
  const kiln_vdpbfu$B high = (kiln_vdpbfu$B){0} + 0xffff0000u;
  acc += (kiln_vdpbf$B)(a << 16) * (kiln_vdpbf$B)(b << 16) +
         (kiln_vdpbf$B)(a & high) * (kiln_vdpbf$B)(b & high);
#endif
  return acc;
}
)dot";

/** `text` with each $-name of `subst` replaced. */
std::string substituted(std::string text,
                        const std::vector<std::pair<std::string, std::string>>& subst) {
  for (const auto& [from, to] : subst)
    for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
      text.replace(at, from.size(), to);
  return text;
}

/** kBf16DotHelpers for 64-byte vectors (AVX512-BF16) and 32-byte ones (with AVX512VL). */
std::string bf16_dot_helpers() {
  return substituted(kBf16DotHelpers, {{"$BF16", "defined(__AVX512BF16__)"}, {"$B", "64"}}) +
         substituted(kBf16DotHelpers,
                     {{"$BF16", "defined(__AVX512BF16__) && defined(__AVX512VL__)"}, {"$B", "32"}});
}

/** kDotMacros, then kDotHelpers for 64-byte vectors (AVX512-VNNI; AVX512BW) and for 32-byte
 *  ones (AVX512-VNNI with VL or AVX-VNNI, whose VEX form GNU as and LLVM take with the `{vex}`
 *  prefix; AVX2). */
std::string dot_helpers() {
  std::string s = kDotMacros;
  const std::vector<std::pair<std::string, std::string>> widths[] = {
      {{"$VNNI", "defined(__AVX512VNNI__)"},
       {"$VEX", "0"},
       {"$WIDE", "defined(__AVX512BW__)"},
       {"$R", "v"},
       {"$B", "64"}},
      {{"$VNNI", "defined(__AVX512VNNI__) && defined(__AVX512VL__)"},
       {"$VEX", "defined(__AVXVNNI__)"},
       {"$WIDE", "defined(__AVX2__)"},
       {"$R", "x"},
       {"$B", "32"}}};
  for (const auto& subst : widths)
    s += substituted(kDotHelpers, subst);
  return s;
}

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

/** The lines that start matrix tile `n`'s sums, indented by `in`: `load` (lines at `in`), or
 *  where the tile starts fresh (its first k block, the init folded in) `zero` instead. */
std::string zero_or_load(const LoopNode& n, const std::string& zero, const std::string& load,
                         const std::string& in) {
  if (!n.tile_fresh) return load;
  std::string s = in + "if (" + ast_expr_to_c(*n.tile_fresh) + ") {\n" + zero + in + "} else {\n";
  for (size_t at = 0; at < load.size();) {  // the load, indented one more level
    size_t end = load.find('\n', at);
    s += "  " + load.substr(at, end - at + 1);
    at = end + 1;
  }
  return s + in + "}\n";
}

/** Whether matrix pack `pack` also sums its values per row (a row pack) or per lane (a lane
 *  pack) for the correction of its tiles' signs (ir/loop_ir.h, DotSigns): the array
 *  `<name>_s` of i32, one per row or per lane of the pack, over the k block. */
bool sums_values(const LoopNode& pack) {
  if (pack.dot_bytes == 0) return false;
  return pack.tile_rows > 0 ? pack.dot_signs == DotSigns::unsigned_unsigned
                            : pack.dot_signs == DotSigns::signed_signed;
}

/** Whether matrix pack `pack` holds its values xor 0x80 (DotSigns): a's for two i8 operands,
 *  b's for two u8 ones. */
bool flips_values(const LoopNode& pack) {
  if (pack.dot_bytes == 0) return false;
  return pack.tile_rows > 0 ? pack.dot_signs == DotSigns::signed_signed
                            : pack.dot_signs == DotSigns::unsigned_unsigned;
}

/** Bytes of one value in the packs of statement `st`: 2 (bf16, summing in f32) or 1 (8-bit
 *  integers, summing in i32). */
int value_bytes(const KernelPlan& plan, const Statement& st) {
  return plan.buffers.at(st.buffer).dtype == DType::f32 ? 2 : 1;
}

/** The first word of the current lane tile (LoopNode::tile_lane_origin) in lane pack `p`'s
 *  array: (origin − base) · D / G words into the pack, or origin · KG into a kept one
 *  (backends/packed_weights.h). */
std::string lane_tile_words(const std::string& origin, const LoopNode& p, int group,
                            const std::string* kept_stride) {
  if (kept_stride) return "(" + origin + ") * (" + *kept_stride + ")";
  return "(" + origin + " - " + p.name + "_base) * " + std::to_string(p.pack_depth / group);
}

}  // namespace

std::string CStyleRenderer::matrix_helpers(bool amx, bool dot, bool bf16_dot) const {
  return std::string(amx ? kMatrixHelpers : "") + (dot ? dot_helpers() : "") +
         (bf16_dot ? bf16_dot_helpers() : "");
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
  // A lane pack kept in the workspace (backends/packed_weights.h): its words (and sums) there,
  // filled at the first call only. A dot tile reads whole k groups, which its fill writes, so
  // nothing past the block's end needs zeros.
  auto kept = c.kept.find(&n);
  const std::string sums = n.name + "_s";
  if (kept != c.kept.end()) {
    s += in + type + "* restrict " + array + " = kiln_pw" + std::to_string(kept->second.region) +
         " + " + kept->second.offset + ";\n";
    if (sums_values(n)) {
      s += in + "int32_t* restrict " + sums + " = kiln_pw" +
           std::to_string(kept->second.region + 1) + " + " + kept->second.sums_offset + " + " +
           n.name + "_base;\n";
      c.local_params += ", int32_t* restrict " + sums;
      c.local_args += ", " + sums;
    }
    const LoopNode* filling = c.filling;
    c.filling = &n;
    s += in + "if (!kiln_packed) {\n";
    if (sums_values(n))
      s += in + "  __builtin_memset(" + sums + ", 0, " + std::to_string(n.pack_lanes) +
           " * sizeof *" + sums + ");\n";
    s += render_node(c, *n.body.at(0), depth + 2) + in + "}\n";
    c.filling = filling;
  } else {
    s += in + type + " " + array + "[" + std::to_string(elements) +
         "] __attribute__((aligned(64)));\n";
    if (sums_values(n)) {
      s += in + "int32_t " + sums + "[" + std::to_string(rows ? n.tile_rows : n.pack_lanes) +
           "] = {0};\n";
      c.local_params += ", int32_t* restrict " + sums;
      c.local_args += ", " + sums;
    }
    // The k rows past the last block's end, up to the next step of the unit (a k group for dot
    // products on vectors, 64 bytes of k for AMX), are read as zeros: each row's tail in a row
    // pack, each lane tile's words from the first group past the end in a lane pack (the fill
    // zeroes the rest of the group it ends in). Only that much: the whole array is up to 512
    // KiB.
    const int group = 4 / bytes, step = n.dot_bytes > 0 ? group : 64 / bytes;
    const std::string d = std::to_string(n.pack_depth), end = "kiln_end";
    s += in + "if (" + count + " < " + d + ") {\n";
    s += in + "  const int64_t " + end + " = (" + count + " + " + std::to_string(step - 1) +
         ") / " + std::to_string(step) + " * " + std::to_string(step) + ";\n";
    if (rows) {
      s += in + "  for (int64_t r = 0; r < " + std::to_string(n.tile_rows) +
           "; ++r) __builtin_memset(&" + array + "[r * " + d + " + " + count + "], 0, (" + end +
           " - " + count + ") * sizeof *" + array + ");\n";
    } else {
      const std::string lanes = std::to_string(n.tile_lanes), from = "(" + count + " + " +
                                                                     std::to_string(group - 1) +
                                                                     ") / " + std::to_string(group);
      s += in + "  for (int64_t t = 0; t < " + std::to_string(n.pack_lanes / n.tile_lanes) +
           "; ++t) __builtin_memset(&" + array + "[(t * " + std::to_string(n.pack_depth / group) +
           " + " + from + ") * " + lanes + "], 0, (" + end + " / " + std::to_string(group) + " - " +
           from + ") * " + lanes + " * sizeof *" + array + ");\n";
    }
    s += in + "}\n";
    const LoopNode* filling = c.filling;
    c.filling = &n;
    s += render_node(c, *n.body.at(0), depth + 1);
    c.filling = filling;
  }
  const LoopNode* outer = rows ? c.row_pack : c.pack;
  (rows ? c.row_pack : c.pack) = &n;
  const bool amx = rows && n.dot_bytes == 0;
  if (amx) s += in + "kiln_amx_begin();\n";
  for (size_t i = 1; i < n.body.size(); ++i)
    s += render_node(c, *n.body[i], depth + 1);
  if (amx) s += in + "kiln_amx_end();\n";
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
  // For VNNI's signs (DotSigns): the value xor 0x80, and its sum per row or lane.
  const bool flip = flips_values(p), sum = sums_values(p);
  auto stored = [&](const std::string& v) { return flip ? "(" + bits + ")(" + v + " ^ 0x80)" : v; };
  const std::string row =
      rows ? "(" + p.tile_row + " - " + ast_expr_to_c(*p.tile_row_origin) + ")" : "";
  if (rows && (flip || sum))
    return pad + "{ " + bind_line(args) + "const " + bits + " kiln_v = " + value() + "; " + p.name +
           "_0[" + row + " * " + d + " + " + k + "] = " + stored("kiln_v") + ";" +
           (sum ? " " + p.name + "_s[" + row + "] += kiln_v;" : "") + " }\n";
  if (rows)
    return pad + "{ " + bind_line(args) + p.name + "_0[" + row + " * " + d + " + " + k +
           "] = " + value() + "; }\n";
  // The values of k rows k, k + 1 (, k + 2, k + 3) as one word, k's lowest; 0 past the block.
  const int group = 4 / bytes;
  const std::string origin = ast_expr_to_c(*p.tile_lane_origin);
  auto kept = c.kept.find(&p);
  std::string at = lane_tile_words(origin, p, group,
                                   kept != c.kept.end() ? &kept->second.tile_stride : nullptr) +
                   " + (" + k + " >> " + (group == 2 ? "1" : "2") + ") * " +
                   std::to_string(p.tile_lanes) + " + (" + p.tile_lane + " - " + origin + ")";
  std::string s = pad + "{\n" + pad + "  uint32_t kiln_w;\n";
  // A value of the quad (its word's bits from `shift`), summed into its lane's column sum.
  auto quad_value = [&](const std::string& op, const std::string& shift) {
    if (!flip && !sum) return "kiln_w " + op + " (uint32_t)" + value() + shift + ";";
    return "const " + bits + " kiln_v = " + value() + "; kiln_w " + op + " (uint32_t)" +
           stored("kiln_v") + shift + ";" +
           (sum ? " " + p.name + "_s[" + p.tile_lane + " - " + p.name + "_base] += (int8_t)kiln_v;"
                : "");
  };
  // The values of the group, each k past the block's count left 0 where `guarded`.
  auto values = [&](bool guarded, const std::string& in) {
    std::string o = in + "{ " + bind_line(args) + quad_value("=", "") + " }\n";
    for (int g = 1; g < group; ++g) {
      std::vector<AstExprPtr> next =
          with(args, p.pack_iter, ast_op("add", {ast_iter(p.pack_iter), ast_int(g)}));
      o += in + (guarded ? "if (" + k + " + " + std::to_string(g) + " < " + p.name + "_k) " : "") +
           "{ " + bind_line(next) + quad_value("|=", " << " + std::to_string(8 * bytes * g)) +
           " }\n";
    }
    return o;
  };
  // A whole group without tests (the compiler hoists the branch out of the lane loop and
  // vectorises it), the block's last, partial one with them.
  s += pad + "  if (" + k + " + " + std::to_string(group - 1) + " < " + p.name + "_k) {\n" +
       values(false, pad + "    ") + pad + "  } else {\n" + values(true, pad + "    ") + pad +
       "  }\n";
  s += pad + "  " + p.name + "_0[" + at + "] = kiln_w;\n";
  return s + pad + "}\n";
}

std::string CStyleRenderer::tile_corner(const Context& c, const LoopNode& n,
                                        const std::string& in) const {
  const Statement& st = c.kernel.statements.at(n.statement);
  const std::string t = n.name;
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
  const std::string rows = std::to_string(n.tile_rows), lanes = std::to_string(n.tile_lanes);
  std::string s =
      in + "const int64_t " + t +
      "_rows = " + (n.tile_row_count ? ast_expr_to_c(*n.tile_row_count) : rows) + ", " + t +
      "_lanes = " + (n.tile_lane_count ? ast_expr_to_c(*n.tile_lane_count) : lanes) + ";\n";
  // The sums' first element and the elements from one row to the next, in the buffer.
  s += in + "int64_t " + t + "_at, " + t + "_ld;\n";
  s += in + "{ " + bind_line(at0) + t + "_at = " + offset + "; }\n";
  s += in + "{ " + bind_line(at1) + t + "_ld = " + offset + " - " + t + "_at; }\n";
  // A whole tile moves between the buffer and the registers directly; a partial one (and
  // every one under bounds checks) through a local copy.
  s +=
      in + "const int " + t + "_direct = " +
      (c.options.bounds_checks ? "0" : t + "_rows == " + rows + " && " + t + "_lanes == " + lanes) +
      ";\n";
  return s;
}

std::string CStyleRenderer::render_matrix_tile(const Context& c, const LoopNode& n,
                                               int depth) const {
  if (n.dot_bytes > 0) return render_dot_tile(c, n, depth);
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
  std::string s = pad + "{\n" + tile_corner(c, n, in);
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
  std::string zeros;
  for (int q = 0; q < 4; ++q)
    zeros += in + "  KILN_AMX_ZERO(" + std::to_string(q) + ");\n";
  s += zero_or_load(n, zeros, load, in);
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
  auto store = [&](const std::string& in) {
    return in + "if (" + t + "_direct) {\n" + moves("KILN_AMX_STORE", in + "  ") + in +
           "} else {\n" + local("KILN_AMX_STORE", in + "  ") + in + "  for (int64_t r = 0; r < " +
           t + "_rows; ++r)\n" + in + "    for (int64_t l = 0; l < " + t + "_lanes; ++l)\n" + in +
           "      " + render_access(c, st.buffer, element) + " = " + sums + "[r * 32 + l];\n" + in +
           "}\n";
  };
  if (!n.sums_to_epilogue) return s + store(in) + pad + "}\n";
  // In the last block the sums go to the local copy and the epilogue reads them there; the
  // buffer, which nothing else reads, never holds them (Tiler::with_epilogue).
  const LoopNode& last = *n.body.at(1);
  s += in + "if " + ast_expr_to_c(*last.cond) + " {\n" + local("KILN_AMX_STORE", in + "  ");
  c.sums_buffer = st.buffer;
  c.sums_element = sums + "[(" + n.tile_row + " - " + ast_expr_to_c(*n.tile_row_origin) +
                   ") * 32 + (" + n.tile_lane + " - " + ast_expr_to_c(*n.tile_lane_origin) + ")]";
  for (const LoopNodePtr& child : last.body)
    s += render_node(c, *child, depth + 2);
  c.sums_buffer = -1;
  s += in + "} else {\n" + store(in + "  ") + in + "}\n";
  return s + pad + "}\n";
}

std::string CStyleRenderer::render_dot_tile(const Context& c, const LoopNode& n, int depth) const {
  const LoopNode *a = c.row_pack, *b = c.pack;
  const int per = n.dot_bytes / 4;  // i32 lanes a vector
  if (!a || !b || !a->matrix || !b->matrix || a->dot_bytes != n.dot_bytes ||
      b->dot_bytes != n.dot_bytes || a->tile_rows != n.tile_rows || b->tile_lanes != n.tile_lanes ||
      per <= 0 || n.tile_lanes % per != 0)
    throw std::logic_error("a dot-product tile outside its two packs");
  std::string pad(2 * depth, ' '), in = pad + "  ", in2 = in + "  ";
  const Statement& st = c.kernel.statements.at(n.statement);
  const std::string t = n.name, buffer = "b" + std::to_string(st.buffer);
  // bf16 pairs into f32 sums (vdpbf16ps), or 8-bit quads into i32 ones (vpdpbusd): `group`
  // values of k a 32-bit word.
  const bool bf16 = n.dot_signs == DotSigns::bf16_pairs;
  const int group = bf16 ? 2 : 4;
  const std::string group_shift = bf16 ? "1" : "2";
  const std::string width = std::to_string(n.dot_bytes);
  const std::string v = (bf16 ? "kiln_vdpbf" : "kiln_vdot") + width,
                    words = bf16 ? "kiln_vdpbfu" + width : v,
                    dp = (bf16 ? "kiln_dpbf16ps" : "kiln_dpbusd") + width;
  const int64_t rows = n.tile_rows, vectors = n.tile_lanes / per, lanes = n.tile_lanes;
  auto acc = [&](int64_t r, int64_t q) {
    return t + "_" + std::to_string(r) + "_" + std::to_string(q);
  };
  auto each = [&](const std::function<std::string(int64_t, int64_t)>& line,
                  const std::string& pad) {
    std::string o;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t q = 0; q < vectors; ++q)
        o += pad + line(r, q) + "\n";
    return o;
  };
  std::string s = pad + "{\n" + tile_corner(c, n, in);
  for (int64_t r = 0; r < rows; ++r) {
    s += in + v;
    for (int64_t q = 0; q < vectors; ++q)
      s += std::string(q ? "," : "") + " " + acc(r, q);
    s += ";\n";
  }
  // A whole tile's vectors straight from the buffer; a partial one through a local copy whose
  // missing rows and lanes are zeros.
  const std::string local = t + "_c", element = "(" + t + "_at + r * " + t + "_ld + l)";
  const std::string size = std::to_string(per * 4), l_str = std::to_string(lanes);
  auto vector_at = [&](int64_t r, int64_t q) {
    return "&" + buffer + "[" + t + "_at + " + std::to_string(r) + " * " + t + "_ld + " +
           std::to_string(q * per) + "]";
  };
  auto local_at = [&](int64_t r, int64_t q) {
    return "&" + local + "[" + std::to_string(r * lanes + q * per) + "]";
  };
  s += in + (bf16 ? "float " : "int32_t ") + local + "[" + std::to_string(rows * lanes) +
       "] __attribute__((aligned(64)));\n";
  std::string load =
      in + "if (" + t + "_direct) {\n" +
      each(
          [&](int64_t r, int64_t q) {
            return "__builtin_memcpy(&" + acc(r, q) + ", " + vector_at(r, q) + ", " + size + ");";
          },
          in2) +
      in + "} else {\n" + in2 + "for (int64_t r = 0; r < " + std::to_string(rows) + "; ++r)\n" +
      in2 + "  for (int64_t l = 0; l < " + l_str + "; ++l)\n" + in2 + "    " + local + "[r * " +
      l_str + " + l] = r < " + t + "_rows && l < " + t + "_lanes ? " +
      render_access(c, st.buffer, element) + " : 0;\n" +
      each(
          [&](int64_t r, int64_t q) {
            return "__builtin_memcpy(&" + acc(r, q) + ", " + local_at(r, q) + ", " + size + ");";
          },
          in2) +
      in + "}\n";
  s += zero_or_load(
      n, each([&](int64_t r, int64_t q) { return acc(r, q) + " = (" + v + "){0};"; }, in2), load,
      in);
  // Each row's values in the row pack (rows past the count read the last one's), the lane
  // pack's words of this tile: per k group `lanes` words, the group's k of a lane in each.
  const std::string d = std::to_string(a->pack_depth);
  for (int64_t r = 0; r < rows; ++r)
    s += in + (bf16 ? "const uint16_t* restrict " : "const uint8_t* restrict ") + t + "_a" +
         std::to_string(r) + " = &" + a->name + "_0[(" + std::to_string(r) + " < " + t +
         "_rows ? " + std::to_string(r) + " : " + t + "_rows - 1) * " + d + "];\n";
  const std::string lane_origin =
      "(" + ast_expr_to_c(*n.tile_lane_origin) + " - " + b->name + "_base)";
  auto kept = c.kept.find(b);
  s += in + "const uint32_t* restrict " + t + "_b = &" + b->name + "_0[" +
       lane_tile_words(ast_expr_to_c(*n.tile_lane_origin), *b, group,
                       kept != c.kept.end() ? &kept->second.tile_stride : nullptr) +
       "];\n";
  s += in + "for (int64_t kiln_kk = 0; kiln_kk < " + b->name +
       "_k; kiln_kk += " + std::to_string(group) + ") {\n";
  for (int64_t q = 0; q < vectors; ++q)
    s += in2 + words + " kiln_b" + std::to_string(q) + "; __builtin_memcpy(&kiln_b" +
         std::to_string(q) + ", &" + t + "_b[(kiln_kk >> " + group_shift + ") * " + l_str + " + " +
         std::to_string(q * per) + "], " + size + ");\n";
  // a's bytes unsigned and b's signed, or the roles swapped (ir/loop_ir.h, DotSigns).
  const bool swapped = n.dot_signs == DotSigns::signed_unsigned;
  for (int64_t r = 0; r < rows; ++r) {
    s += in2 + "{ uint32_t kiln_x; __builtin_memcpy(&kiln_x, " + t + "_a" + std::to_string(r) +
         " + kiln_kk, 4); const " + words + " kiln_a = (" + words + "){0} + kiln_x;\n";
    for (int64_t q = 0; q < vectors; ++q) {
      const std::string bq = "kiln_b" + std::to_string(q);
      s += in2 + "  " + acc(r, q) + " = " + dp + "(" + acc(r, q) + ", " +
           (swapped ? bq + ", kiln_a" : "kiln_a, " + bq) + ");\n";
    }
    s += in2 + "}\n";
  }
  s += in + "}\n";
  // The signs' corrections for this k block: −128 × each lane's column sum of b (a was
  // packed + 128), or +128 × each row's sum of a (b was packed − 128).
  if (n.dot_signs == DotSigns::signed_signed) {
    for (int64_t q = 0; q < vectors; ++q)
      s += in + "{ " + v + " kiln_cs; __builtin_memcpy(&kiln_cs, &" + b->name + "_s[" +
           lane_origin + " + " + std::to_string(q * per) + "], " + size + "); kiln_cs <<= 7;" +
           [&] {
             std::string o;
             for (int64_t r = 0; r < rows; ++r)
               o += " " + acc(r, q) + " -= kiln_cs;";
             return o;
           }() +
           " }\n";
  } else if (n.dot_signs == DotSigns::unsigned_unsigned) {
    for (int64_t r = 0; r < rows; ++r) {
      s += in + "{ const " + v + " kiln_rs = (" + v + "){0} + ((uint32_t)" + a->name + "_s[" +
           std::to_string(r) + " < " + t + "_rows ? " + std::to_string(r) + " : 0] << 7);";
      for (int64_t q = 0; q < vectors; ++q)
        s += " " + acc(r, q) + " += kiln_rs;";
      s += " }\n";
    }
  }
  s += in + "if (" + t + "_direct) {\n" +
       each(
           [&](int64_t r, int64_t q) {
             return "__builtin_memcpy(" + vector_at(r, q) + ", &" + acc(r, q) + ", " + size + ");";
           },
           in2) +
       in + "} else {\n" +
       each(
           [&](int64_t r, int64_t q) {
             return "__builtin_memcpy(" + local_at(r, q) + ", &" + acc(r, q) + ", " + size + ");";
           },
           in2) +
       in2 + "for (int64_t r = 0; r < " + t + "_rows; ++r)\n" + in2 + "  for (int64_t l = 0; l < " +
       t + "_lanes; ++l)\n" + in2 + "    " + render_access(c, st.buffer, element) + " = " + local +
       "[r * " + l_str + " + l];\n" + in + "}\n";
  return s + pad + "}\n";
}

}  // namespace kiln
