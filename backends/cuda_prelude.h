/** \file
 * The head and helpers every CUDA translation unit starts with, for NVRTC without system
 * headers: integer typedefs, the macros the shared helper functions (backends/c_prelude.h) use,
 * and the GPU's own helpers: warp shuffles for every compute type, the block reduction that
 * combines each thread's share of a row (warp shuffles, then one value per warp in shared
 * memory), bit casts, and the bounds check of --config CHECK=1.
 */
#pragma once

namespace kiln {

/** The macros of the shared helper functions, after kPreludeTypedefs, before kPreludeFunctions. */
extern const char* const kCudaPreludeHead;

/** Shuffles, block reductions and bit casts, after kPreludeFunctions. */
extern const char* const kCudaPreludeTail;

/** `kiln_check` for --config CHECK=1: a failed check fills `kiln_check_record` in device memory
 *  and traps, which the runtime reports as a failed launch. */
extern const char* const kCudaBoundsCheck;

/** The TMA's copies and their mbarriers (sm_90), after the kernel parameter's declaration in a
 *  module whose kernels read tensor maps (backends/cuda_tile.cpp). */
extern const char* const kCudaTmaHelpers;

}  // namespace kiln
