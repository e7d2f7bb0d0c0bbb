/** \file
 * The transform list: what scheduling does to a kernel after isl computed its schedule, as an
 * ordered list of typed steps. Steps on the schedule tree (tile) run before AST generation, steps
 * on the loop IR (promote accumulators, map to threads, map to vector lanes; GPU blocks and
 * threads) after it. schedule_kernel builds the list from ScheduleOptions and what the
 * backend can map loops to; `kiln show --stage schedule --debug 3` prints it.
 */
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "scheduler/gpu_tile.h"
#include "scheduler/register_tile.h"
#include "scheduler/softmax_tile.h"

namespace kiln {

/** Options of the tile step, per band: a band is tiled when it is permutable, has at least
 *  `min_depth` members and every member has a nonzero size. */
struct TileOptions {
  std::vector<int64_t> sizes;  ///< per band member; a missing entry repeats the last; 0 skips
  int min_depth = 3;           ///< bands with fewer members stay untiled
};

/** One step of the list. */
struct Transform {
  enum class Kind {
    tile,           ///< schedule tree: tile permutable bands (TileOptions)
    sink,           ///< loop IR: parallel loops below reductions (interchange.h)
    register_tile,  ///< loop IR: contractions in register tiles (register_tile.h)
    /** loop IR: loops of two or more reductions, one statement a loop (distribute_reductions.h) */
    distribute_reductions,
    promote_accumulators,  ///< loop IR: reductions accumulate in registers
    carry_scans,           ///< loop IR: scans carry their running value in a register
    gpu_tile,              ///< loop IR: contractions in GPU block tiles (gpu_tile.h)
    map_parallel,          ///< loop IR: outermost coincident loops across threads
    map_simd,              ///< loop IR: innermost unit-stride loops across vector lanes
    map_gpu,               ///< loop IR: loops across GPU blocks and threads (map_gpu.h)
    group_rows,            ///< loop IR: short rows in groups of a block's threads (group_rows.h)
    stream_stores,         ///< loop IR: outputs written once with non-temporal stores
    prefetch_rows,         ///< loop IR: middle passes of a row prefetch the next row's lines
    /** instead of isl: a softmax-weighted contraction (attention) as one GPU kernel with an
     *  online softmax (online_softmax.h) */
    online_softmax,
  } kind;
  TileOptions tile;      ///< tile
  int max_collapse = 2;  ///< map_parallel: loops mapped together, the outermost included
  /** map_parallel: an innermost unit-stride loop stays out of the collapse, for map_simd */
  bool keep_vector_loops = false;
  bool half = false;  ///< promote_accumulators: f16 and bf16 accumulate in registers too
  /** promote_accumulators: a float sum along one loop longer than this many terms accumulates
   *  in partial sums of blocks of this many, each added to the element (0: one register for the
   *  whole loop) */
  int64_t sum_block = 0;
  /** sink: a register tile follows, whose packed panels gather operands that every row shares
   *  (interchange.h) */
  bool packed = false;
  bool split = false;  ///< carry_scans: long rows may split across threads
  /** map_gpu: rows whose reductions read across the rows take interleaved lanes (map_gpu.h) */
  bool row_lanes = false;
  RegisterTileShape micro;   ///< register_tile
  GpuTileShape gpu;          ///< gpu_tile
  SoftmaxTileShape softmax;  ///< online_softmax
  int64_t stream_bytes = 0;  ///< stream_stores: the smallest buffer streamed
  /** map_simd: float loops run in vectors of this many bytes (simd_lanes); 0: the C compiler
   *  picks (32 bytes under Kiln's runtimes' -mprefer-vector-width=256) */
  int vector_bytes = 0;
};

/** "tile 32x32x32 (bands of 3+ members), promote accumulators, map parallel (collapse 2)". */
std::string transforms_to_text(const std::vector<Transform>& list);

}  // namespace kiln
