#include "runtimes/clang/split_compile.h"

#include <clang/Basic/Diagnostic.h>
#include <clang/Basic/DiagnosticOptions.h>
#include <clang/CodeGen/BackendUtil.h>
#include <clang/Frontend/TextDiagnosticPrinter.h>
#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/Bitcode/BitcodeWriter.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/DiagnosticInfo.h>
#include <llvm/IR/DiagnosticPrinter.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/VirtualFileSystem.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <set>
#include <thread>

namespace kiln {

namespace {

/** Below this many IR instructions a part costs more in threads and bitcode than it saves. */
constexpr size_t kMinPartInstructions = 4000;

constexpr char kMagic[] = "KILN-OBJECTS-1\n";
constexpr size_t kMagicSize = sizeof kMagic - 1;

/** The internal functions and variables `root` reaches through its code and their initialisers,
 *  `root` included (names: the same in every copy of the module). */
std::set<std::string> reached_from(const llvm::Function& root) {
  std::set<std::string> names;
  std::vector<const llvm::Value*> work = {&root};
  std::set<const llvm::Value*> seen;
  auto visit_constant = [&](const llvm::Value* v, auto&& self) -> void {
    if (!seen.insert(v).second) return;
    if (auto* g = llvm::dyn_cast<llvm::GlobalValue>(v)) {
      if (g == &root || g->hasLocalLinkage()) work.push_back(g);
      return;
    }
    if (auto* c = llvm::dyn_cast<llvm::Constant>(v))
      for (const llvm::Use& op : c->operands())
        self(op.get(), self);
  };
  std::set<const llvm::Value*> done;
  while (!work.empty()) {
    const llvm::Value* v = work.back();
    work.pop_back();
    if (!done.insert(v).second) continue;
    names.insert(v->getName().str());
    if (auto* f = llvm::dyn_cast<llvm::Function>(v)) {
      for (const llvm::BasicBlock& b : *f)
        for (const llvm::Instruction& i : b)
          for (const llvm::Use& op : i.operands())
            if (llvm::isa<llvm::Constant>(op.get())) visit_constant(op.get(), visit_constant);
    } else if (auto* g = llvm::dyn_cast<llvm::GlobalVariable>(v)) {
      if (g->hasInitializer()) visit_constant(g->getInitializer(), visit_constant);
    }
  }
  return names;
}

size_t instruction_count(const llvm::Module& m, const std::set<std::string>& names) {
  size_t n = 0;
  for (const std::string& name : names)
    if (const llvm::Function* f = m.getFunction(name)) n += f->getInstructionCount();
  return n;
}

/** Keeps in `m` the bodies of `mine` (part `index`'s roots and what they reach): other external
 *  functions become declarations, external variables are defined in part 0 only, and internal
 *  symbols no root of the part reaches are removed. */
void keep_part(llvm::Module& m, const std::set<std::string>& mine, unsigned index) {
  std::vector<llvm::GlobalValue*> dead;
  for (llvm::Function& f : m) {
    if (f.isDeclaration() || mine.count(f.getName().str())) continue;
    if (f.hasLocalLinkage())
      dead.push_back(&f);
    else
      f.deleteBody();  // an external declaration, defined by the part that keeps it
  }
  for (llvm::GlobalVariable& g : m.globals()) {
    if (g.isDeclaration() || mine.count(g.getName().str())) continue;
    if (g.hasLocalLinkage()) {
      dead.push_back(&g);
    } else if (index > 0) {
      g.setInitializer(nullptr);
      g.setLinkage(llvm::GlobalValue::ExternalLinkage);
      g.setComdat(nullptr);
    }
  }
  for (llvm::GlobalValue* g : dead)
    if (auto* f = llvm::dyn_cast<llvm::Function>(g))
      f->dropAllReferences();
    else
      llvm::cast<llvm::GlobalVariable>(g)->dropAllReferences();
  for (llvm::GlobalValue* g : dead) {
    g->replaceAllUsesWith(llvm::PoisonValue::get(g->getType()));
    g->eraseFromParent();
  }
}

/** Where an LLVMContext's error diagnostics go. */
struct Sink {
  llvm::raw_string_ostream* out;
  bool failed;
};

void collect_errors(const llvm::DiagnosticInfo* d, void* context) {
  if (d->getSeverity() != llvm::DS_Error) return;
  auto* sink = static_cast<Sink*>(context);
  llvm::DiagnosticPrinterRawOStream printer(*sink->out);
  d->print(printer);
  *sink->out << "\n";
  sink->failed = true;
}

/** Runs clang's back end (O2 pipeline and code generator) on `m` into `*object`. */
bool emit_object(llvm::Module& m, const BackendOptions& o, std::string* object,
                 std::string* error) {
  std::string text;
  llvm::raw_string_ostream stream(text);
  // Errors of the LLVM passes go to the context's handler (the default one would exit).
  Sink sink{&stream, false};
  m.getContext().setDiagnosticHandlerCallBack(collect_errors, &sink);
  llvm::IntrusiveRefCntPtr<clang::DiagnosticOptions> diag_opts = new clang::DiagnosticOptions();
  clang::DiagnosticsEngine diags(new clang::DiagnosticIDs(), diag_opts,
                                 new clang::TextDiagnosticPrinter(stream, diag_opts.get()));
  llvm::SmallString<0> bytes;
  clang::EmitBackendOutput(diags, *o.header_search, *o.codegen, *o.target, *o.lang, o.data_layout,
                           &m, clang::Backend_EmitObj, llvm::vfs::getRealFileSystem(),
                           std::make_unique<llvm::raw_svector_ostream>(bytes));
  if (sink.failed || diags.hasErrorOccurred()) {
    *error = "code generation failed:\n" + text;
    return false;
  }
  object->assign(bytes.data(), bytes.size());
  return true;
}

}  // namespace

unsigned part_count(size_t instructions, size_t entries, unsigned threads) {
  size_t parts = std::min<size_t>({std::max(1u, threads), std::max<size_t>(1, entries),
                                   std::max<size_t>(1, instructions / kMinPartInstructions)});
  return static_cast<unsigned>(parts);
}

std::vector<std::string> compile_in_parts(std::unique_ptr<llvm::Module> module,
                                          const BackendOptions& options, unsigned threads,
                                          std::string* error) {
  std::vector<const llvm::Function*> roots;
  for (const llvm::Function& f : *module)
    if (!f.isDeclaration() && !f.hasLocalLinkage()) roots.push_back(&f);
  std::vector<std::set<std::string>> reach;
  std::vector<size_t> sizes;
  for (const llvm::Function* r : roots) {
    reach.push_back(reached_from(*r));
    sizes.push_back(instruction_count(*module, reach.back()));
  }
  unsigned parts =
      part_count(std::accumulate(sizes.begin(), sizes.end(), size_t{0}), roots.size(), threads);
  if (parts <= 1) {
    std::string object;
    if (!emit_object(*module, options, &object, error)) return {};
    return {object};
  }

  // Largest first, each to the lightest part.
  std::vector<size_t> order(roots.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return sizes[a] > sizes[b]; });
  std::vector<std::set<std::string>> mine(parts);
  std::vector<size_t> load(parts, 0);
  for (size_t r : order) {
    size_t p = std::min_element(load.begin(), load.end()) - load.begin();
    load[p] += sizes[r];
    mine[p].insert(reach[r].begin(), reach[r].end());
  }

