/** \file
 * Kiln's public C++ API (docs/api.md): load a spec file, compile one of its composites for a
 * runtime, and run it on buffers the caller owns. Only standard-library types appear here; the
 * compiler's own types stay behind pointers to implementation.
 *
 * Errors: a spec with an error throws kiln::InvalidSpec; a wrong name or value from the caller
 * (no such composite, runtime, dtype, attribute, input, or an unbound size) throws
 * std::invalid_argument; a failure while compiling or running throws std::runtime_error.
 */
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace kiln {

/** A spec file with an error. what() is the formatted diagnostic: `file:line:col: error: ...`,
 *  the offending line with a caret, and the call trace when the error is in a called composite. */
class InvalidSpec : public std::runtime_error {
 public:
  /** Made by the library from the diagnostic and the error's position. */
  InvalidSpec(const std::string& diagnostic, std::string file, int line, int column);
  /** The file holding the error, as it was named. */
  const std::string& file() const { return file_; }
  /** 1-based line of the error. */
  int line() const { return line_; }
  /** 1-based column of the error. */
  int column() const { return column_; }

 private:
  std::string file_;
  int line_ = 0;
  int column_ = 0;
};

/** A loaded spec file and the files it uses. Move-only. */
class Spec {
 public:
  /** Loads `path` and every file it uses (`[meta] use`). Throws InvalidSpec. */
  static Spec load(const std::string& path);
  /** Parses `toml_text` as a spec file called `name`: `name` is the file in diagnostics (their
   *  source lines come from the text) and `use` paths are relative to its folder (the current
   *  directory for a bare name), `std:` names the standard library. Throws InvalidSpec. */
  static Spec from_string(const std::string& toml_text, const std::string& name = "<string>");

  /** The names of the file's own composites, in the order written. */
  std::vector<std::string> composites() const;
  /** True when `name` resolves from this file (its own composites, then the files it uses). */
  bool has(const std::string& name) const;
  /** The doc string of composite `name`. Throws std::invalid_argument for an unknown name. */
  std::string doc(const std::string& name) const;

  Spec(Spec&&) noexcept;
  Spec& operator=(Spec&&) noexcept;
  ~Spec();

  /** The implementation; opaque to callers. */
  struct Impl;
  /** The implementation, for the library's own use. */
  const Impl& impl() const { return *impl_; }

 private:
  explicit Spec(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/** The choices a spec leaves to the caller, as the `kiln run` options spell them. */
struct CompileSettings {
  /** Type variable -> dtype spelling, e.g. {"T", "f16"}; unset variables take their first
   *  allowed dtype (f32 for softmax and matmul). */
  std::map<std::string, std::string> dtypes;
  /** Attribute -> value as text, e.g. {"alpha", "0.2"}, {"causal", "true"}, {"axes", "0,2"}. */
  std::map<std::string, std::string> attrs;
  /** How many dimensions a leading `...` stands for; they become size variables batch0, ... */
  int batch_rank = 0;
  /** Compiler knobs as `--config` items, e.g. {"TILE", "32"} (README "--config knobs"; keys in
   *  any case); they override the runtime's descriptor defaults. compile() throws
   *  std::invalid_argument for a key that is no knob, naming the known keys. */
  std::map<std::string, std::string> config;
  /** Size variables to compile as constants (`--specialize`); they need no binding at run. */
  std::map<std::string, int64_t> fixed_sizes;
  /** The compile cache folder; empty means the default ($KILN_CACHE or the user cache;
   *  KILN_CACHE=off: no cache). */
  std::string cache_dir;
  /** Float inputs to differentiate with respect to (`kiln run --grad x,w`): when not empty,
   *  compile() compiles the composite's backward composite instead (docs/autodiff.md), named
   *  `<composite>_grad`, whose inputs are the composite's followed by one cotangent per float
   *  output (`dy` for `y`) and whose outputs are the gradients, one per name here in this order
   *  (`dx` for `x`). compile() throws std::invalid_argument for a name that is no float input,
   *  InvalidSpec (at the composite's body) when the gradient cannot be taken. */
  std::vector<std::string> grad_wrt;
  /** With grad_wrt: what the backward composite takes from the forward pass (docs/autodiff.md,
   *  "Saved values"): "recompute" (empty means it: nothing, every forward value is recomputed
   *  from the inputs), "stats" (the results of reductions no larger than a forward input or
   *  output: row statistics; attention's scores are recomputed) or "all" (every computed float
   *  value the backward reads). The saved values are the backward composite's inputs between
   *  the composite's inputs and the cotangents, named `saved_N`. compile() throws
   *  std::invalid_argument for another name. */
  std::string grad_save;
  /** With grad_wrt: compile the forward pass that goes with that backward composite instead,
   *  named `<composite>_save`: the composite's inputs, its outputs followed by the saved values
   *  the backward composite takes (none under "recompute"). */
  bool grad_forward = false;
};

/** A composite compiled for one runtime, runnable for any binding of its size variables.
 *  Move-only; run() may be called many times. */
class Compiled {
 public:
  /** Runs on caller-owned host memory: `buffers` holds one pointer per input, then one per
   *  output, in declaration order, each a dense row-major array of its dtype and shape for
   *  `sizes`. Buffers must not overlap: kernels treat them as `restrict`, and an output that
   *  aliases an input gives undefined results. Every size variable must be bound. On a CPU runtime
   * (backend c or openmp) the pointers go to the kernels as they are, with no copy; on any other
   * runtime (and on "interp") inputs are copied in and outputs copied back. Throws
   * std::invalid_argument for a wrong buffer count, an unbound size, or sizes that make a dimension
   * negative or a tensor larger than the limits (docs/spec-language.md "Limits": 2^40 elements,
   * 64 dimensions), std::runtime_error when running fails.
   * An input declared `const` (a weight) may be re-laid out once and the copy kept: later runs
   * with the same buffer pointers and sizes reuse it, so after changing a const input's contents
   * in place call weights_changed() before the next run. */
  void run(const std::vector<void*>& buffers, const std::map<std::string, int64_t>& sizes) const;
  /** Runs on buffers in the runtime's device memory (a device_memory() runtime: for "cuda",
   *  memory of CUDA device 0 in its primary context, such as PyTorch's), laid out and checked as
   *  run()'s. The kernels are launched in order on `stream` (a CUstream the caller owns) and the
   *  call returns without waiting: the outputs are ready when the stream's work is, and the inputs
   *  must stay as they are until then. The temporaries a composite needs are kept between runs;
   *  a run on another stream than the last run's waits for that stream first, so runs never share
   *  them in flight. A null `stream` runs on the runtime's own queue and waits, as run() does
   *  without the copies. Throws std::invalid_argument on a runtime of host memory (use run()) and
   *  for the mistakes run() refuses, std::runtime_error when a launch fails (a fault inside a
   *  kernel surfaces at the caller's next wait on the stream). */
  void run_device(const std::vector<void*>& buffers, const std::map<std::string, int64_t>& sizes,
                  void* stream) const;
  /** True when the runtime's kernels read device memory ("cuda"): run() stages host buffers
   *  through it, run_device() takes buffers already there. False for CPU runtimes and "interp". */
  bool device_memory() const;
  /** The contents of const inputs changed in place: the next run() reads them afresh. */
  void weights_changed() const;
  /** The composite's state (`state = { k_out = "k" }`, docs/spec-language.md "State"): pairs
   *  {output, input}, in the order written, each output the value its input takes on the next
   *  call. Keep state across calls by passing the buffer a run wrote for the output as the
   *  input of the next run, and the input's buffer as the next output (two buffers, swapped:
   *  within one run an output must not alias an input). */
  std::vector<std::pair<std::string, std::string>> state() const;

  /** The composite's name. */
  const std::string& composite() const;
  /** The runtime it was compiled for ("clang", "cc", "interp", ...). */
  const std::string& runtime() const;
  /** Input names, in buffer order. */
  std::vector<std::string> inputs() const;
  /** Output names, in buffer order (after the inputs). */
  std::vector<std::string> outputs() const;
  /** The size variables run() needs bound, in declaration order (batch0, ... included). */
  std::vector<std::string> size_vars() const;
  /** True when input `name` is declared `const` (a weight whose packed panels run() may keep). */
  bool is_const(const std::string& name) const;
  /** The dtype of input or output `name`: "f32", "i64", "bool", ... */
  std::string dtype(const std::string& name) const;
  /** The symbolic shape of input or output `name`, one expression per dimension: {"M", "N"}. */
  std::vector<std::string> symbolic_shape(const std::string& name) const;
  /** The concrete shape of input or output `name` for `sizes`. */
  std::vector<int64_t> shape(const std::string& name,
                             const std::map<std::string, int64_t>& sizes) const;
  /** The byte size of input or output `name`'s buffer for `sizes`; std::invalid_argument past
   *  the limits, as run(). */
  size_t byte_size(const std::string& name, const std::map<std::string, int64_t>& sizes) const;

  Compiled(Compiled&&) noexcept;
  Compiled& operator=(Compiled&&) noexcept;
  ~Compiled();

  /** The implementation; opaque to callers. */
  struct Impl;

 private:
  friend Compiled compile(const Spec&, const std::string&, const std::string&,
                          const CompileSettings&);
  explicit Compiled(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/** A safetensors weights file (the format models are shipped in: docs/api.md "Weights"),
 *  mapped copy-on-write (writes never reach the file) for as long as the object lives. A
 *  tensor's data() points into the mapping — nothing is read or copied until a kernel touches
 *  it — and goes to Compiled::run() as an input buffer as it is. Move-only. */
class Weights {
 public:
  /** Maps and checks the file. Throws std::runtime_error naming the file (and the tensor) for
   *  a file that cannot be read or is not a well-formed safetensors file: truncated, a header
   *  longer than the file, offsets outside the data or overlapping, a byte count that is not
   *  its shape's, an unknown dtype. */
  static Weights open(const std::string& path);

  /** The tensors' names, in the order of their data. */
  std::vector<std::string> names() const;
  bool has(const std::string& name) const;
  /** Kiln's spelling of its dtype ("f32", "bf16", "bool", ...). */
  std::string dtype(const std::string& name) const;
  std::vector<int64_t> shape(const std::string& name) const;
  /** Its elements, dense and row-major, in the mapping; aligned as the file places them (files
   *  that the safetensors library writes align each tensor to its element size). */
  const void* data(const std::string& name) const;
  size_t byte_size(const std::string& name) const;
  /** The header's "__metadata__" strings. */
  std::map<std::string, std::string> metadata() const;
  /** Checks tensor `name` (default: `input`) against input `input` of `c` — its dtype, its
   *  rank and each dimension — and returns the size variables its dimensions bind (a dimension
   *  that is one size variable binds it; any other must equal the value it evaluates to from
   *  `sizes` and the bindings so far). Throws std::invalid_argument naming both on a mismatch
   *  or an unknown name. */
  std::map<std::string, int64_t> bind(const Compiled& c, const std::string& input,
                                      const std::string& name = "",
                                      const std::map<std::string, int64_t>& sizes = {}) const;

  Weights(Weights&&) noexcept;
  Weights& operator=(Weights&&) noexcept;
  ~Weights();
  struct Impl;

 private:
  explicit Weights(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/** Compiles composite `composite` of `spec` for `runtime`: a runtime name ("clang", "cc"), a
 *  descriptor path ending in `.toml`, or "interp" (the reference interpreter, no compiler).
 *  Throws InvalidSpec when lowering finds an error, std::invalid_argument for an unknown
 *  composite, runtime, dtype, attribute or config item, std::runtime_error when compiling fails. */
Compiled compile(const Spec& spec, const std::string& composite,
                 const std::string& runtime = "clang", const CompileSettings& settings = {});

/** What generate() produced. */
struct Generation {
  std::vector<int32_t> tokens; /**< the new token ids, in order */
  double prefill_seconds = 0;  /**< the first call, on the whole prompt */
  double decode_seconds = 0;   /**< the calls on one token each, together */
};

/** Greedy generation (docs/models.md "Generating") with a step composite such as
 *  ops/gpt2.toml:gpt2_step: one call on the prompt, then one call a token, each next token the
 *  first maximum of the logits. The step's inputs are those in `inputs` (weights, by name: host
 *  buffers of their dtype and shape under `sizes`), its state inputs (state(): zero-filled at
 *  first, then double-buffered: the buffer a call writes is the next call's input, nothing is
 *  copied), one i32 vector (the token ids; its size variable is bound to the count of each
 *  call) and one i32 scalar (the first token's position); its outputs its states and one float
 *  vector, the logits over the vocabulary. A size variable that `sizes` leaves unbound and a
 *  state input spells as a dimension of its own (the cache's positions) is bound to
 *  prompt.size() + new_tokens. `on_token` sees each token as it comes. `decode_step`, when
 *  given, runs the one-token calls: the same composite compiled with the ids' size fixed to 1
 *  (CompileSettings::fixed_sizes), which the scheduler can plan for one row. Throws
 *  std::invalid_argument for a step of another shape, an input not given, an empty prompt or a
 *  token id outside the vocabulary; what run() throws otherwise. */
Generation generate(const Compiled& step, const std::map<std::string, const void*>& inputs,
                    const std::map<std::string, int64_t>& sizes, const std::vector<int32_t>& prompt,
                    int new_tokens, const std::function<void(int32_t)>& on_token = {},
                    const Compiled* decode_step = nullptr);

/** One compiler knob of README "--config knobs" (CompileSettings::config). */
struct ConfigKnob {
  std::string name;          /**< upper case, as `--config` spells it */
  std::string stage;         /**< "simplifier", "scheduler", "codegen" or "runtime" */
  std::string default_value; /**< as text */
  std::string help;          /**< one line */
  bool in_cache_key = false; /**< whether it changes the generated code */
};

/** Every knob, sorted by name. */
std::vector<ConfigKnob> config_knobs();

/** One runtime descriptor found (`kiln runtimes`). */
struct RuntimeInfo {
  std::string name;       /**< what compile() takes: "clang", "openmp", "cc", ... */
  std::string descriptor; /**< the descriptor file */
  std::string backend;    /**< "c", "openmp", "cuda"; empty when the runtime did not open */
  std::string device;     /**< the device it runs on; empty when it did not open */
  bool usable = false;    /**< it can run kernels here */
  std::string note;       /**< why not, when it is not usable */
};

/** Every runtime descriptor found, by name ("interp", the reference interpreter, is not one).
 *  Opens each runtime's plugin to probe it. */
std::vector<RuntimeInfo> runtimes();

/** The compiled-code cache's folder and totals (`kiln cache stats`). */
struct CacheInfo {
  std::string dir;    /**< empty when the cache is off (KILN_CACHE=off) */
  size_t entries = 0; /**< compiled programs stored */
  uint64_t bytes = 0; /**< their size on disk */
};

/** The cache in `dir`, or the default one ($KILN_CACHE, else the user cache) when empty. */
CacheInfo cache_info(const std::string& dir = "");
/** Deletes every entry of the cache in `dir` (default as cache_info); returns how many. */
size_t clear_cache(const std::string& dir = "");

}  // namespace kiln
