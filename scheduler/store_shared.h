/** \file
 * A costly value computed once: when a reduction and a later statement that writes its output
 * over the same domain both compute one subexpression with a transcendental op in it (softmax's
 * exponential, once for the sum, once for the output), that subexpression is stored first into
 * the output element the later statement writes, the reduction reads it back, and the later
 * statement rewrites its element in place from it. One exponential per element instead of two;
 * the row it re-reads is the one just written, in cache.
 *
 * It applies when the later statement is a plain assignment to an output or a temp (read only by
 * later kernels: attention's weights) of the value's dtype that no other statement of the kernel
 * reads or writes, its index is the domain's iterators in
 * some order (each element written once), both domains are the same, and no statement from the
 * reduction to the later one writes what the subexpression reads. CPU backends only: on a GPU
 * the store and the reads back could be mapped to different threads.
 */
#pragma once

#include "ir/kernel_ir.h"

namespace kiln {

/** Stores the shared subexpressions of every kernel of `plan` (see above); returns how many. */
int store_shared_values(KernelPlan& plan);

}  // namespace kiln
