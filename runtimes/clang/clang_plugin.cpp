// The "clang" runtime: C compiled in process by the Clang 19 libraries to object files in
// memory (the artifact: one per part of the program, compiled on threads, split_compile.h), then
// linked and run by LLVM ORC LLJIT, one LLJIT per module.
// clang::driver::Driver builds the cc1 arguments: hand-written ones lose the builtin headers
// and vectorisation.
//
// The same objects serve the "openmp" runtime (flavour.h): every compile adds -fopenmp, the JIT
// resolves the OpenMP runtime's symbols (__kmpc_fork_call, omp_get_thread_num, ...) from libomp,
// and each launch first sets the thread count that `configure` took (docs/decisions.md: one
// source, two plugins).
#include <clang/Basic/Diagnostic.h>
#include <clang/Basic/DiagnosticOptions.h>
#include <clang/CodeGen/CodeGenAction.h>
#include <clang/Driver/Compilation.h>
#include <clang/Driver/Driver.h>
#include <clang/Frontend/CompilerInstance.h>
#include <clang/Frontend/CompilerInvocation.h>
#include <clang/Frontend/TextDiagnosticPrinter.h>
#include <clang/Lex/PreprocessorOptions.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/DynamicLibrary.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/TargetParser/Host.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kiln/plugin_api.h"
#include "runtimes/clang/flavour.h"
#include "runtimes/clang/libmvec_variants.h"
#include "runtimes/clang/split_compile.h"

#ifndef KILN_CLANG_RESOURCE_DIR
#error "KILN_CLANG_RESOURCE_DIR must name clang's resource folder (builtin headers)"
#endif
#ifndef KILN_CLANG_EXECUTABLE
#define KILN_CLANG_EXECUTABLE "clang"
#endif

namespace {

/** -O2, not -O3: the same vectorised loops on Kiln's kernels, a quarter less compile time, and
 *  no loop versioning that triples a conv2d's code (docs/decisions.md). */
const char* kBaseFlags[] = {"-O2", "-march=native", "-fno-math-errno"};
/** The plugin's flavour, set by plugin_table before any entry of the table is reached. */
const kiln::clang_runtime::Flavour* flavour = nullptr;
constexpr const char* kSourceName = "kiln_kernel.c";
/** Sources from this size compile in parts on threads (split_compile.h); smaller ones, a kernel
 *  or two, as one module through clang's EmitObjAction. Kiln's largest single kernels (conv2d,
 *  attention) render to about 60 KB, a GPT-2 block's eleven kernels to 200 KB. */
constexpr size_t kSplitSourceBytes = 96 * 1024;

char* copy_string(const std::string& s) {
  return strdup(s.c_str());
}

void initialize_llvm() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
  });
}

/** The flags Kiln packs as NUL-terminated strings followed by an empty one. */
std::vector<std::string> unpack_flags(const char* flags) {
  std::vector<std::string> out;
  for (const char* f = flags; f && *f; f += std::strlen(f) + 1)
    out.emplace_back(f);
  return out;
}

/** The cc1 arguments the driver builds for `flags`, or an empty list with `*error` set. */
std::vector<std::string> driver_cc1_arguments(const std::vector<std::string>& flags,
                                              clang::DiagnosticsEngine& diags, std::string* error) {
  std::vector<const char*> args = {KILN_CLANG_EXECUTABLE, "-c"};
  for (const char* f : kBaseFlags)
    args.push_back(f);
  if (flavour->libomp_path) args.push_back("-fopenmp");
  for (const std::string& f : flags)
    args.push_back(f.c_str());
  args.insert(args.end(),
              {"-resource-dir", KILN_CLANG_RESOURCE_DIR, kSourceName, "-o", "kiln_kernel.o"});
  clang::driver::Driver driver(KILN_CLANG_EXECUTABLE, llvm::sys::getDefaultTargetTriple(), diags);
  driver.setCheckInputsExist(false);
  std::unique_ptr<clang::driver::Compilation> compilation(driver.BuildCompilation(args));
  if (!compilation || diags.hasErrorOccurred() || compilation->getJobs().size() != 1) {
    *error = "the clang driver could not build a single cc1 job";
    return {};
  }
  const clang::driver::Command& job = *compilation->getJobs().begin();
  std::vector<std::string> cc1;
  for (const char* a : job.getArguments())
    if (std::strcmp(a, "-disable-free") != 0) cc1.push_back(a);
  return cc1;
}

