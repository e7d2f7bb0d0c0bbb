/** \file
 * Non-temporal stores for outputs written once, a transform of the loop IR for CPU backends.
 *
 * A row-wise kernel whose last statement writes the output (layernorm's
 * `y = (x - mean) * rstd * gamma + beta`) moves its bytes through the caches: a regular store
 * first reads the line it writes, so writing N bytes moves 2N. When the output is larger than
 * the caches, a non-temporal store writes the line without reading it. This step marks an
 * innermost loop whose one statement
 *   - assigns an element of an output buffer of f32 or f64 that no statement of the kernel reads,
 *   - along the loop unit-stride in every access (map_loops.h, unit_stride_statement), and
 *   - computes across vector lanes along it (ir/kernel_ir.h, lane_value),
 * with the buffer size from which the renderer streams (LoopNode::stream_bytes). The renderer
 * then writes the loop's vectors with non-temporal stores from the first aligned element when
 * the buffer has at least that many bytes, and the plain loop otherwise.
 */
#pragma once

#include "ir/kernel_ir.h"
#include "ir/loop_ir.h"

namespace kiln {

/** Marks the loops of `nest` (kernel `k` of `plan`) that stream their stores for buffers of at
 *  least `bytes` bytes (0: none), clearing marks another kernel's schedule left (a schedule the
 *  cache reuses, scheduler/schedule_cache.h); returns how many it marked. */
int stream_stores(const KernelPlan& plan, const Kernel& k, LoopNest& nest, int64_t bytes);

}  // namespace kiln
