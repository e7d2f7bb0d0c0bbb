// The workspace of a kernel's kept packed panels (backends/packed_weights.h): its regions, the
// pointers the loop function takes into them, and the exported function that gives its bytes.
#include <algorithm>

#include "backends/c_style.h"

namespace kiln {

namespace {

/** A region of a kernel's workspace: the arrays of one row-shared load of the packs of one
 *  statement. Those packs' lane tiles cover disjoint lanes, so they share it, sized for the
 *  widest. A dot-product tile's lane pack (PersistentPack::group > 0) has a region of words of
 *  `group` k values, and with PersistentPack::sums a second one of its lanes' sums per k block
 *  of `depth` (array 1), `lanes` then the pack's lanes. */
struct Region {
  int statement = -1, lane_iterator = -1, k_iterator = -1;
  size_t array = 0;
  int64_t lanes = 0;
  int group = 0;
  int64_t depth = 0;
};

/** The arrays pack `p` keeps: its loads' (one per row-shared load), or a dot tile's words and
 *  its sums. */
size_t kept_arrays(const PersistentPack& p) {
  return p.group > 0 ? (p.sums ? 2 : 1) : p.arrays;
}

/** The regions `packs` use, and in `first` the region of each pack's array 0 (the others follow).
 */
std::vector<Region> workspace_regions(const std::vector<PersistentPack>& packs,
                                      std::vector<size_t>& first) {
  std::vector<Region> out;
  for (const PersistentPack& p : packs) {
    const LoopNode& n = *p.pack;
    const size_t arrays = kept_arrays(p);
    auto same = [&](const Region& r) {
      return r.statement == n.statement && r.lane_iterator == p.lane_iterator &&
             r.k_iterator == p.k_iterator && r.group == p.group && r.array == 0;
    };
    auto it = std::find_if(out.begin(), out.end(), same);
    if (it != out.end() && p.group == 0 &&
        static_cast<size_t>(std::count_if(it, out.end(), [&](const Region& r) {
          return r.statement == n.statement && r.lane_iterator == p.lane_iterator &&
                 r.k_iterator == p.k_iterator;
        })) == arrays) {
      first.push_back(static_cast<size_t>(it - out.begin()));
      for (size_t a = 0; a < arrays; ++a)
        it[a].lanes = std::max(it[a].lanes, n.tile_lanes);
      continue;
    }
    first.push_back(out.size());
    for (size_t a = 0; a < arrays; ++a)
      out.push_back({n.statement, p.lane_iterator, p.k_iterator, a,
                     p.group > 0 && a == 1 ? n.pack_lanes : n.tile_lanes, p.group, n.pack_depth});
  }
  return out;
}

/** The bytes of each region, whole 64-byte lines, as C expressions of the sizes. */
std::vector<std::string> region_bytes(const Kernel& k, const std::vector<Region>& regions,
                                      const std::set<std::string>& sizes) {
  std::vector<std::string> out;
  for (const Region& r : regions) {
    const Statement& st = k.statements.at(r.statement);
    int64_t per_line =
        r.group == 0 && st.value->dtype == DType::f64 ? 8 : 16;  // f16 and bf16 pack as f32
    const std::string depth = int_expr_to_c(st.extents.at(r.k_iterator), sizes);
    // k rows (f32, f64), k groups of words, or k blocks of sums
    const int64_t per = r.group == 0 ? 1 : r.array == 0 ? r.group : r.depth;
    const std::string rows =
        per == 1 ? "(" + depth + ")"
                 : "((" + depth + ") + " + std::to_string(per - 1) + ") / " + std::to_string(per);
    std::string elements = rows + " * ((" + int_expr_to_c(st.extents.at(r.lane_iterator), sizes) +
                           ") + " + std::to_string(r.lanes) + ")";
    out.push_back("(" + elements + " + " + std::to_string(per_line - 1) + ") / " +
                  std::to_string(per_line) + " * 64");
  }
  return out;
}

}  // namespace

bool CStyleRenderer::keeps_packs() const {
  return true;
}

std::string CStyleRenderer::workspace_prologue(const Context& c,
                                               const std::vector<PersistentPack>& packs) const {
  std::vector<size_t> first;
  std::vector<Region> regions = workspace_regions(packs, first);
  std::vector<std::string> bytes = region_bytes(c.kernel, regions, c.sizes);
  std::string s = "  const int kiln_packed = *(const int64_t*)kiln_ws == 1;\n";
  c.local_params += ", const int kiln_packed";
  c.local_args += ", kiln_packed";
  std::string at = "64";  // past the header
  for (size_t r = 0; r < regions.size(); ++r) {
    const Statement& st = c.kernel.statements.at(regions[r].statement);
    std::string type = regions[r].group > 0 ? (regions[r].array == 0 ? "uint32_t" : "int32_t")
                       : st.value->dtype == DType::f64 ? "double"
                                                       : "float";
    std::string name = "kiln_pw" + std::to_string(r);
    s += "  " + type + "* restrict " + name + " = (" + type + "*)(kiln_ws + " + at + ");\n";
    c.local_params += ", " + type + "* restrict " + name;
    c.local_args += ", " + name;
    at += " + (" + bytes[r] + ")";
  }
  for (size_t p = 0; p < packs.size(); ++p) {
    const LoopNode& n = *packs[p].pack;
    const Statement& st = c.kernel.statements.at(n.statement);
    std::string depth = int_expr_to_c(st.extents.at(packs[p].k_iterator), c.sizes);
    if (packs[p].group > 0) {
      // The words of the k block from pack_origin: its k groups of each lane tile from
      // (origin / group) · W; a lane tile at origin o starts o · KG words on. Its sums: k block
      // (origin / D) of N + P each.
      const std::string origin = "(" + ast_expr_to_c(*n.pack_origin) + ")",
                        group = std::to_string(packs[p].group);
      CStyleRenderer::Context::Kept kept{
          first[p], origin + " / " + group + " * " + std::to_string(n.tile_lanes),
          "((" + depth + ") + " + std::to_string(packs[p].group - 1) + ") / " + group, ""};
      if (packs[p].sums)
        kept.sums_offset = origin + " / " + std::to_string(n.pack_depth) + " * ((" +
                           int_expr_to_c(st.extents.at(packs[p].lane_iterator), c.sizes) + ") + " +
                           std::to_string(n.pack_lanes) + ")";
      c.kept[&n] = kept;
      continue;
    }
    std::string k_rows =
        "(" + ast_expr_to_c(*n.pack_origin) + ") * " + std::to_string(n.tile_lanes);
    if (n.pack_lane_base)  // the lane tile's part of the offset is the element's (pack_element)
      c.kept[&n] = {first[p], k_rows, depth};
    else
      c.kept[&n] = {first[p],
                    "(" + ast_expr_to_c(*n.tile_lane_origin) + ") * (" + depth + ") + " + k_rows,
                    ""};
  }
  return s;
}

std::string CStyleRenderer::workspace_function(const Context& c,
                                               const std::vector<PersistentPack>& packs,
                                               const std::string& symbol) const {
  std::vector<size_t> first;
  std::vector<Region> regions = workspace_regions(packs, first);
  std::string s = "\n/* The bytes of " + symbol + "'s workspace: a header and its panels. */\n";
  s += "int64_t " + workspace_symbol(symbol) + "(const int64_t* restrict sizes) {\n";
  for (size_t v = 0; v < c.plan.size_vars.size(); ++v)
    s += "  const int64_t " + size_name(c.plan.size_vars[v]) + " = sizes[" + std::to_string(v) +
         "];\n  (void)" + size_name(c.plan.size_vars[v]) + ";\n";
  s += "  return 64";
  for (const std::string& b : region_bytes(c.kernel, regions, c.sizes))
    s += " + (" + b + ")";
  return s + ";\n}\n";
}

}  // namespace kiln