/** driver_cc1_arguments, remembered per flag list: the driver looks for GCC installations on
 *  disk, which costs about a millisecond per compile. `prepare` fills the entry. */
std::vector<std::string> cc1_arguments(const std::vector<std::string>& flags,
                                       clang::DiagnosticsEngine& diags, std::string* error) {
  static std::mutex mutex;
  static std::map<std::vector<std::string>, std::vector<std::string>> known;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = known.find(flags); it != known.end()) return it->second;
  std::vector<std::string> cc1 = driver_cc1_arguments(flags, diags, error);
  if (!cc1.empty()) known.emplace(flags, cc1);
  return cc1;
}

/** Copies `size` bytes into a blob Kiln frees with free_blob. */
void set_artifact(kiln_blob* artifact, const char* data, size_t size) {
  artifact->size = size;
  artifact->data = std::malloc(size);
  std::memcpy(artifact->data, data, size);
}

int clang_compile(const char* source, const char* flags, kiln_blob* artifact, char** error) {
  initialize_llvm();
  std::vector<std::string> extra = unpack_flags(flags);

  std::string diag_text;
  llvm::raw_string_ostream diag_stream(diag_text);
  llvm::IntrusiveRefCntPtr<clang::DiagnosticOptions> diag_opts = new clang::DiagnosticOptions();
  llvm::IntrusiveRefCntPtr<clang::DiagnosticIDs> ids = new clang::DiagnosticIDs();
  clang::DiagnosticsEngine diags(ids, diag_opts,
                                 new clang::TextDiagnosticPrinter(diag_stream, diag_opts.get()));

  std::string why;
  std::vector<std::string> cc1 = cc1_arguments(extra, diags, &why);

  if (cc1.empty()) {
    *error = copy_string(why + "\n" + diag_text);
    return 1;
  }
  std::vector<const char*> cc1_ptrs;
  for (const std::string& a : cc1)
    cc1_ptrs.push_back(a.c_str());

  clang::CompilerInstance ci;
  ci.createDiagnostics(new clang::TextDiagnosticPrinter(diag_stream, &ci.getDiagnosticOpts()));
  if (!clang::CompilerInvocation::CreateFromArgs(ci.getInvocation(), cc1_ptrs, ci.getDiagnostics(),
                                                 KILN_CLANG_EXECUTABLE)) {
    *error = copy_string("bad cc1 arguments:\n" + diag_text);
    return 1;
  }
  ci.getCodeGenOpts().PassBuilderCallbacks.push_back([](llvm::PassBuilder& pb) {
    pb.registerVectorizerStartEPCallback(
        [](llvm::FunctionPassManager& fpm, llvm::OptimizationLevel) {
          fpm.addPass(kiln::LibmvecVariants());
        });
  });
  ci.getPreprocessorOpts().addRemappedFile(
      kSourceName, llvm::MemoryBuffer::getMemBufferCopy(source, kSourceName).release());
  ci.setVerboseOutputStream(diag_stream);
  if (std::strlen(source) < kSplitSourceBytes || std::thread::hardware_concurrency() < 2) {
    llvm::SmallString<0> object;
    ci.setOutputStream(std::make_unique<llvm::raw_svector_ostream>(object));
    clang::EmitObjAction action;
    if (!ci.ExecuteAction(action) || ci.getDiagnostics().hasErrorOccurred()) {
      *error = copy_string("compile failed:\n" + diag_text);
      return 1;
    }
    set_artifact(artifact, object.data(), object.size());
    return 0;
  }
  // A large program: the front end alone here (the LLVM passes off), then the O2 pipeline and
  // the code generator on every core, in parts (split_compile.h).
  clang::CodeGenOptions backend_codegen = ci.getCodeGenOpts();
  ci.getCodeGenOpts().DisableLLVMPasses = true;
  llvm::LLVMContext context;
  clang::EmitLLVMOnlyAction action(&context);
  bool ok = ci.ExecuteAction(action);
  std::unique_ptr<llvm::Module> module = ok ? action.takeModule() : nullptr;
  if (!ok || !module || ci.getDiagnostics().hasErrorOccurred()) {
    *error = copy_string("compile failed:\n" + diag_text);
    return 1;
  }
  kiln::BackendOptions backend;
  backend.header_search = &ci.getHeaderSearchOpts();
  backend.codegen = &backend_codegen;
  backend.target = &ci.getTargetOpts();
  backend.lang = &ci.getLangOpts();
  backend.data_layout = ci.getTarget().getDataLayoutString();
  std::string why_not;
  std::vector<std::string> objects = kiln::compile_in_parts(
      std::move(module), backend, std::thread::hardware_concurrency(), &why_not);
  if (objects.empty()) {
    *error = copy_string(why_not + diag_text);
    return 1;
  }
  std::string bytes = kiln::pack_objects(objects);
  set_artifact(artifact, bytes.data(), bytes.size());
  return 0;
}

