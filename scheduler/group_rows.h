/** \file
 * Short rows to the warps of a GPU block, a transform of the loop IR after map_gpu.
 *
 * map_gpu gives a row's body (a softmax's max, sum and exponentials, a layernorm's two
 * statistics and its output) to one block: its thread loops and block reductions span the
 * block's threads, a barrier between them. A row of 768 f16 values is 96 vectors of 16 bytes,
 * so 160 of 256 threads idle, and each row waits on a chain of block-wide barriers. This step
 * lets groups of T consecutive threads take the rows instead: group g of block b takes rows
 * b·G + g, then G·(blocks) further on (G = threads / T), its thread loops span its T threads,
 * its reductions combine over them and its barriers wait for them only. T is a warp where the
 * row's length lets each thread reach its end in kRowVectorsPerThread 16-byte vectors
 * (row_group_threads), else the whole block: a warp's reductions are shuffles alone, its
 * barrier `__syncwarp`, no barrier is shared between warps (a warp that runs out of rows
 * leaves), and nothing holds the named barriers that groups of 64 or 128 threads would need
 * (each a multiprocessor resource: Nsight Compute showed them limiting a multiprocessor to four
 * blocks). T is a constant where the length is known when compiling, else an expression of the
 * sizes evaluated at run time.
 *
 * A loop map_gpu marked lanes_apart (a row's reductions read across rows: a column sum) takes
 * interleaved groups instead, group g being threads g, g + G, ...: a warp takes consecutive
 * rows, and each row's terms are split among its T lanes, T a power of two up to kMaxRowLanes
 * chosen at run time from the row's length and the number of rows (lanes_per_row).
 *
 * A `block.x` loop is grouped when its body holds only thread loops, block reductions (local
 * accumulators), single-thread runs, barriers, guards and statements, and the thread loops'
 * extents are free of iterators; not a block tile, a shared buffer or a scan carried across
 * threads, which use the whole block.
 */
#pragma once

#include "ir/kernel_ir.h"
#include "ir/loop_ir.h"

namespace kiln {

/** The most lanes a row of interleaved groups takes (LoopNode::lanes_apart): 16 lanes leave 16
 *  consecutive rows to a warp, a 32-byte sector of f16 per lane's step. */
inline constexpr int64_t kMaxRowLanes = 16;

/** The 16-byte vectors of a row a thread of a warp-sized group loads in a pass, at most. */
inline constexpr int64_t kRowVectorsPerThread = 8;

/** Threads per row for a row of `length` elements whose narrowest element has `bytes` bytes: a
 *  warp where its threads reach the row's end in kRowVectorsPerThread 16-byte vectors each, else
 *  the whole block (256). */
int64_t row_group_threads(int64_t length, int64_t bytes);

/** The narrowest element (in bytes, at least 1) of the buffers `k`'s statements store or load. */
int64_t narrowest_element(const KernelPlan& plan, const Kernel& k);

/** Whether group_rows gives `loop` (a `block.x` loop with a block body) interleaved lanes: its
 *  body holds a thread loop or block reduction, only what runs within a row's threads (no block
 *  tile, shared buffer or scan carried across threads), and its loops run from and to bounds of
 *  the sizes alone (the same lanes for every row, and every barrier reached alike). */
bool groupable_lanes(const LoopNode& loop);

/** Sets LoopNode::group_threads on the `block.x` loops of `nest` (kernel `k` of `plan`) whose
 *  body is a groupable block body, clearing it on the others (a schedule the cache reuses,
 *  scheduler/schedule_cache.h); returns how many it grouped. */
int group_rows(const KernelPlan& plan, const Kernel& k, LoopNest& nest);

}  // namespace kiln
