#include "runtimes/clang/libmvec_variants.h"

#include <llvm/ADT/SmallVector.h>
#include <llvm/ADT/StringRef.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/VFABIDemangler.h>
#include <llvm/TargetParser/Triple.h>
#include <llvm/Transforms/Utils/ModuleUtils.h>

#include <algorithm>
#include <string>

namespace kiln {

namespace {

/** A scalar function with a libmvec variant of `lanes` lanes for the ISA whose VFABI letter is
 *  `isa` ('b': SSE4.1, 'd': AVX2, 'e': AVX-512F). */
struct Variant {
  const char* scalar;  ///< the callee as it appears in the IR
  const char* libm;    ///< glibc's scalar name, which the variant's name is built from
  unsigned lanes;
  char isa;
};

/** One row per callee and width, as LLVM's VecFuncs.def lists its own libmvec functions. */
constexpr Variant kVariants[] = {
    {"llvm.exp2.f32", "exp2f", 4, 'b'},
    {"llvm.exp2.f32", "exp2f", 8, 'd'},
    {"llvm.exp2.f32", "exp2f", 16, 'e'},
    {"exp2f", "exp2f", 4, 'b'},
    {"exp2f", "exp2f", 8, 'd'},
    {"exp2f", "exp2f", 16, 'e'},
    {"llvm.exp2.f64", "exp2", 2, 'b'},
    {"llvm.exp2.f64", "exp2", 4, 'd'},
    {"llvm.exp2.f64", "exp2", 8, 'e'},
    {"exp2", "exp2", 2, 'b'},
    {"exp2", "exp2", 4, 'd'},
    {"exp2", "exp2", 8, 'e'},
    {"llvm.log2.f32", "log2f", 4, 'b'},
    {"llvm.log2.f32", "log2f", 8, 'd'},
    {"llvm.log2.f32", "log2f", 16, 'e'},
    {"log2f", "log2f", 4, 'b'},
    {"log2f", "log2f", 8, 'd'},
    {"log2f", "log2f", 16, 'e'},
    {"llvm.log2.f64", "log2", 2, 'b'},
    {"llvm.log2.f64", "log2", 4, 'd'},
    {"llvm.log2.f64", "log2", 8, 'e'},
    {"log2", "log2", 2, 'b'},
    {"log2", "log2", 4, 'd'},
    {"log2", "log2", 8, 'e'},
};

/** True when the function is compiled for a target with the ISA of `isa`. */
bool has_isa(const llvm::Function& f, char isa) {
  llvm::StringRef features = f.getFnAttribute("target-features").getValueAsString();
  if (isa == 'e') return features.contains("+avx512f");
  if (isa == 'd') return features.contains("+avx2");
  return features.contains("+sse4.1");
}

/** `<lanes x T> name(<lanes x T>)`, declared once per module and kept until the vectoriser
 *  has had the chance to call it. */
void declare_variant(llvm::Module& m, const std::string& name, llvm::Type* scalar, unsigned lanes) {
  if (m.getFunction(name)) return;
  auto* vec = llvm::FixedVectorType::get(scalar, lanes);
  auto* type = llvm::FunctionType::get(vec, {vec}, false);
  auto* fn = llvm::Function::Create(type, llvm::Function::ExternalLinkage, name, m);
  llvm::appendToCompilerUsed(m, {fn});
}

/** Raises `f`'s "min-legal-vector-width" (the widest vector its calls pass in one register)
 *  to `bits`. */
void widen_legal_vectors(llvm::Function& f, unsigned bits) {
  unsigned now = 0;
  if (f.hasFnAttribute("min-legal-vector-width"))
    f.getFnAttribute("min-legal-vector-width").getValueAsString().getAsInteger(10, now);
  if (now < bits) f.addFnAttr("min-legal-vector-width", std::to_string(bits));
}

}  // namespace

llvm::PreservedAnalyses LibmvecVariants::run(llvm::Function& f, llvm::FunctionAnalysisManager&) {
  if (llvm::Triple(f.getParent()->getTargetTriple()).getArch() != llvm::Triple::x86_64)
    return llvm::PreservedAnalyses::all();
  bool changed = false;
  for (llvm::BasicBlock& block : f) {
    for (llvm::Instruction& inst : block) {
      auto* call = llvm::dyn_cast<llvm::CallInst>(&inst);
      llvm::Function* callee = call ? call->getCalledFunction() : nullptr;
      if (!callee || call->arg_size() != 1) continue;
      llvm::SmallVector<std::string, 8> names;
      llvm::VFABI::getVectorVariantNames(*call, names);
      size_t before = names.size();
      for (const Variant& v : kVariants) {
        if (callee->getName() != v.scalar || !has_isa(f, v.isa)) continue;
        std::string vector_name =
            std::string("_ZGV") + v.isa + "N" + std::to_string(v.lanes) + "v_" + v.libm;
        // "_ZGV_LLVM_N8v_llvm.exp2.f32(_ZGVdN8v_exp2f)": LLVM's mangling of the mapping.
        std::string mapping = std::string("_ZGV") + llvm::VFABI::_LLVM_ + "N" +
                              std::to_string(v.lanes) + "v_" + v.scalar + "(" + vector_name + ")";
        if (std::find(names.begin(), names.end(), mapping) != names.end()) continue;
        declare_variant(*f.getParent(), vector_name, call->getType(), v.lanes);
        names.push_back(mapping);
        // A 64-byte variant takes and returns its vector in one zmm register; under
        // -mprefer-vector-width=256 the back end would pass a 512-bit vector as two ymm halves
        // (the ABI of a function whose legal width is 256) and the variant would compute on
        // garbage. The caller's legal width must cover the call.
        if (v.isa == 'e') widen_legal_vectors(f, 512);
      }
      if (names.size() == before) continue;
      llvm::VFABI::setVectorVariantNames(call, names);
      changed = true;
    }
  }
  return changed ? llvm::PreservedAnalyses::none() : llvm::PreservedAnalyses::all();
}

}  // namespace kiln