const char* clang_compiler_version() {
  static const std::string version = "clang " LLVM_VERSION_STRING " (in-process, LLJIT)";
  return version.c_str();
}

const char* clang_target() {
  static const std::string target = [] {
    std::string t = llvm::sys::getProcessTriple() + " " + llvm::sys::getHostCPUName().str();
    llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
    std::vector<std::string> on;
    for (const auto& f : features)
      if (f.second) on.push_back(f.first().str());
    std::sort(on.begin(), on.end());
    for (const std::string& f : on)
      t += " +" + f;
    return t;
  }();
  return target.c_str();
}

/** libomp, loaded once for the process (RTLD_GLOBAL, by llvm::sys::DynamicLibrary): the JIT
 *  resolves the generated code's OpenMP calls in it, and launch sets the thread count with it. */
struct OpenMP {
  llvm::sys::DynamicLibrary library;
  void (*set_num_threads)(int) = nullptr;
  int (*get_num_procs)() = nullptr;
  int (*pause_resource_all)(int) = nullptr;
  std::string error;  ///< why libomp is unusable, or empty
  /** When the plugin unloads (or the process exits): omp_pause_hard ends libomp's worker threads
   *  (it starts them again if another plugin uses it). Threads left running past exit make
   *  LeakSanitizer's exit-time scan crash. */
  ~OpenMP() {
    if (pause_resource_all) pause_resource_all(2);  // omp_pause_hard
  }
};

const OpenMP& openmp() {
  static OpenMP omp;  // filled in place: a copy's destructor would pause libomp
  static std::once_flag once;
  std::call_once(once, [] {
    std::string why;
    const std::string path = flavour->libomp_path;
    omp.library = llvm::sys::DynamicLibrary::getPermanentLibrary(path.c_str(), &why);
    if (!omp.library.isValid()) {
      omp.error = "cannot load the OpenMP runtime " + path + ": " + why;
      return;
    }
    auto symbol = [](const char* name) { return omp.library.getAddressOfSymbol(name); };
    omp.set_num_threads = reinterpret_cast<void (*)(int)>(symbol("omp_set_num_threads"));
    omp.get_num_procs = reinterpret_cast<int (*)()>(symbol("omp_get_num_procs"));
    omp.pause_resource_all = reinterpret_cast<int (*)(int)>(symbol("omp_pause_resource_all"));
    if (!omp.set_num_threads || !omp.get_num_procs)
      omp.error = path + " lacks omp_set_num_threads or omp_get_num_procs";
  });
  return omp;
}

/** Adds libomp (openmp build), process symbols and libmvec (for -fveclib=libmvec) to a JIT's
 *  main library, in that order: libgomp, if something loaded it, also defines omp_* names. */
