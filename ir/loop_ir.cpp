#include "ir/loop_ir.h"

#include <map>
#include <stdexcept>

#include "ir/kernel_ir.h"
#include "ir/mma.h"

namespace kiln {

namespace {

std::string expr_text(const AstExpr& e);

std::string binary(const AstExpr& e, const char* sym) {
  return "(" + expr_text(*e.args.at(0)) + " " + sym + " " + expr_text(*e.args.at(1)) + ")";
}

std::string call(const AstExpr& e) {
  std::string out = e.op + "(";
  for (size_t k = 0; k < e.args.size(); ++k)
    out += (k ? ", " : "") + expr_text(*e.args[k]);
  return out + ")";
}

/** Top-level expressions drop their outer parentheses. */
std::string unwrap(std::string s) {
  if (s.size() < 2 || s.front() != '(' || s.back() != ')') return s;
  int depth = 0;
  for (size_t k = 0; k + 1 < s.size(); ++k) {
    depth += s[k] == '(' ? 1 : s[k] == ')' ? -1 : 0;
    if (depth == 0) return s;
  }
  return s.substr(1, s.size() - 2);
}

std::string expr_text(const AstExpr& e) {
  static const std::map<std::string, const char*> infix = {
      {"add", "+"}, {"sub", "-"},    {"mul", "*"},    {"div", "/"},   {"and", "&&"},
      {"or", "||"}, {"eq", "=="},    {"le", "<="},    {"lt", "<"},    {"ge", ">="},
      {"gt", ">"},  {"pdiv_q", "/"}, {"pdiv_r", "%"}, {"zdiv_r", "%"}};
  switch (e.kind) {
    case AstExpr::Kind::integer:
      return std::to_string(e.value);
    case AstExpr::Kind::iterator:
    case AstExpr::Kind::param:
      return e.name;
    case AstExpr::Kind::op:
      break;
  }
  if (e.op == "minus") return "-" + expr_text(*e.args.at(0));
  if (e.op == "select")
    return "(" + expr_text(*e.args.at(0)) + " ? " + expr_text(*e.args.at(1)) + " : " +
           expr_text(*e.args.at(2)) + ")";
  auto it = infix.find(e.op);
  if (it != infix.end() && e.args.size() == 2) return binary(e, it->second);
  if (e.op == "fdiv_q")
    return "floord(" + unwrap(expr_text(*e.args.at(0))) + ", " + unwrap(expr_text(*e.args.at(1))) +
           ")";
  return call(e);
}

/** A loop's band, tile, coincidence, reduction and streaming notes: "band 0.1 tile, reduction". */
std::string loop_notes(const LoopNode& n) {
  std::string notes;
  if (n.band >= 0)
    notes +=
        "band " + std::to_string(n.band) + "." + std::to_string(n.member) + (n.tile ? " tile" : "");
  if (n.coincident) notes += std::string(notes.empty() ? "" : ", ") + "coincident";
  if (n.reduction) notes += std::string(notes.empty() ? "" : ", ") + "reduction";
  if (n.group_threads)
    notes += std::string(notes.empty() ? "" : ", ") + "groups of " + expr_text(*n.group_threads) +
             (n.lanes_apart ? " lanes apart" : " threads");
  else if (n.lanes_apart)
    notes += std::string(notes.empty() ? "" : ", ") + "lanes apart";
  if (n.stream_bytes > 0)
    notes += std::string(notes.empty() ? "" : ", ") + "streaming stores from " +
             std::to_string(n.stream_bytes) + " bytes";
  return notes;
}

/** "r = o + 0..n-1". */
std::string range(const std::string& iter, const AstExprPtr& origin, int64_t count) {
  return iter + " = " + unwrap(expr_text(*origin)) + " + 0.." + std::to_string(count - 1);
}

/** ", by the TMA in boxes of 64x128" (innermost first) for a stage the TMA may fill, else "". */
std::string tma_text(const StagedOperand& o) {
  if (o.tma_box.empty()) return "";
  std::string box;
  for (int64_t b : o.tma_box)
    box += (box.empty() ? "" : "x") + std::to_string(b);
  return ", by the TMA in boxes of " + box;
}

/** A block tile's tensor-core instruction and staged operands: "; tensor cores m16n8k16.f16 in
 *  warps of 64x32; staged: [0] by row, k first, [rows][k + 8], 16-byte chunks (8), as stored". */
std::string staged_text(const LoopNode& n) {
  std::string out;
  if (n.mma)
    out += "; tensor cores " + n.mma->name + " in warps of " + std::to_string(n.warp_rows) + "x" +
           std::to_string(n.warp_lanes);
  if (n.stages > 1) out += "; a pipeline of " + std::to_string(n.stages) + " stages";
  if (n.mma_in_flight > 0)
    out += ", " + std::to_string(n.mma_in_flight) + " block of instructions in flight";
  if (n.k_strided) out += "; addresses strided along k";
  if (n.result_in_registers) out += "; the result in registers only";
  if (n.epilogue_staged) out += "; the epilogue through shared memory";
  if (n.epilogue_vector > 0)
    out += " in runs of " + std::to_string(n.epilogue_vector) + " lanes, 16-byte stores";
  for (size_t q = 0; q < n.staged.size(); ++q) {
    const StagedOperand& o = n.staged[q];
    std::string path;
    for (int c : o.path)
      path += (path.empty() ? "" : ".") + std::to_string(c);
    const std::string side = o.by_lane ? "lanes" : "rows", pad = " + " + std::to_string(o.pad);
    out += std::string(q ? "" : "; staged:") + " [" + (path.empty() ? "value" : path) + "] by " +
           (o.by_lane ? "lane" : "row") + (o.k_first ? ", k first, " : ", ") +
           (o.swizzle ? (o.k_major ? "[k][" + side + "]" : "[" + side + "][k]") + ", swizzled " +
                            std::to_string(o.swizzle) + "B"
            : o.k_major ? "[k][" + side + pad + "]"
                        : "[" + side + "][k" + pad + "]") +
           (o.vector > 1 ? ", chunks of " + std::to_string(o.vector) : "") +
           (o.as_stored ? ", as stored" : "") + tma_text(o) + (q + 1 < n.staged.size() ? ";" : "");
  }
  return out;
}

std::string alloc_line(const LoopNode& n) {
  std::string tile = std::to_string(n.tile_rows) + "x" + std::to_string(n.tile_lanes);
  std::string lanes_below =
      n.tile_lane_count ? ", lanes below " + unwrap(expr_text(*n.tile_lane_count)) : "";
  if (n.space == MemorySpace::shared && n.key_block > 0)
    return "alloc shared " + n.name + " = a " + tile + " online-softmax tile of S" +
           std::to_string(n.statement) + ": " + range(n.tile_row, n.tile_row_origin, n.tile_rows) +
           " where " + unwrap(expr_text(*n.tile_row_cond)) + ", " +
           range(n.tile_lane, n.tile_lane_origin, n.tile_lanes) + " where " +
           unwrap(expr_text(*n.tile_lane_cond)) + "; keys in blocks of " +
           std::to_string(n.key_block) + ", scores' reduction in blocks of " +
           std::to_string(n.pack_depth) + (n.mma ? "; warpgroup products " + n.mma->name : "") +
           "; " + std::to_string(n.stages) + " stages of keys and values" +
           (n.head_max > 0 ? "; launched for heads of " + std::to_string(n.head_min) + " to " +
                                 std::to_string(n.head_max) + " only"
                           : "") +
           (n.staged.size() == 2
                ? "; keys" + tma_text(n.staged[0]) + "; values" + tma_text(n.staged[1])
                : "");
  if (n.space == MemorySpace::shared)
    return "alloc shared " + n.name + " = a " + tile + " block tile of S" +
           std::to_string(n.statement) + ": " + range(n.tile_row, n.tile_row_origin, n.tile_rows) +
           " where " + unwrap(expr_text(*n.tile_row_cond)) + ", " +
           range(n.tile_lane, n.tile_lane_origin, n.tile_lanes) + " where " +
           unwrap(expr_text(*n.tile_lane_cond)) + "; " + std::to_string(n.thread_rows) + "x" +
           std::to_string(n.thread_lanes) + " per thread, reduction blocks of " +
           std::to_string(n.pack_depth) + staged_text(n);
  // A matrix node on VNNI vectors: their width and how the signs meet vpdpbusd's (or bf16's).
  std::string dot;
  if (n.dot_bytes > 0) {
    static const char* const signs[] = {"u8 by i8", "i8 by u8, roles swapped",
                                        "i8 by i8, a xor 0x80, -128 x column sums",
                                        "u8 by u8, b xor 0x80, +128 x row sums"};
    dot = n.dot_signs == DotSigns::bf16_pairs
              ? " on " + std::to_string(n.dot_bytes) + "-byte vdpbf16ps vectors (bf16 pairs)"
              : " on " + std::to_string(n.dot_bytes) + "-byte VNNI vectors (" +
                    signs[static_cast<int>(n.dot_signs)] + ")";
  }
  if (n.pack_depth > 0 && n.matrix) {
    std::string count =
        n.pack_count ? ", k rows below " + unwrap(expr_text(*n.pack_count)) : std::string();
    if (n.tile_rows > 0)
      return "pack " + n.name + " = the row operand of S" + std::to_string(n.statement) +
             " as it is (bf16 or 8 bits) for the matrix unit, for " +
             range(n.pack_iter, n.pack_origin, n.pack_depth) + ", " +
             range(n.tile_row, n.tile_row_origin, n.tile_rows) +
             (n.tile_row_count ? ", rows below " + unwrap(expr_text(*n.tile_row_count)) : "") +
             count + dot;
    return "pack " + n.name + " = the lane operand of S" + std::to_string(n.statement) +
           " in k pairs (bf16) or quads (8 bits) for the matrix unit, for " +
           range(n.pack_iter, n.pack_origin, n.pack_depth) + ", " +
           range(n.tile_lane, n.tile_lane_origin, n.tile_lanes) + lanes_below + count + dot;
  }
  if (n.pack_depth > 0 && n.tile_rows > 0)
    return "pack " + n.name + " = the rows' operands along " + n.pack_iter + " of S" +
           std::to_string(n.statement) + " for " + range(n.pack_iter, n.pack_origin, n.pack_depth) +
           ", " + range(n.tile_row, n.tile_row_origin, n.tile_rows) +
           (n.tile_row_count ? ", rows below " + unwrap(expr_text(*n.tile_row_count)) : "");
  if (n.pack_depth > 0)
    return "pack " + n.name + " = the row-shared lane operands of S" + std::to_string(n.statement) +
           " for " + range(n.pack_iter, n.pack_origin, n.pack_depth) + ", " +
           range(n.tile_lane, n.tile_lane_origin, n.tile_lanes) + lanes_below;
  std::string out = "alloc " + std::string(memory_space_name(n.space)) + " " + n.name +
                    (n.carried ? " = running value of S" : " = element of S") +
                    std::to_string(n.statement) + "(";
  for (size_t k = 0; k < n.args.size(); ++k)
    out += (k ? ", " : "") + (n.args[k] ? unwrap(expr_text(*n.args[k])) : std::string("_"));
  out += ")";
  if (n.partial) out += ", a partial sum added to it";
  if (n.carried && n.mapping == Mapping::parallel) out += ", split across threads";
  if (n.tile_rows > 0)
    out += ", a " + tile +
           (n.k_lanes > 0 ? " register tile along " + n.k_iter + " (vectors of " +
                                std::to_string(n.k_lanes) + " k summed at the end): "
            : !n.matrix       ? " register tile: "
            : n.dot_bytes > 0 ? " dot-product tile: "
                              : " matrix-unit tile: ") +
           range(n.tile_row, n.tile_row_origin, n.tile_rows) +
           (n.tile_row_count ? ", rows below " + unwrap(expr_text(*n.tile_row_count)) : "") + ", " +
           range(n.tile_lane, n.tile_lane_origin, n.tile_lanes) + lanes_below +
           (n.k_lanes > 0 && n.tile_init >= 0
                ? ", S" + std::to_string(n.tile_init) + " folded in (one pass over k)"
            : n.tile_fresh ? ", S" + std::to_string(n.tile_init) + " in registers where " +
                                 unwrap(expr_text(*n.tile_fresh))
                           : "") +
           dot + (n.sums_to_epilogue ? ", its sums kept for the epilogue in the last block" : "");
  return out;
}

/** The line of `n` itself, without its body. */
std::string node_line(const LoopNode& n) {
  switch (n.kind) {
    case LoopNode::Kind::block:
      return "";
    case LoopNode::Kind::loop: {
      std::string out = "for (" + n.iter + " = " + unwrap(expr_text(*n.init)) + "; " +
                        unwrap(expr_text(*n.cond)) + "; " + n.iter +
                        " += " + std::to_string(n.step) + ")";
      out += std::string("  // ") + mapping_name(n.mapping);
      if (n.simd_lanes > 0) out += " " + std::to_string(n.simd_lanes) + " lanes";
      std::string notes = loop_notes(n);
      return out + (notes.empty() ? "" : " (" + notes + ")");
    }
    case LoopNode::Kind::guard:
      return "if (" + unwrap(expr_text(*n.cond)) + ")";
    case LoopNode::Kind::stmt: {
      std::string out = "S" + std::to_string(n.statement) + "(";
      for (size_t k = 0; k < n.args.size(); ++k)
        out += (k ? ", " : "") + unwrap(expr_text(*n.args[k]));
      out += ");";
      if (n.k_lanes > 0) out += "  // " + std::to_string(n.k_lanes) + " k at once, along k";
      if (n.fill_k > 0)
        out += "  // " + std::to_string(n.fill_k) + " k rows at once, read along k and transposed";
      return out;
    }
    case LoopNode::Kind::alloc:
      return alloc_line(n);
    case LoopNode::Kind::barrier:
      return "barrier";
    case LoopNode::Kind::prefetch: {
      std::string out = "prefetch S" + std::to_string(n.statement) + "(";
      for (size_t k = 0; k < n.args.size(); ++k)
        out += (k ? ", " : "") + unwrap(expr_text(*n.args[k]));
      out += ")";
      for (size_t b = 0; b < n.prefetch_buffers.size(); ++b)
        out += (b ? ", " : ", the loads of b") + std::to_string(n.prefetch_buffers[b]);
      return out + ";";
    }
    case LoopNode::Kind::single:
      return "single  // one thread of the block";
  }
  return "";
}

void node_text(const LoopNode& n, int depth, std::string& out) {
  if (n.kind == LoopNode::Kind::block) {
    for (const auto& c : n.body)
      node_text(*c, depth, out);
    return;
  }
  out += std::string(2 * depth, ' ') + node_line(n) + "\n";
  for (const auto& c : n.body)
    node_text(*c, depth + 1, out);
}

}  // namespace

const char* mapping_name(Mapping m) {
  switch (m) {
    case Mapping::serial:
      return "serial";
    case Mapping::parallel:
      return "parallel";
    case Mapping::simd:
      return "simd";
    case Mapping::unroll:
      return "unroll";
    case Mapping::block_x:
      return "block.x";
    case Mapping::block_y:
      return "block.y";
    case Mapping::block_z:
      return "block.z";
    case Mapping::thread_x:
      return "thread.x";
    case Mapping::thread_y:
      return "thread.y";
    case Mapping::thread_z:
      return "thread.z";
  }
  return "?";
}

const char* memory_space_name(MemorySpace s) {
  switch (s) {
    case MemorySpace::global:
      return "global";
    case MemorySpace::shared:
      return "shared";
    case MemorySpace::local:
      return "local";
  }
  return "?";
}

namespace {

void collect_nodes(const LoopNode& n, LoopNode::Kind kind, std::vector<const LoopNode*>& out) {
  if (n.kind == kind) out.push_back(&n);
  for (const LoopNodePtr& c : n.body)
    collect_nodes(*c, kind, out);
}

}  // namespace

std::vector<const LoopNode*> nodes_of(const LoopNode& root, LoopNode::Kind kind) {
  std::vector<const LoopNode*> out;
  collect_nodes(root, kind, out);
  return out;
}

void flatten_blocks(const std::vector<LoopNodePtr>& body, std::vector<LoopNodePtr>& out) {
  for (const LoopNodePtr& c : body)
    if (c->kind == LoopNode::Kind::block)
      flatten_blocks(c->body, out);
    else
      out.push_back(c);
}

std::vector<const LoopNode*> loops_of(const LoopNode& root) {
  return nodes_of(root, LoopNode::Kind::loop);
}

const LoopNode* perfect_nest(const LoopNode& n, std::vector<const LoopNode*>& loops) {
  switch (n.kind) {
    case LoopNode::Kind::stmt:
      return &n;
    case LoopNode::Kind::loop:
      loops.push_back(&n);
      [[fallthrough]];
    case LoopNode::Kind::block:
      return n.body.size() == 1 ? perfect_nest(*n.body[0], loops) : nullptr;
    default:
      return nullptr;
  }
}

AstExprPtr ast_int(int64_t v) {
  auto e = std::make_shared<AstExpr>();
  e->value = v;
  return e;
}

AstExprPtr ast_iter(const std::string& name) {
  auto e = std::make_shared<AstExpr>();
  e->kind = AstExpr::Kind::iterator;
  e->name = name;
  return e;
}

AstExprPtr ast_op(const std::string& op, std::vector<AstExprPtr> args) {
  auto e = std::make_shared<AstExpr>();
  e->kind = AstExpr::Kind::op;
  e->op = op;
  e->args = std::move(args);
  return e;
}

bool plus_iterator(const AstExpr& e, const std::string& iter) {
  if (e.kind == AstExpr::Kind::iterator) return e.name == iter;
  if (e.kind != AstExpr::Kind::op || (e.op != "add" && e.op != "sub") || e.args.size() != 2)
    return false;
  if (e.op == "sub") return plus_iterator(*e.args[0], iter) && !uses_iterator(*e.args[1], iter);
  return (plus_iterator(*e.args[0], iter) && !uses_iterator(*e.args[1], iter)) ||
         (plus_iterator(*e.args[1], iter) && !uses_iterator(*e.args[0], iter));
}

std::set<std::string> driven_iterators(const LoopNode& stmt, const std::string& iter) {
  std::set<std::string> out;
  for (size_t a = 0; a < stmt.args.size(); ++a)
    if (stmt.args[a] && uses_iterator(*stmt.args[a], iter))
      out.insert(iterator_name(static_cast<int>(a)));
  return out;
}

bool uses_iterator(const AstExpr& e, const std::string& iter) {
  if (e.kind == AstExpr::Kind::iterator) return e.name == iter;
  for (const AstExprPtr& a : e.args)
    if (uses_iterator(*a, iter)) return true;
  return false;
}

bool same_expr(const AstExpr& a, const AstExpr& b) {
  if (a.kind != b.kind || a.value != b.value || a.name != b.name || a.op != b.op ||
      a.args.size() != b.args.size())
    return false;
  for (size_t k = 0; k < a.args.size(); ++k)
    if (!same_expr(*a.args[k], *b.args[k])) return false;
  return true;
}

AstExprPtr substitute(const AstExprPtr& e, const std::string& iter, const AstExprPtr& value) {
  if (e->kind == AstExpr::Kind::iterator && e->name == iter) return value;
  if (e->kind != AstExpr::Kind::op || !uses_iterator(*e, iter)) return e;
  auto copy = std::make_shared<AstExpr>(*e);
  for (AstExprPtr& a : copy->args)
    a = substitute(a, iter, value);
  return copy;
}

std::string loop_expr_to_text(const AstExpr& e) {
  return unwrap(expr_text(e));
}

std::string loop_node_to_text(const LoopNode& n) {
  return node_line(n);
}

std::string loop_annotations(const LoopNode& n) {
  return loop_notes(n);
}

std::string loop_nest_to_text(const LoopNest& nest) {
  std::string out;
  if (nest.program_order) out += "// in program order: isl ran past its operation or time limit\n";
  if (nest.one_block) out += "// one block: no loop runs across blocks\n";
  if (nest.root) node_text(*nest.root, 0, out);
  return out;
}

int first_tensor_map(const LoopNest& nest, const LoopNode& tile) {
  int first = 0;
  if (!nest.root) return first;
  for (const LoopNode* a : nodes_of(*nest.root, LoopNode::Kind::alloc)) {
    if (a == &tile) break;
    if (a->space == MemorySpace::shared)
      for (const StagedOperand& o : a->staged)
        first += !o.tma_box.empty();
  }
  return first;
}

std::vector<TensorMapUse> tensor_maps_of(const LoopNest& nest) {
  std::vector<TensorMapUse> maps;
  if (!nest.root) return maps;
  for (const LoopNode* tile : nodes_of(*nest.root, LoopNode::Kind::alloc)) {
    if (tile->space != MemorySpace::shared) continue;
    for (const StagedOperand& o : tile->staged)
      if (!o.tma_box.empty()) maps.push_back({o.tma_buffer, o.tma_box, o.tma_fold});
  }
  return maps;
}

}  // namespace kiln
