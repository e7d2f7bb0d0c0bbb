/** \file
 * The loop IR: what scheduling produces and the backends render. Loops, guards, blocks,
 * statement instances, register promotions (`alloc`) and barriers, with integer expressions of
 * loop iterators and size parameters. Every loop carries typed annotations: the schedule band
 * and member it comes from, whether it walks tiles or points, whether it carries a reduction,
 * and its mapping onto the hardware (serial, parallel, simd, unroll, GPU blocks and threads).
 * Independent of isl: no isl type appears here.
 */
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace kiln {

struct AstExpr;
using AstExprPtr = std::shared_ptr<const AstExpr>;

/** An integer expression of the loop IR. `op` names follow isl's: "add", "sub", "mul", "minus",
 *  "div" (exact), "fdiv_q" (floor), "pdiv_q" / "pdiv_r" (non-negative operands), "zdiv_r",
 *  "min", "max", "and", "or", "eq", "le", "lt", "ge", "gt", "select". */
struct AstExpr {
  /** A loop iterator and a size parameter are distinct kinds, whatever their names. */
  enum class Kind { integer, iterator, param, op } kind = Kind::integer;
  int64_t value = 0;             ///< integer
  std::string name;              ///< iterator: a loop's `iter`; param: a size variable
  std::string op;                ///< op
  std::vector<AstExprPtr> args;  ///< op
};

/** How a loop's iterations are spread over the hardware. */
enum class Mapping {
  serial,    ///< one after another
  parallel,  ///< across CPU threads (the outermost parallel loop of a nest)
  simd,      ///< across the lanes of vector registers
  unroll,    ///< unrolled by the compiler
  block_x,
  block_y,
  block_z,  ///< across GPU thread blocks
  thread_x,
  thread_y,
  thread_z,  ///< across the threads of a GPU block
};

/** "serial", "parallel", "simd", "unroll", "block.x", ..., "thread.z". */
const char* mapping_name(Mapping m);

/** Where an `alloc` node's storage lives. */
enum class MemorySpace {
  global,  ///< device or host memory, visible to every thread
  shared,  ///< a GPU block's shared memory
  local,   ///< one thread's registers (scalar accumulators)
};

/** "global", "shared", "local". */
const char* memory_space_name(MemorySpace s);

struct LoopNode;
using LoopNodePtr = std::shared_ptr<const LoopNode>;
struct MmaInstruction;

/** One operand of a GPU block tile (scheduler/gpu_tile.h): a subexpression of its update's
 *  value that moves along the tile's rows only (or along neither) or along its lanes only,
 *  which the block copies into shared memory for each reduction block before its threads read
 *  it. */
struct StagedOperand {
  /** The subexpression: the child indices leading to it from the update's value. */
  std::vector<int> path;
  bool by_lane = false;  ///< it moves along tile_lane (else along tile_row, or neither)
  /** The fill walks the reduction first (memory holds the operand contiguously along the
   *  innermost reduction loop), else its rows or lanes first. */
  bool k_first = false;
  /** Shared memory holds it as [k][rows or lanes] (else [rows or lanes][k]). */
  bool k_major = true;
  /** Elements per fill chunk: 16 bytes where memory holds them contiguously along the fill's
   *  walk and the walk's extent divides, else 1. */
  int64_t vector = 1;
  /** Padding elements after each shared row (the rows of a warp's reads then fall in
   *  different banks). */
  int64_t pad = 0;
  /** Copied as stored (16-bit values for tensor cores), else in its compute type. */
  bool as_stored = false;
  /** 128: shared rows of 128 bytes whose 16-byte chunks are permuted within each group of 8
   *  rows (chunk c of row r at c xor r % 8), the layout warpgroup instructions read through
   *  their descriptors (ir/mma.h) and whose 8 rows of a chunk column fall in different banks;
   *  no padding. [rows or lanes][k] holds one row of D values (128 bytes) per row or lane;
   *  [k][rows or lanes] holds the rows or lanes in blocks of 128 bytes, one block after
   *  another, each D rows of k. 0: plain rows (padded by `pad`). */
  int64_t swizzle = 0;
  /** The bytes of one element as shared memory holds it. */
  int64_t element_bytes = 4;
  /** Non-empty: a swizzled stage the TMA may fill (sm_90; docs/decisions.md, "Warpgroup GEMM
   *  stages copied by the TMA") from a tensor map over the whole of the load's buffer, its
   *  dimensions innermost first: the box of each, the reduction block's depth along the
   *  dimension k moves, 64 rows or lanes (an MN-major stage, copied in blocks of 64) or all the
   *  tile's (a K-major one) along the one they move, 1 along the others. The launch passes the
   *  map (tensor_maps_of); where the TMA does not take it, the stage is copied by cp.async. */
  std::vector<int64_t> tma_box;
  /** With tma_box: the load's buffer; its index dimension k moves along, and the one its rows
   *  or lanes do. */
  int tma_buffer = -1, tma_k_dim = -1, tma_x_dim = -1;
  /** With tma_box: the load's leading index dimensions whose index is 0, folded into the next
   *  one (a view of the same addresses: the coalesced rows of a[B, M, K] read as a[0, r, k] with
   *  r over B·M): the map has tma_box.size() = index dimensions - tma_fold, its outermost
   *  extent the product of the folded ones'. */
  int tma_fold = 0;
};

/** How a vector dot product of unsigned by signed bytes (vpdpbusd) takes the row operand a and
 *  the lane operand b of an 8-bit matrix tile on vector registers (LoopNode::dot_bytes); every
 *  form is exact in wrapping i32 arithmetic. A tile of bf16 products is bf16_pairs. */
enum class DotSigns {
  unsigned_signed,  ///< a u8, b i8: a's bytes unsigned, b's signed, as they are
  signed_unsigned,  ///< a i8, b u8: the roles swapped (b's quads unsigned, a's bytes signed)
  /** both i8: the row pack holds a xor 0x80 (a + 128, unsigned), the lane pack its lanes'
   *  sums Σ_k b[k, n], and each lane's sums take −128 times its column sum per k block. */
  signed_signed,
  /** both u8: the lane pack holds b xor 0x80 (b − 128, signed), the row pack its rows' sums
   *  Σ_k a[m, k], and each row's sums take +128 times its row sum per k block. */
  unsigned_unsigned,
  /** not bytes: bf16 pairs into f32 sums (vdpbf16ps), the operands as they are. */
  bf16_pairs,
};

/** A node of the loop IR.
 *  - block: `body` in order.
 *  - loop: `for (iter = init; cond; iter += step) body`, with its annotations.
 *  - guard: `if (cond) body`.
 *  - stmt: one instance of Kernel::statements[statement], its iterators bound to `args`.
 *  - alloc: storage in `space` for the duration of `body`. In `local` space it promotes one
 *    element to a scalar register `name`: the element that statement `statement` writes with
 *    its iterators bound to `args` (an entry is null where the index does not use that
 *    iterator). Buffers are reached through statements only, so a loop nest fits every kernel
 *    whose statements correspond (scheduler/schedule_cache.h). The register is loaded before the
 * body and stored after it, and that statement accumulates into the register inside (a reduction's
 * scalar accumulator).
 *    An alloc with pack_depth > 0 is a packed panel of operands instead (see pack_depth).
 *    In `shared` space it is a GPU block tile of a contraction instead (see thread_rows).
 *  - barrier: every thread of a GPU block waits for the others (none on the CPU).
 *  - single: `body` runs on one thread of the GPU block (thread 0); on the CPU a plain block.
 *  - prefetch: the cache lines of the elements statement `statement`'s instance at `args` would
 *    read (its unmasked loads) and, an assignment, write are fetched ahead, for writing where it
 *    writes; no value changes (scheduler/prefetch_rows.h). Not a statement instance: stmt walks
 *    do not see it.
 *
 * GPU mappings (scheduler/map_gpu.h): a `block.x` loop strides over the grid's blocks (its
 * first value offset by the block index, its step times the block count), so any grid size
 * is correct; a `thread.x` loop inside one strides over the threads of the block, and one
 * outside any `block.x` loop over every thread of the grid, unless the kernel runs on block 0
 * alone (LoopNest::one_block). */
struct LoopNode {
  enum class Kind { block, loop, guard, stmt, alloc, barrier, single, prefetch } kind = Kind::block;
  std::vector<LoopNodePtr> body;  ///< block: children in order; loop, guard, alloc: the body
  std::string iter;               ///< loop: the iterator (a C identifier, e.g. "c0")
  AstExprPtr init;                ///< loop: first value
  AstExprPtr cond;                ///< loop: continue while true; guard: execute when true
  int64_t step = 1;               ///< loop
  int band = -1;                  ///< loop: the schedule band it comes from (-1: none)
  int member = -1;                ///< loop: its position in that band
  bool tile = false;              ///< loop: walks tiles (its point loop is in the band below)
  bool coincident = false;        ///< loop: no dependence is carried, iterations may reorder
  bool reduction = false;         ///< loop: carries a reduction into a scalar accumulator
  /** loop: every dependence it carries is a reduction's update of its own element (isl's
   *  dependences; true for a coincident loop): a reduction loop may run across vector lanes
   *  only then (scheduler/map_loops.h). */
  bool only_reductions = false;
  /** loop: when > 0, its one statement writes in vectors with non-temporal stores, bypassing
   *  the caches, where the buffer it writes has at least this many bytes
   *  (scheduler/stream_stores.h). */
  int64_t stream_bytes = 0;
  /** loop mapped to `block.x` whose body is a block body: when set, groups of this many
   *  consecutive threads (32 or the whole block; an expression of the sizes)
   *  take its iterations, each group one at a time, and the body's thread loops, block
   *  reductions, single-thread runs and barriers span the group's threads only
   *  (scheduler/group_rows.h). Null: the whole block takes each iteration. */
  AstExprPtr group_threads;
  /** loop mapped to `block.x` with group_threads: the groups interleave instead, group g of a
   *  block of G groups being threads g, g + G, g + 2G, ... (its lanes, a warp or more apart),
   *  so that a warp's consecutive threads take consecutive iterations: rows whose reductions
   *  read across the rows (a column sum) stay coalesced while each row's sum is split among
   *  its lanes. Set by map_gpu (scheduler/map_gpu.h); group_rows chooses the lanes. */
  bool lanes_apart = false;
  Mapping mapping = Mapping::serial;  ///< loop; a carried alloc (see `carried`)
  /** loop mapped to simd: the vector lanes it runs at, chosen by map_simd from the target's
   *  full-width vectors (scheduler/map_loops.h); 0: the C compiler's choice. */
  int simd_lanes = 0;
  int statement = -1;  ///< stmt, alloc: index into Kernel::statements
  /** prefetch: when not empty, only the lines of the statement's loads of these buffers (a
   *  register tile's lane operand), not its other loads or its write. */
  std::vector<int> prefetch_buffers;
  /** stmt in a packed panel's fill (alloc with pack_depth > 0, body[0]): when > 0 this instance
   *  fills fill_k k rows from its k on for blocks of fill_k lanes at once: each lane's operands
   *  read along k in one vector (they lie contiguous there, as w[j, k] of x · wᵀ does), the
   *  fill_k × fill_k blocks transposed in registers (scheduler/register_tile.h). fill_k is the
   *  packed element's vector lanes; 0: one k row, each lane's element loaded on its own. */
  int64_t fill_k = 0;
  /** alloc, a register tile (not matrix): when > 0 the tile runs its reduction along k, in the
   *  dot-product form (scheduler/register_tile.h): each of its tile_rows × tile_lanes elements
   *  is a vector of k_lanes partial sums over consecutive values of reduction loop `k_iter`,
   *  its operands read along k where they lie (no pack); rows and lanes past their counts
   *  compute on the last existing row's and lane's operands and are not stored. body[0] is the
   *  loop of whole vectors of k, body[1] the loop of the k left; after body[0] each vector is
   *  summed across its lanes, body[1] adds to those sums one k at a time, and the sums are
   *  stored where tile_init >= 0 (the init folded in), else added to the elements.
   *  stmt in such a tile: when > 0, this instance runs k_lanes consecutive k at once (each
   *  operand that moves along k read as one vector); 0: one k, on the summed scalars. */
  int64_t k_lanes = 0;
  std::string k_iter;            ///< alloc with k_lanes > 0: the reduction loop's iterator
  std::vector<AstExprPtr> args;  ///< stmt, alloc: the value of each statement iterator i0, i1...
  MemorySpace space = MemorySpace::local;  ///< alloc
  std::string name;                        ///< alloc: the register's name, e.g. "acc0"
  /** alloc in `local` space: the register carries a scan's running value along the loop below
   *  instead (scheduler/carry_scans.h): loaded before it, set and stored by each iteration. Its
   *  `mapping` is then `parallel` where that loop may split into parts that run on threads at
   *  once (a blocked scan, on renderers with threads; its bounds are the same for every
   *  iteration of the loops around), else `serial`. */
  bool carried = false;
  /** alloc in `local` space: the register starts from the reduction's identity, not from the
   *  element, and is added to the element after its loop: one block's partial sum of a long
   *  sum (scheduler/promote_accumulators.h), so that no term is added to a total of millions. */
  bool partial = false;
  int64_t tile_rows = 0;            ///< alloc: rows of a register tile (0: one element)
  int64_t tile_lanes = 0;           ///< alloc: elements per row of a register tile
  std::string tile_row, tile_lane;  ///< alloc: the iterators a tile's rows and lanes vary
  AstExprPtr tile_row_origin, tile_lane_origin;  ///< alloc: their values at the tile's corner
  /** alloc: how many of the tile's lanes exist (the last, partial tile of a row: lanes from
   *  this count on are neither read nor written); null when all tile_lanes do. */
  AstExprPtr tile_lane_count;
  /** alloc, a register tile: how many of its rows exist (at least one; the last tile of the
   *  rows may hold fewer): rows from this count on compute on the last existing row's operands
   *  and are neither stored nor given to an epilogue. Null when all tile_rows do. */
  AstExprPtr tile_row_count;
  /** alloc, a register tile: where `tile_fresh` holds (the first block of its reduction), the
   *  tile runs the reduce_init statement `tile_init` on its elements instead of loading them:
   *  it starts from the reduction's identity in registers (scheduler/register_tile.h folds the
   *  init nest in). `tile_init_args` are the init's iterator values, as `args` are the
   *  update's. Null / -1: the tile always loads. */
  AstExprPtr tile_fresh;
  int tile_init = -1;
  std::vector<AstExprPtr> tile_init_args;
  /** alloc: a packed panel when > 0: for D = pack_depth iterations of reduction loop
   *  `pack_iter` from `pack_origin`, the vectors of tile_lanes lanes (from tile_lane_origin,
   *  tile_lane_count of them when set) that statement `statement`'s loads read alike for every
   *  row of its register tiles (they do not use `tile_row`), copied into contiguous local
   *  arrays. body[0] is the loop that fills them (its stmt node names the statement), the rest
   *  the tiles that read them. With tile_rows > 0 (and not `matrix`) it is a row pack instead:
   *  the loads that move along `tile_row` and `pack_iter` but not `tile_lane` (a's rows), of
   *  tile_rows rows from tile_row_origin (tile_row_count of them when set), as the tiles
   *  compute them (f16 and bf16 widened to f32), row r's value at k at r · pack_depth + k −
   *  pack_origin; body[0] fills it (a nest of the rows and k around the statement), the rest
   *  are the row tile's lane tiles (RegisterTileShape::pack_rows). */
  int64_t pack_depth = 0;
  std::string pack_iter;
  AstExprPtr pack_origin;
  /** alloc, a packed panel of several lane tiles when set: the lane origin of the first. The
   *  fill (body[0]) and the tiles (the rest) then loop over lane tiles themselves, tile_lane_origin
   *  naming that loop's iterator, and the tile at lane origin o keeps its k row r's tile_lanes
   *  elements at (o - pack_lane_base) · pack_depth + r · tile_lanes; pack_lanes bounds
   *  o - pack_lane_base + tile_lanes (the arrays hold pack_depth × pack_lanes elements). */
  AstExprPtr pack_lane_base;
  int64_t pack_lanes = 0;
  /** alloc, CPU: a register tile or packed panel of the matrix unit (AMX with BF16 or INT8 dot
   *  products; RegisterTileShape::amx_bf16) instead of vector registers. A matrix register tile
   *  keeps its tile_rows × tile_lanes f32 sums (32 × 32) in four 16 × 16 tile registers and
   *  runs its body, a sum of products of two bf16 values, over the two matrix packs around it,
   *  32 k at a time. A matrix pack holds those bf16 values as they are: the lane operand's
   *  when tile_rows is 0 (the tile at lane origin o keeps k row r's value of lane l at
   *  (o - pack_lane_base) · pack_depth + (r / 2) · 2 · tile_lanes + 2 · l + r % 2: pairs of k
   *  side by side, as the unit reads them), the row operand's when tile_rows > 0 (row r's k
   *  row at r · pack_depth + k, rows from tile_row_origin). body[0] fills it, a loop nest
   *  around the statement binding every iterator its operand reads (for the lane operand the
   *  k loop steps by 2 and each instance fills the pair of k rows k, k + 1); values past pack_count
   *  k rows (up to the next multiple of 32) are zeros, and lanes or rows past a tile's count
   *  are never stored. */
  bool matrix = false;
  /** alloc, a matrix-unit tile: body[1] is its epilogue (a guard on the last k block around
   *  the nest over the tile's elements), and the buffer its sums go to is read by nothing else
   *  (a temp of this kernel). Where that guard holds, the sums stay in a local copy of the
   *  tile instead of the buffer, and the epilogue's loads of the buffer read the copy: the
   *  f32 sums of a bf16 product never reach memory (Tiler::with_epilogue). */
  bool sums_to_epilogue = false;
  /** alloc, a matrix pack: how many of its pack_depth k rows exist (fewer in the last k block);
   *  null when all do. */
  AstExprPtr pack_count;
  /** alloc, a matrix tile or pack of 8-bit integers: when > 0 it runs on vector registers of
   *  this many bytes with dot products of unsigned by signed bytes (VNNI `vpdpbusd`: 64 bytes
   *  AVX512-VNNI, 32 AVX-VNNI; two `vpmaddwd` of widened bytes without VNNI;
   *  RegisterTileShape::dot_bytes) instead of the matrix unit. The
   *  tile keeps tile_rows × tile_lanes i32 sums in vectors; per k quad it loads the lane pack's
   *  tile_lanes words (four k of a lane side by side, as for AMX-INT8) and broadcasts each row's
   *  four bytes of the row pack as one 32-bit value. `dot_signs` says how the operands' signs
   *  meet the instruction's. A tile of f32 sums (bf16 products) takes the same form with
   *  `vdpbf16ps` per k pair: the lane pack's words hold two k of a lane (as for AMX-BF16), each
   *  row's pair is broadcast, and dot_signs is bf16_pairs. */
  int dot_bytes = 0;
  DotSigns dot_signs = DotSigns::unsigned_signed;
  /** alloc in `shared` space: a GPU block tile of contraction `statement`
   *  (scheduler/gpu_tile.h). The block computes tile_rows × tile_lanes elements, `tile_row` =
   *  tile_row_origin + 0..tile_rows-1 and `tile_lane` = tile_lane_origin + 0..tile_lanes-1 (those
   *  where tile_row_cond and tile_lane_cond hold), each thread thread_rows × thread_lanes of them
   *  in registers. The reduction runs in blocks of pack_depth iterations: the operands of the
   *  update that do not move along `tile_lane` (rows) and those that do not move along
   *  `tile_row` (lanes) are copied into shared memory by all threads, then each thread
   *  accumulates its elements from there. body is the elementwise body of one element: statement
   *  nodes, run per element before and after the reduction, and the one local alloc of the
   *  reduction, whose loops (a perfect, rectangular nest) run as one flattened loop. */
  int64_t thread_rows = 0, thread_lanes = 0;
  AstExprPtr tile_row_cond, tile_lane_cond;
  /** alloc in `shared` space: the operands staged per reduction block, in the order the
   *  renderer declares their shared arrays. An online-softmax tile (key_block > 0) has none, or
   *  its keys' and values' operands (k and v) where the TMA copies each key block of them
   *  (scheduler/softmax_tile.h, plan_softmax_tma). */
  std::vector<StagedOperand> staged;
  /** alloc in `shared` space: the block tile's updates run on tensor cores as this instruction
   *  (ir/mma.h) when set: the block's warps each own warp_rows × warp_lanes elements, a grid of
   *  the instruction's m × n tiles, whose accumulator fragments are the thread's
   *  thread_rows × thread_lanes registers; each reduction block runs in steps of its k. */
  const MmaInstruction* mma = nullptr;
  int64_t warp_rows = 0, warp_lanes = 0;
  /** alloc in `shared` space: the reduced element lives in its accumulator only. Its buffer is
   *  a temporary that no other kernel accesses and that this kernel reads only in the
   *  statements after the reduction, at the element's own index: they read the accumulator,
   *  and the element is never stored (a product's f32 sum cast to f16, say). */
  bool result_in_registers = false;
  /** alloc in `shared` space, pipelined: after the reduction the accumulators go through the
   *  stages' shared memory, and the block's threads run the element statements after it (the
   *  epilogue) over the tile's elements in row order: one copy of their code, coalesced
   *  stores. */
  bool epilogue_staged = false;
  /** alloc in `shared` space, the epilogue staged: when > 0, the element the reduction stores
   *  lies contiguously along the lanes and no statement follows it, so the block's threads take
   *  runs of this many lanes (16 bytes of the result) and store each run inside the domain at
   *  an aligned address as one 16-byte store. */
  int64_t epilogue_vector = 0;
  /** alloc in `shared` space, a warpgroup instruction: the instruction groups of this many
   *  reduction blocks may still run when the next block's are issued (its stage is reused
   *  only after they are done: copies run stages - 1 - mma_in_flight blocks ahead). */
  int64_t mma_in_flight = 0;
  /** alloc in `shared` space: when > 1, the reduction blocks stream through this many buffers
   *  of shared memory (a software pipeline): the copies of block b + stages - 1 are issued
   *  asynchronously (cp.async) before block b's updates run, one barrier per block. Else one
   *  buffer, the next block's operands held in registers meanwhile. */
  int64_t stages = 1;
  /** alloc in `shared` space: the reduction is one loop and every staged operand is a load
   *  whose index is affine in it, so each copy's address moves by a constant stride per
   *  reduction block (computed once per tile) and only the rows' or lanes' bounds and the
   *  last block's need checks. */
  bool k_strided = false;
  /** alloc in `shared` space, when > 0: the block tile of a softmax-weighted contraction
   *  instead (scheduler/online_softmax.h), its keys in blocks of key_block and its scores'
   *  reduction in blocks of pack_depth; body holds a stmt node per statement of the kernel. */
  int64_t key_block = 0;
  /** With key_block > 0, where head_max > 0: the kernel is launched only where the head (the
   *  scores' reduction, k's last extent) lies in head_min..head_max (a variant chosen at launch
   *  by it: scheduler/softmax_tile.h softmax_launch_head), so that what the head decides
   *  (its chunks of pack_depth, the products' steps) is known when compiling. */
  int64_t head_min = 0, head_max = 0;
};

/** Loops of `root` in pre-order (outer before inner). */
std::vector<const LoopNode*> loops_of(const LoopNode& root);

/** The nodes of `body` in order, with blocks (plain sequences) opened, appended to `out`. */
void flatten_blocks(const std::vector<LoopNodePtr>& body, std::vector<LoopNodePtr>& out);

/** Nodes of `kind` in `root` in pre-order. */
std::vector<const LoopNode*> nodes_of(const LoopNode& root, LoopNode::Kind kind);

/** The one statement below `n` when n's subtree is a perfect nest of loops (and single-child
 *  blocks) ending in it, with the loops appended to `loops`, outermost first; else null. */
const LoopNode* perfect_nest(const LoopNode& n, std::vector<const LoopNode*>& loops);

/** An integer literal, a loop iterator, an operation (AstExpr::op names). */
AstExprPtr ast_int(int64_t v);
AstExprPtr ast_iter(const std::string& name);
AstExprPtr ast_op(const std::string& op, std::vector<AstExprPtr> args);

/** Whether `e` refers to loop iterator `iter`. */
bool uses_iterator(const AstExpr& e, const std::string& iter);

/** Whether `e` is `iter`, `iter + x`, `x + iter` or `iter - x` with x free of iter (nested). */
bool plus_iterator(const AstExpr& e, const std::string& iter);
/** The statement iterators (i0, i1, ...) whose values in stmt node `stmt` (its args) use loop
 *  iterator `iter`. */
std::set<std::string> driven_iterators(const LoopNode& stmt, const std::string& iter);

/** Whether `a` and `b` are the same expression, node for node. */
bool same_expr(const AstExpr& a, const AstExpr& b);

/** `e` with loop iterator `iter` replaced by `value`. */
AstExprPtr substitute(const AstExprPtr& e, const std::string& iter, const AstExprPtr& value);

/** The loop nest of one kernel. */
struct LoopNest {
  LoopNodePtr root;
  /** isl ran past its operation limit and the kernel runs in program order, with no fusion,
   *  tiling or marks (ScheduleOptions::max_operations). */
  bool program_order = false;
  /** GPU: the kernel runs on block 0 alone, its `thread.x` loops over that block's threads
   *  (scheduler/map_gpu.h). */
  bool one_block = false;
};

/** A tensor map a kernel's TMA copies read: the buffer (KernelPlan::buffers) and the box. */
struct TensorMapUse {
  int buffer = -1;
  std::vector<int64_t> box;  ///< innermost dimension first
  int fold = 0;              ///< StagedOperand::tma_fold
};

/** The tensor maps of `nest`'s TMA copies (StagedOperand::tma_box) in the order the kernel's
 *  parameter holds them: its block tiles in pre-order, each tile's staged operands in order. */
std::vector<TensorMapUse> tensor_maps_of(const LoopNest& nest);

/** The index of block tile `tile`'s first map among tensor_maps_of(`nest`): the count of maps of
 *  the tiles before it. */
int first_tensor_map(const LoopNest& nest, const LoopNode& tile);

/** An expression as loop_nest_to_text prints it: "c0 + 32", "floord(N - 1, 32)". */
std::string loop_expr_to_text(const AstExpr& e);

/** The line loop_nest_to_text prints for `n` itself, without its body or indentation (empty for
 *  a block). */
std::string loop_node_to_text(const LoopNode& n);

/** A loop's notes as loop_nest_to_text prints them in parentheses: its band and member, "tile",
 *  "coincident", "reduction", streaming stores; empty when it has none. */
std::string loop_annotations(const LoopNode& n);

/** Indented pseudo-C text, for `kiln show --stage schedule` and tests. */
std::string loop_nest_to_text(const LoopNest& nest);

}  // namespace kiln