llvm::Error add_host_symbols(llvm::orc::LLJIT& jit) {
  char prefix = jit.getDataLayout().getGlobalPrefix();
  if (flavour->libomp_path) {
    const OpenMP& omp = openmp();
    if (!omp.error.empty()) return llvm::createStringError(omp.error);
    jit.getMainJITDylib().addGenerator(
        std::make_unique<llvm::orc::DynamicLibrarySearchGenerator>(omp.library, prefix));
  }
  auto process = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(prefix);
  if (!process) return process.takeError();
  jit.getMainJITDylib().addGenerator(std::move(*process));
  auto mvec = llvm::orc::DynamicLibrarySearchGenerator::Load("libmvec.so.1", prefix);
  if (mvec)
    jit.getMainJITDylib().addGenerator(std::move(*mvec));
  else
    llvm::consumeError(mvec.takeError());
  return llvm::Error::success();
}

/** A JIT with the host's symbols, ready for one object file. */
llvm::Expected<std::unique_ptr<llvm::orc::LLJIT>> make_jit() {
  initialize_llvm();
  auto jit = llvm::orc::LLJITBuilder().create();
  if (!jit) return jit.takeError();
  if (llvm::Error e = add_host_symbols(**jit)) return e;
  return std::move(*jit);
}

/** The JIT that prepare makes for the next load, off the critical path (reachable until then);
 *  `pending` while prepare makes it, so that a load waits for it instead of making a second. */
struct Spare {
  std::mutex mutex;
  std::condition_variable made;
  bool pending = false;
  llvm::orc::LLJIT* jit = nullptr;
};
Spare spare;

void* clang_load(const void* artifact, size_t size, char** error) {
  std::unique_ptr<llvm::orc::LLJIT> jit;
  {
    std::unique_lock<std::mutex> lock(spare.mutex);
    spare.made.wait(lock, [] { return !spare.pending; });
    jit.reset(std::exchange(spare.jit, nullptr));
  }
  if (!jit) {
    auto made = make_jit();
    if (!made) {
      *error = copy_string("LLJIT: " + llvm::toString(made.takeError()));
      return nullptr;
    }
    jit = std::move(*made);
  }
  std::vector<llvm::StringRef> objects =
      kiln::unpack_objects(llvm::StringRef(static_cast<const char*>(artifact), size));
  if (objects.empty()) {
    *error = copy_string("LLJIT: the artifact's object files are truncated");
    return nullptr;
  }
  for (llvm::StringRef object : objects)
    if (llvm::Error e = jit->addObjectFile(llvm::MemoryBuffer::getMemBufferCopy(object))) {
      *error = copy_string("LLJIT: cannot add object: " + llvm::toString(std::move(e)));
      return nullptr;
    }
  return jit.release();
}

/** Runs on a second core while Kiln plans and schedules: makes the JIT for the next load (first:
 *  a cache hit needs nothing else), then registers the targets and has the driver build the cc1
 *  arguments for `flags` (cc1_arguments remembers them; a compile meanwhile waits on its lock).
 *  Compiling a small kernel here as well paged the optimiser in ahead of time, but it slowed isl
 *  on the other core by about as much as it saved (docs/performance.md). */
void clang_prepare(const char* flags) {
  {
    std::lock_guard<std::mutex> lock(spare.mutex);
    if (spare.pending) return;  // another prepare is making it
    spare.pending = true;
  }
  auto jit = make_jit();
  {
    std::lock_guard<std::mutex> lock(spare.mutex);
    spare.pending = false;
    if (jit)
      delete std::exchange(spare.jit, jit->release());
    else
      llvm::consumeError(jit.takeError());  // load makes its own and reports the error
  }
  spare.made.notify_all();
  std::vector<std::string> extra = unpack_flags(flags);
  llvm::IntrusiveRefCntPtr<clang::DiagnosticOptions> diag_opts = new clang::DiagnosticOptions();
  llvm::IntrusiveRefCntPtr<clang::DiagnosticIDs> ids = new clang::DiagnosticIDs();
  clang::DiagnosticsEngine diags(ids, diag_opts, new clang::IgnoringDiagConsumer());
  std::string ignored;
  cc1_arguments(extra, diags, &ignored);  // an error resurfaces in clang_compile
}

