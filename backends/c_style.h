/** \file
 * The shared C-style renderer: kernel IR + loop IR → source text. It owns the structure
 * (prelude, signature, loops, register promotions, statements, index arithmetic, dtype
 * conversions) and asks virtual hooks for what differs between languages: backends/c_renderer.h
 * is plain C, backends/openmp_renderer.h adds pragmas through loop_annotation.
 */
#pragma once

#include <map>
#include <set>
#include <string>

#include "backends/packed_weights.h"
#include "ir/kernel_ir.h"
#include "ir/loop_ir.h"

namespace kiln {

/** How to render. */
struct RenderOptions {
  /** Every buffer access checks its element index against the buffer's size; a failed check
   *  fills the module's `kiln_check_record` and traps (--config CHECK=1, driver/fault_guard.h). */
  bool bounds_checks = false;
  /** The bytes of the vectors register tiles hold (RegisterTileShape::vector_bytes). */
  int vector_bytes = 32;
  /** The tensor maps every kernel's parameter holds (the most any nest's TMA copies read,
   *  tensor_maps_of); render() sets it from the nests. */
  int tensor_maps = 0;
};

/** A CUDA module's `<symbol>_tensor_maps`: the maps kernel `symbol`'s launches pass
 *  (tensor_maps_of), as int64: their count, then kTensorMapFields each: the buffer's place in
 *  the kernel's Kernel::buffers, TensorMapUse::fold, the box's rank, the box (5 entries,
 *  innermost first). The executable reads it, so a module from the cache needs no nests. */
inline constexpr const char* kTensorMapsSuffix = "_tensor_maps";
inline constexpr int kTensorMapFields = 8;
inline constexpr int kMaxTensorMaps = 8;  ///< per kernel

/** The exported record a failed bounds check fills: buffer, element, element count, 1. */
inline constexpr const char* kCheckRecordSymbol = "kiln_check_record";

/** Renders kernels in a C-like language. */
class CStyleRenderer {
 public:
  virtual ~CStyleRenderer() = default;

  /** One translation unit holding every kernel of `plan`, kernel k as the function
   *  `symbols[k]` with loop nest `nests[k]`, in the calling convention of
   * include/kiln/plugin_api.h. */
  std::string render(const KernelPlan& plan, const std::vector<LoopNest>& nests,
                     const std::vector<std::string>& symbols,
                     const RenderOptions& options = {}) const;

  /** The library functions the rendered source of `plan` calls, which the process must provide
   *  when the module is loaded (e.g. "cblas_sgemm"); empty when the plan has no extern calls. */
  virtual std::vector<std::string> extern_symbols(const KernelPlan& plan) const;

 protected:
  /** Includes and helper functions. */
  virtual std::string prelude() const;
  /** The function header up to the opening brace. */
  virtual std::string signature(const std::string& symbol) const;
  /** Where a loop sits, for loop_annotation. */
  struct LoopSite {
    const Kernel& kernel;
    /** The alloc node of the accumulator this loop's reduction goes to, or null. */
    const LoopNode* accumulator = nullptr;
    /** For a parallel loop: how many loops, this one included, are mapped parallel in a
     *  perfect nest from here (a backend may collapse them). */
    int collapse = 1;
    /** Collapsed into an enclosing parallel loop, whose annotation covers it. */
    bool collapsed = false;
  };
  /** Lines placed before a loop (pragmas) from its mapping; empty by default. */
  virtual std::string loop_annotation(const LoopNode& loop, const LoopSite& site) const;
  /** The C type values of `t` are computed in (f16 and bf16 compute in float). */
  virtual std::string compute_type(DType t) const;
  /** The C type a buffer of `t` stores. */
  virtual std::string storage_type(DType t) const;
  /** A float literal of dtype `t`. */
  virtual std::string float_literal(double v, DType t) const;
  /** A unary float function such as sqrt, exp2, log2, sin for dtype `t`. */
  virtual std::string math_call(const std::string& fn, DType t, const std::string& a) const;
  /** Declarations and wrappers the extern calls of `plan` need, after the prelude (CBLAS by
   *  default: backends/c_externs.h); empty when there are none. */
  virtual std::string extern_helpers(const KernelPlan& plan) const;
  /** The statement for one extern call. */
  virtual std::string extern_call(const KernelPlan& plan, const Statement& st) const;