  llvm::SmallString<0> bitcode;
  {
    llvm::raw_svector_ostream out(bitcode);
    llvm::WriteBitcodeToFile(*module, out);
  }
  module.reset();
  std::vector<std::string> objects(parts);
  std::vector<std::string> errors(parts);
  auto compile_part = [&](unsigned p) {
    llvm::LLVMContext context;
    auto m = llvm::parseBitcodeFile(llvm::MemoryBufferRef(bitcode.str(), "kiln_kernel"), context);
    if (!m) {
      errors[p] = "cannot read back the module: " + llvm::toString(m.takeError());
      return;
    }
    keep_part(**m, mine[p], p);
    emit_object(**m, options, &objects[p], &errors[p]);
  };
  std::vector<std::thread> workers;
  for (unsigned p = 1; p < parts; ++p)
    workers.emplace_back(compile_part, p);
  compile_part(0);
  for (std::thread& t : workers)
    t.join();
  for (const std::string& e : errors)
    if (!e.empty()) {
      *error = e;
      return {};
    }
  return objects;
}

std::string pack_objects(const std::vector<std::string>& objects) {
  if (objects.size() == 1) return objects[0];
  std::string out(kMagic, kMagicSize);
  auto put = [&](uint64_t v) {
    for (int i = 0; i < 8; ++i)
      out.push_back(static_cast<char>(v >> (8 * i)));
  };
  put(objects.size());
  for (const std::string& o : objects) {
    put(o.size());
    out += o;
  }
  return out;
}

std::vector<llvm::StringRef> unpack_objects(llvm::StringRef artifact) {
  if (!artifact.starts_with(llvm::StringRef(kMagic, kMagicSize))) return {artifact};
  size_t at = kMagicSize;
  auto get = [&](uint64_t* v) {
    if (artifact.size() - at < 8) return false;
    *v = 0;
    for (int i = 0; i < 8; ++i)
      *v |= uint64_t(static_cast<unsigned char>(artifact[at + i])) << (8 * i);
    at += 8;
    return true;
  };
  uint64_t count = 0;
  if (!get(&count)) return {};
  std::vector<llvm::StringRef> out;
  for (uint64_t i = 0; i < count; ++i) {
    uint64_t size = 0;
    if (!get(&size) || artifact.size() - at < size) return {};
    out.push_back(artifact.substr(at, size));
    at += size;
  }
  return out;
}

}  // namespace kiln