void* clang_lookup(void* module, const char* symbol) {
  auto* jit = static_cast<llvm::orc::LLJIT*>(module);
  auto address = jit->lookup(symbol);
  if (!address) {
    llvm::consumeError(address.takeError());
    return nullptr;
  }
  return address->toPtr<void*>();
}

void clang_unload(void* module) {
  delete static_cast<llvm::orc::LLJIT*>(module);
}

void* clang_alloc(size_t bytes, char** error) {
  size_t rounded = (bytes + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded ? rounded : 64);
  if (!p) *error = copy_string("out of memory allocating " + std::to_string(bytes) + " bytes");
  return p;
}

void clang_release(void* ptr) {
  std::free(ptr);
}

int clang_copy(void* dst, const void* src, size_t bytes, char**) {
  if (bytes > 0) std::memcpy(dst, src, bytes);  // src may be null for an empty tensor
  return 0;
}

/** The thread count `configure` took (0: every core); read by the openmp build's launch. */
std::atomic<int> configured_threads{0};

int clang_configure(const kiln_runtime_config* config, char**) {
  if (config->struct_size >= offsetof(kiln_runtime_config, threads) + sizeof config->threads)
    configured_threads = config->threads;
  return 0;
}

/** CPU kernels: the geometry means nothing here. The openmp build sets the thread count of the
 *  parallel regions the kernel opens first (omp_set_num_threads applies to the calling thread,
 *  so it is set on every launch, from whichever thread launches). */
int clang_launch(void* kernel, void* const* buffers, const int64_t* sizes, const kiln_launch*,
                 char** error) {
  if (flavour->libomp_path) {
    const OpenMP& omp = openmp();
    if (!omp.error.empty()) {
      *error = copy_string(omp.error);
      return 1;
    }
    int threads = configured_threads;
    omp.set_num_threads(threads > 0 ? threads : omp.get_num_procs());
  }
  reinterpret_cast<void (*)(void* const*, const int64_t*)>(kernel)(buffers, sizes);
  return 0;
}

int clang_synchronize(char**) {
  return 0;
}

const char* clang_describe_device() {
  const std::string threads =
      flavour->libomp_path ? ", OpenMP (" + std::string(flavour->libomp_path) + ")" : "";
  static const std::string line = std::string("host CPU ") + llvm::sys::getHostCPUName().str() +
                                  ", " + clang_compiler_version() + threads;
  return line.c_str();
}

void clang_free_blob(kiln_blob* blob) {
  std::free(blob->data);
  blob->data = nullptr;
  blob->size = 0;
}

void clang_free_string(char* s) {
  std::free(s);
}

const kiln_plugin kTable = {
    .abi_version = KILN_PLUGIN_ABI_VERSION,
    .name = "clang",
    .version = "1",
    .compiler_version = clang_compiler_version,
    .target = clang_target,
    .compile = clang_compile,
    .prepare = clang_prepare,
    .configure = clang_configure,
    .load = clang_load,
    .lookup = clang_lookup,
    .unload = clang_unload,
    .alloc = clang_alloc,
    .release = clang_release,
    .copy_to_device = clang_copy,
    .copy_to_host = clang_copy,
    .launch = clang_launch,
    .synchronize = clang_synchronize,
    .describe_device = clang_describe_device,
    .free_blob = clang_free_blob,
    .free_string = clang_free_string,
};

}  // namespace

const kiln_plugin* kiln::clang_runtime::plugin_table(const Flavour& f) {
  static const kiln_plugin table = [&] {
    flavour = &f;
    kiln_plugin t = kTable;
    t.name = f.name;
    return t;
  }();
  return &table;
}