  /** What rendering one kernel needs at every node. */
  struct Context {
    const KernelPlan& plan;
    const Kernel& kernel;
    const RenderOptions& options;
    const LoopNest& nest;
    const std::set<std::string> sizes;  ///< the plan's size variables
    /** Shared subexpressions of the statement being rendered, bound to locals. */
    mutable std::map<const ScalarExpr*, std::string> bound;
    /** Loads whose element index was computed into a local before the statement. */
    mutable std::map<const ScalarExpr*, std::string> index_bound;
    /** Statements whose target element lives in a register, by name (alloc nodes). */
    mutable std::map<const Statement*, std::string> promoted;
    /** The alloc node of the accumulator being rendered, or null. */
    mutable const LoopNode* accumulator = nullptr;
    /** The loops around the node being rendered, outermost first. */
    mutable std::vector<const LoopNode*> loops;
    /** Promoted max reductions whose register holds ordered integer keys (max_keys). */
    mutable std::set<const Statement*> keyed;
    /** The register tile (an alloc node with tile_rows > 0) being rendered, or null. */
    mutable const LoopNode* tile = nullptr;
    /** In a matrix tile's epilogue (LoopNode::sums_to_epilogue): the buffer of its sums and
     *  the element of the tile's local copy that a load of it reads instead, or -1. */
    mutable int sums_buffer = -1;
    mutable std::string sums_element = {};
    /** In a partial register tile: how many lanes of the vector being rendered exist. */
    mutable std::string lane_limit = {};
    /** Vector loads of a register tile's update that its rows share, bound to locals. */
    mutable std::map<const ScalarExpr*, std::string> lane_bound = {};
    /** Loads a vector loop read before the statement (render_vector_loop), by the expression of
     *  their value in one lane. */
    mutable std::map<const ScalarExpr*, std::string> preloaded = {};
    /** Scan statements whose running value a register carries, by name (render_carry). */
    mutable std::map<const Statement*, std::string> carried = {};
    /** The first pass of a split scan: carried statements set their register, store nothing. */
    mutable bool carry_only = false;
    /** The carried alloc nodes around the node being rendered, outermost first. */
    mutable std::vector<const LoopNode*> carries = {};
    /** The packed panel (an alloc with pack_depth) being filled, or whose tiles are rendered. */
    mutable const LoopNode* filling = nullptr;
    mutable const LoopNode* pack = nullptr;
    /** The pack of the row operands whose tiles are rendered: a matrix pack (LoopNode::matrix)
     *  or one of vector tiles' rows (tile_rows > 0). */
    mutable const LoopNode* row_pack = nullptr;
    /** Packed panels kept in the kernel's workspace (backends/packed_weights.h): the region
     *  of each one's first array (`kiln_pwR`; the others follow) and the element offset of the
     *  panel of the current lane tile and k block in them. */
    struct Kept {
      size_t region = 0;
      std::string offset;
      std::string tile_stride;  ///< a pack of several lane tiles: elements per lane of origin
      /** A dot tile's lane pack with sums (PersistentPack::sums): the offset of its k block's
       *  sums in region + 1, from lane 0. */
      std::string sums_offset = {};
    };
    mutable std::map<const LoopNode*, Kept> kept = {};
    /** The loop function's parameters (declarations, and the names a call passes), and the
     *  locals every node may read beside them (the workspace's), for outlined bodies. */
    std::string params = {}, args = {};
    mutable std::string local_params = {}, local_args = {};
    /** The kernel's symbol, and the functions outlined from its parallel loops so far. */
    std::string symbol = {};
    mutable std::string outlined = {};
    mutable int bodies = 0;
  };
  /** Whether packed panels of constant inputs persist across calls in a workspace the caller
   *  keeps (backends/packed_weights.h): true for the CPU renderers. */
  virtual bool keeps_packs() const;
  /** Whether the body of a parallel loop goes into a function of its own whose buffer
   *  parameters are `restrict`: false by default; OpenMP's outlining of a parallel region
   *  passes the buffers by reference, and the compiler then no longer knows that they do not
   *  overlap (docs/decisions.md, "Parallel loop bodies are functions of their own"). */
  virtual bool outlines_parallel_bodies() const;
  /** The workspace's region pointers, the test of its header, and the function the module
   *  exports for its bytes, for kernel `k`'s kept panels; fills c.kept. */
  std::string workspace_prologue(const Context& c, const std::vector<PersistentPack>& packs) const;
  std::string workspace_function(const Context& c, const std::vector<PersistentPack>& packs,
                                 const std::string& symbol) const;
  /** `kiln_check` and `kiln_check_record` for RenderOptions::bounds_checks. */
  virtual std::string bounds_check_helpers() const;
  /** The bits of compute value `x` (of C type `from`) as C type `to`. */
  virtual std::string bitcast(const std::string& from, const std::string& to,
                              const std::string& x) const;
  /** Declarations every kernel of `plan` shares, after the extern helpers; none by default. */
  virtual std::string plan_declarations(const KernelPlan& plan, const RenderOptions& options) const;
  /** The qualifiers of a kernel's loop function ("static "). */
  virtual std::string loops_qualifier() const;
  /** Whether a buffer the kernel writes is a `restrict` parameter of its loop function (the
   *  buffers it only reads always are); true by default. */
  virtual bool restrict_written() const;
  /** The address space of the buffers' pointers, with a trailing space ("__global " in OpenCL
   *  C); empty by default. */
  virtual std::string buffer_space() const;
  /** A parameter the loop function takes after the buffers, declared by the entry at kernel
   *  scope, and the entry's argument for it (OpenCL C's `__local` scratch, which only a kernel
   *  may declare); empty by default. */
  virtual std::pair<std::string, std::string> kernel_scope_param(
      const RenderOptions& options) const;
  /** The exported kernel: signature(symbol) calling `call` (the loop function's call). */
  virtual std::string entry(const KernelPlan& plan, const LoopNest& nest, const std::string& symbol,
                            const std::string& call) const;
  /** What the module tells the host of kernel `symbol` beside its code (the CUDA renderer: the
   *  tensor maps its launches pass, kTensorMapsSuffix); empty by default. */
  virtual std::string kernel_exports(const KernelPlan& plan, const Kernel& k, const LoopNest& nest,
                                     const std::string& symbol) const;
  /** `for (...)` of loop `n` with first value `init` and condition `cond` (C text). */
  virtual std::string loop_header(const Context& c, const LoopNode& n, const std::string& init,
                                  const std::string& cond) const;
  /** Lines that open the body of loop `n`, each ending in a newline, indented by `pad`: what
   *  its header leaves to the body (none by default). */
  virtual std::string loop_prologue(const Context& c, const LoopNode& n,
                                    const std::string& pad) const;
  /** Loop `n` with its iterations grouped into vectors by the backend, or empty: as it is
   *  (the default). */
  virtual std::string render_vector_loop(const Context& c, const LoopNode& n, int depth) const;
  /** The text of a barrier node at this point; the C renderers have none (kernels run on one
   *  CPU thread). */
  virtual std::string barrier(const Context& c) const;
  /** The condition under which a `single` node's body runs at this point, or empty: always
   *  (the CPU). */
  virtual std::string single_condition(const Context& c) const;
  std::string render_node(const Context& c, const LoopNode& n, int depth, int collapsed = 0) const;
  /** An alloc node: the promoted element loaded into a register before its body, stored after,
   *  both only when the body's loops run at least once. */
  std::string render_alloc(const Context& c, const LoopNode& n, int depth) const;
  /** A carried alloc node (scheduler/carry_scans.h): the register loaded with the element
   *  before the loop's first iteration, then standing for the scan's load of the element
   *  before; each iteration sets it and stores it. */
  std::string render_carry(const Context& c, const LoopNode& n, int depth) const;
  /** The loop below the carried alloc nodes c.carries (mapped parallel, their registers loaded)
   *  as a blocked scan whose parts run at once, or empty: as it is (the default, for renderers
   *  without threads). */
  virtual std::string render_split_scan(const Context& c, const LoopNode& loop, int depth) const;
  /** The load of carried alloc node `n`'s statement that reads the element before. */
  const ScalarExpr* carried_before(const Context& c, const LoopNode& n) const;
  /** The identity of combiner `op` (add, mul, max, bit_and, bit_or, bit_xor) in dtype `t`, as a
   *  C value of its compute type: what a reduction starts from and a scan's part before it. */
  std::string combine_identity(Op op, DType t) const;
  /** The vector types and their unaligned loads and stores that register tiles use
   *  (kiln_vf32, kiln_vld_f32, kiln_vst_f32 and the f64 ones), options.vector_bytes wide, and
   *  the masked load kiln_vldm_f32 (kiln_vldmc_f32, which checks each element, under
   *  options.bounds_checks). */
  virtual std::string vector_helpers(const RenderOptions& options) const;
  /** A register tile: its vectors loaded before its body and stored after
   *  (scheduler/register_tile.h). */
  std::string render_tile(const Context& c, const LoopNode& n, int depth) const;
  /** Statement node `n` inside register tile c.tile: one vector update per row and vector. */
  std::string render_tile_update(const Context& c, const LoopNode& n, int depth) const;
  /** A packed panel (LoopNode::pack_depth): its arrays, the loop that fills them, the tiles. */
  std::string render_pack(const Context& c, const LoopNode& n, int depth) const;
  /** A pack of vector tiles' row operands (pack_depth with tile_rows): an array of tile_rows
   *  × pack_depth values per operand, row r's k row at r · pack_depth + k − pack_origin. */
  std::string render_row_pack(const Context& c, const LoopNode& n, int depth) const;
  /** One instance of a row pack's fill: each row operand's element, as the tile computes it. */
  std::string render_row_fill(const Context& c, const LoopNode& n, int depth) const;
  /** The fill's statement node `n`: each row-shared lane load stored into its array. */
  std::string render_pack_fill(const Context& c, const LoopNode& n, int depth) const;
  /** A fill node with fill_k > 0: per block of fill_k lanes, each lane's `loads` read along k
   *  in vectors of element type `t`, transposed in registers, stored as fill_k k rows. */
  std::string render_transposed_fill(const Context& c, const LoopNode& n,
                                     const std::vector<const ScalarExpr*>& loads,
                                     const std::string& t, int depth) const;
  /** A register tile along k (LoopNode::k_lanes): vectors of partial sums along k, summed
   *  across their lanes after body[0], the k left added one at a time by body[1], stored. */
  std::string render_k_tile(const Context& c, const LoopNode& n, int depth) const;
  /** The update `n` in such a tile: vector loads along k (each row's and each lane's operands
   *  once) and the rows × lanes vector FMAs, or one k on the summed scalars. */
  std::string render_k_update(const Context& c, const LoopNode& n, int depth) const;
  /** Element (reduction iteration, `lane`) of the array of row-shared load `k` of `pack`. */
  std::string pack_element(const Context& c, const LoopNode& pack, size_t k, int64_t lane) const;
  /** The matrix unit (LoopNode::matrix, c_style_matrix.cpp): its helpers (tile configuration,
   *  loads, stores and bf16 dot products as inline assembly, for `amx`; the VNNI vector types
   *  and their dot product of bytes, for `dot`; the f32 vectors and their dot product of bf16
   *  pairs, for `bf16_dot`), a pack of bf16 or 8-bit operands, one
   *  element of its fill, and a 32 × 32 tile of f32 or i32 sums (render_dot_tile where it runs
   *  on VNNI vectors, LoopNode::dot_bytes). */
  std::string matrix_helpers(bool amx, bool dot, bool bf16_dot) const;
  std::string render_matrix_pack(const Context& c, const LoopNode& n, int depth) const;
  std::string render_matrix_fill(const Context& c, const LoopNode& n, int depth) const;
  std::string render_matrix_tile(const Context& c, const LoopNode& n, int depth) const;
  /** A tile of i32 sums on VNNI vectors (f32 sums of bf16 products): its rows × vectors of sums
   *  loaded (or zeroed), one `kiln_dpbusd` per row and vector per k quad (`kiln_dpbf16ps` per k
   *  pair) from the two packs, the signs' corrections, stored. */
  std::string render_dot_tile(const Context& c, const LoopNode& n, int depth) const;
  /** The lines that start matrix tile `n` (AMX or VNNI), indented by `in`: its row and lane
   *  counts (`<name>_rows`, `<name>_lanes`), its first element in the buffer and the elements
   *  from one row to the next (`_at`, `_ld`), and whether it moves between the buffer and the
   *  registers directly (`_direct`: whole, no bounds checks). */
  std::string tile_corner(const Context& c, const LoopNode& n, const std::string& in) const;
  /** Whether a float max reduction in a register accumulates ordered integer keys of its
   *  values (kiln_key_f32: an integer max, which vectorises without fast-math, plus a NaN flag)
   *  rather than floats through a NaN-propagating select, which stays scalar. */
  virtual bool max_keys() const;
  /** The first value of alloc node `n`'s register, given the element's `load`: the load. */
  virtual std::string accumulator_start(const Context& c, const LoopNode& n,
                                        const std::string& load) const;
  /** The lines after alloc node `n`'s body, given the element's `store` statement: the store. */
  virtual std::string accumulator_finish(const Context& c, const LoopNode& n,
                                         const std::string& store, const std::string& pad) const;
  /** Whether the loops of alloc node `n`'s body run: each loop's condition at its first value
   *  (the nest is rectangular), as C; "1" when it has none. */
  std::string nest_runs(const LoopNode& n) const;
  /** `const int64_t i0 = ...;` for each non-null entry of a stmt's or alloc's args. */
  std::string bind_iterators(const std::vector<AstExprPtr>& args, const std::string& pad) const;
  std::string render_index(const Context& c, int buffer, const std::vector<IntExpr>& index) const;
  /** Prefetch node `n` (ir/loop_ir.h): `__builtin_prefetch` of each distinct element its
   *  statement's instance reads through an unmasked load and, an assignment, writes (for
   *  writing), unchecked: a prefetch never faults. */
  std::string render_prefetch(const Context& c, const LoopNode& n, int depth) const;
  /** Declares a local for every subexpression of `e` used more than once, children first. */
  std::string bind_shared(const Context& c, const ScalarExpr& e) const;
  /** The same for `e` rendered across the lanes of a vector along `lanes` (render_stream): a
   *  shared subexpression that no lane iterator reaches becomes a scalar local (c.bound), one
   *  of the vector's type `vector_type` whose lanes differ a vector local (c.lane_bound); others
   *  stay inline. Without it a DAG whose nodes have many users (a backward graph's) is rendered
   *  as a tree, exponentially large. */
  std::string bind_shared_lanes(const Context& c, const ScalarExpr& e,
                                const std::set<std::string>& lanes, DType vector_dtype,
                                const std::string& vector_type) const;
  /** `e` as an expression of its compute type; loads in c.bound are the names bound. */
  std::string render_value(const Context& c, const ScalarExpr& e) const;
  /** A gather load (ir/kernel_ir.h, kGatherVar) with its masks, the position checked first
   *  under bounds checks: `(other masks && 0 <= p && p < n) ? b[..p..] : 0`. */
  std::string render_gather(const Context& c, const ScalarExpr& e) const;
  /** A scatter statement (ir/kernel_ir.h): the position bound to `kiln_g` once (checked under
   *  bounds checks), then `if (0 <= kiln_g && kiln_g < n) t[..kiln_g..] = combine(t[..], v);`. */
  std::string render_scatter(const Context& c, const Statement& st) const;
  /** The row-major element offset of `index` in `buffer`. */
  IntExpr linear_index(const Context& c, int buffer, const std::vector<IntExpr>& index) const;
  /** A GPU block tile of a contraction (an alloc in shared space, scheduler/gpu_tile.h); the
   *  GPU renderers override it, the others never meet one. */
  virtual std::string render_block_tile(const Context& c, const LoopNode& n, int depth) const;

