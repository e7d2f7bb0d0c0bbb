// `kiln generate FILE:COMPOSITE --weights CKPT --prompt 464,3290 --tokens N`: greedy generation
// with a step composite (ops/gpt2.toml:gpt2_step) through the public API's kiln::generate, the
// weights read as `kiln run --weights` reads them; prints the new token ids and tokens/s.
#include <algorithm>
#include <climits>
#include <cstdio>
#include <iostream>
#include <optional>

#include "driver/pipeline.h"
#include "kiln/kiln.h"
#include "tools/kiln/commands.h"
#include "tools/kiln/run_files.h"
#include "tools/kiln/session.h"

namespace kiln::cli {

namespace {

struct GenerateOptions {
  Selection sel;
  std::string runtime = "interp", weights;
  std::vector<std::string> config;
  std::vector<int64_t> prompt;
  int tokens = 0;
  bool generic = false;  ///< the one-token calls run the prompt's program too
};

std::string rate(int tokens, double seconds) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f", seconds > 0 ? tokens / seconds : 0.0);
  return buf;
}

/** The size variables that the given tensors' dimensions spell alone (C from wte_weight). */
std::map<std::string, int64_t> sizes_of(const Compiled& step, const GivenInputs& given) {
  std::map<std::string, int64_t> sizes;
  const std::vector<std::string> vars = step.size_vars();
  for (const auto& [name, in] : given) {
    const std::vector<std::string> dims = step.symbolic_shape(name);
    for (size_t d = 0; d < dims.size() && d < in.tensor.dims.size(); ++d)
      if (std::find(vars.begin(), vars.end(), dims[d]) != vars.end())
        sizes.emplace(dims[d], in.tensor.dims[d]);
  }
  return sizes;
}

void generate_command(const GenerateOptions& o) {
  Loaded l;
  load_selection(o.sel, l);
  GivenInputs given;
  read_weights(o.weights, l, given);
  std::vector<int32_t> prompt;
  for (int64_t id : o.prompt) {
    if (id < INT32_MIN || id > INT32_MAX)
      throw UsageError("--prompt: token id " + std::to_string(id) + " does not fit i32");
    prompt.push_back(static_cast<int32_t>(id));
  }
  CompileSettings settings = l.settings;
  settings.config = config_items(o.config);
  const Spec spec = Spec::load(split_target(o.sel.target).first);
  const Compiled step = compile(spec, l.comp->name, o.runtime, settings);
  // The one-token calls get the step compiled for one token: the size of its i32 vector input
  // that the weights do not give (the token ids) fixed to 1.
  for (const std::string& in : step.inputs())
    if (!given.count(in) && step.dtype(in) == "i32" && step.symbolic_shape(in).size() == 1)
      settings.fixed_sizes.emplace(step.symbolic_shape(in)[0], 1);
  std::optional<Compiled> decode;
  if (!o.generic && o.runtime != "interp")
    decode.emplace(compile(spec, l.comp->name, o.runtime, settings));
  const std::map<std::string, int64_t> sizes = sizes_of(step, given);
  std::map<std::string, std::vector<uint8_t>> bytes;  // each weight as the kernels read it
  std::map<std::string, const void*> inputs;
  for (auto it = given.begin(); it != given.end(); it = given.erase(it)) {
    const auto& [name, in] = *it;
    if (in.tensor.dtype != parse_dtype(step.dtype(name)))
      throw UsageError(in.origin + ": the input is " + step.dtype(name) + ", the file holds " +
                       std::string(dtype_name(in.tensor.dtype)));
    inputs[name] = (bytes[name] = tensor_to_bytes(in.tensor)).data();
  }
  // The header once the first call has run, so that a refused prompt prints only its error.
  bool started = false;
  auto start = [&] {
    if (started) return;
    started = true;
    std::cout << step.composite() << " on " << step.runtime() << ": " << prompt.size()
              << " prompt tokens, " << o.tokens << " new\ntokens:";
  };
  Generation g = usage_error_of([&] {
    return generate(
        step, inputs, sizes, prompt, o.tokens,
        [&](int32_t t) {
          start();
          std::cout << " " << t;
          std::cout.flush();
        },
        decode ? &*decode : nullptr);
  });
  start();
  std::cout << "\nprefill " << prompt.size() << " tokens " << format_ms(g.prefill_seconds * 1e3)
            << "; decode " << (o.tokens > 0 ? o.tokens - 1 : 0) << " tokens "
            << format_ms(g.decode_seconds * 1e3) << ", "
            << rate(o.tokens > 0 ? o.tokens - 1 : 0, g.decode_seconds) << " tokens/s\n";
}

}  // namespace

void add_generate_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "generate", "Greedy generation with a step composite (ops/gpt2.toml:gpt2_step) from weights");
  auto o = std::make_shared<GenerateOptions>();
  cmd->add_option("target", o->sel.target, "FILE:COMPOSITE, a step composite")->required();
  cmd->add_option("--weights", o->weights, "The safetensors checkpoint")->required();
  cmd->add_option("--prompt", o->prompt, "The prompt's token ids, e.g. 464,3290,318")
      ->delimiter(',')
      ->required();
  cmd->add_option("--tokens", o->tokens, "How many tokens to generate")
      ->required()
      ->check(CLI::Range(0, 1 << 20));
  cmd->add_option("--runtime", o->runtime,
                  "interp (the reference interpreter), a runtime name (clang, openmp, cc) or a "
                  "descriptor path")
      ->capture_default_str();
  cmd->add_option("--config", o->config, "Compiler knobs KEY=VALUE, e.g. THREADS=2")
      ->delimiter(',');
  cmd->add_flag("--generic", o->generic,
                "Run the one-token calls on the prompt's program, not on one compiled for a "
                "single token");
  cmd->add_option("--dtype", o->sel.dtypes, "Type variable choice, e.g. T=f16");
  cmd->add_option("--attr", o->sel.attrs, "Attribute values, e.g. layers=12");
  cmd->callback([o, &exit_code] {
    generate_command(*o);
    exit_code = Exit::ok;
  });
}

}  // namespace kiln::cli
