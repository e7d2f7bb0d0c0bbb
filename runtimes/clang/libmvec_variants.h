/** \file
 * An LLVM pass that tells the loop vectoriser about glibc's vector math functions (libmvec) that
 * LLVM 19's `-fveclib=libmvec` table leaves out. Kiln renders the exp2 and log2 primitives as
 * `__builtin_exp2f` and friends; without a vector variant the vectoriser widens the loop and the
 * backend then splits `llvm.exp2.v8f32` into eight scalar `exp2f` calls. The pass runs at the
 * vectoriser's start and marks each such call with its variants (`_ZGVdN8v_exp2f`, ...), as
 * LLVM's own InjectTLIMappings does for the functions in its table; the JIT resolves them in
 * libmvec.so.1.
 */
#pragma once

#include <llvm/IR/PassManager.h>

namespace kiln {

/** Adds the `vector-function-abi-variant` attribute to calls of exp2 and log2 (f32 and f64,
 *  the intrinsics and the libm names) and declares the variants, on x86-64 with SSE4.1 (2 and
 *  4 lanes), AVX2 (4 and 8 lanes) and AVX-512F (8 and 16 lanes: the vectoriser takes them where
 *  the target prefers 512-bit vectors). */
class LibmvecVariants : public llvm::PassInfoMixin<LibmvecVariants> {
 public:
  llvm::PreservedAnalyses run(llvm::Function& f, llvm::FunctionAnalysisManager& am);
};

}  // namespace kiln