 private:
  std::string render_function(const KernelPlan& plan, const Kernel& k, const LoopNest& nest,
                              const std::string& symbol, const RenderOptions& options) const;
  std::string render_loop(const Context& c, const LoopNode& n, int depth, int collapsed) const;
  /** Parallel loop `n`'s body as a function of its own (outlines_parallel_bodies), appended to
   *  c.outlined; returns the call that replaces it. */
  std::string outline_body(const Context& c, const LoopNode& n) const;
  /** A loop of streaming stores (LoopNode::stream_bytes): when the buffer it writes is that
   *  large, scalar iterations up to the first aligned vector, then vectors written with
   *  non-temporal stores (`kiln_vstnt_f32`), then the rest and a store fence; else the loop. */
  std::string render_stream(const Context& c, const LoopNode& n, int depth) const;
  std::string render_statement(const Context& c, const Statement& st) const;
  std::string render_op(const Context& c, const ScalarExpr& e) const;
  /** `e` across the lanes of a vector along the statement iterators `lanes`: loads that use
   *  them are vector loads, the parts that do not are scalars (ir/kernel_ir.h, lane_value). */
  std::string render_lanes(const Context& c, const ScalarExpr& e,
                           const std::set<std::string>& lanes) const;
  /** The C count of lanes of partial tile `tile` from lane `from` on. */
  std::string lane_count(const LoopNode& tile, int64_t from) const;
  /** A load of lanes [lo, hi) of the vector at element `offset` of `buffer`, zeros elsewhere;
   *  with `store` (a vector's name), a store of those lanes of it instead. Checked forms under
   *  RenderOptions::bounds_checks. */
  std::string masked_vector(const Context& c, int buffer, const std::string& offset,
                            const std::string& lo, const std::string& hi,
                            const std::string& store) const;
  /** The masked load `e` across `width` lanes from element `offset`: the lanes its mask keeps
   *  are read (one range: every mask bound moves by -1, 0 or +1 per lane), the others are 0 and
   *  never touch memory. */
  std::string render_masked_lanes(const Context& c, const ScalarExpr& e,
                                  const std::set<std::string>& lanes, const std::string& offset,
                                  int width) const;
  /** The load `e` as a `kiln_v<type>` of `width` lanes built one element per lane along
   *  iterator `lane` (neighbours not adjacent in memory, or f16/bf16 converted to f32); none
   *  read past a partial tile's last lane (Context::lane_limit). */
  std::string lane_by_lane(const Context& c, const ScalarExpr& e, const std::string& lane,
                           const std::string& type, int width) const;
  /** A pointer to `lanes` elements of `buffer` from `offset`, bounds-checked at both ends under
   *  RenderOptions::bounds_checks. */
  std::string render_vector_address(const Context& c, int buffer, const std::string& offset,
                                    int lanes) const;
  /** The C element count of `buffer` (the bound every checked access is checked against). */
  std::string buffer_elements(const Context& c, int buffer) const;
  /** `b<buffer>[offset]`, with a bounds check under RenderOptions::bounds_checks. */
  std::string render_access(const Context& c, int buffer, const std::string& offset) const;
};

/** A stored element `x` of dtype `t` as its compute value (f16 and bf16 widen to float). */
std::string from_storage(DType t, const std::string& x);
/** A compute value `x` as the storage of dtype `t`. */
std::string to_storage(DType t, const std::string& x);

/** Whether `e` divides by (or takes the modulus of) a value known only at run time. */
bool has_runtime_divisor(const IntExpr& e);

/** `const int64_t i0 = ..., i1 = ...; ` for the non-null `args` of a stmt or alloc node, on one
 *  line. */
std::string bind_line(const std::vector<AstExprPtr>& args);
/** An integer expression of statement iterators and size variables as C: the variables in
 *  `size_vars` print with the prefix `s_` (as the renderers declare them), the others are
 *  statement iterators and print as they are. */
std::string int_expr_to_c(const IntExpr& e, const std::set<std::string>& size_vars);
/** The C name of size variable `v` in a loop function: `s_v`. */
std::string size_name(const std::string& v);

/** An AST expression as C, with the same naming. */
std::string ast_expr_to_c(const AstExpr& e);

}  // namespace kiln
