/** \file
 * The registry of `--config` knobs: every knob's name, owning stage, help, default, parser and
 * whether it enters the cache key, in one table (config.cpp). The command line, the public API
 * and the runtime descriptors' `[config]` tables all go through it, so an unknown key or a bad
 * value is one error everywhere (README "--config knobs" lists the table, checked by a test).
 */
#pragma once

#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "driver/pipeline.h"

namespace kiln {

struct RuntimeDescriptor;

/** An unknown key or a bad value: a caller mistake (exit 2 on the command line). */
struct ConfigError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

/** The stage a knob steers. */
enum class KnobStage { simplifier, scheduler, codegen, runtime };

/** "simplifier", "scheduler", "codegen", "runtime". */
const char* knob_stage_name(KnobStage s);

/** One typed knob. */
struct Knob {
  const char* name;           ///< upper case, as --config spells it
  KnobStage stage;            ///< the stage that reads it
  const char* help;           ///< one line
  const char* default_value;  ///< as text; parsing it gives CompileOptions{}'s value
  /** True when the knob changes the generated code, so it enters the program identity. */
  bool in_cache_key;
  /** Validates `value` and writes it into the options; throws ConfigError naming the knob. */
  std::function<void(const std::string& value, CompileOptions& opt)> parse;
  /** The knob's current value in `opt`, canonical (what the program identity holds). */
  std::function<std::string(const CompileOptions& opt)> show;
};

/** Every knob, sorted by name. */
const std::vector<Knob>& knobs();

/** The knob called `name`, compared without case; nullptr when there is none. */
const Knob* find_knob(const std::string& name);

/** The message for a key that names no knob: the known keys, and the closest one when a key is
 *  a typo away. `where` says what held the key ("--config", "runtimes/cc.toml [config]"). */
std::string unknown_knob_message(const std::string& key, const std::string& where);

/** Reads opt.config into the typed fields of `opt`, each item through its knob; keys are
 *  matched without case and rewritten to the knob's name. Throws ConfigError for an unknown key
 *  or a bad value. */
void apply_config(CompileOptions& opt);

/** The options of one compilation: the descriptor's `[config]` defaults (when `descriptor` is
 *  given; a key that is no knob is an error naming the descriptor file), overridden by `config`
 *  (--config items, CompileSettings::config), applied by apply_config. */
CompileOptions config_options(const std::map<std::string, std::string>& config,
                              const RuntimeDescriptor* descriptor);

/** "TILE=32x32x32\nPARALLEL=1\n...": the knobs that enter the cache key, with their values in
 *  `opt`. */
std::string config_identity(const CompileOptions& opt);

/** The knobs as a Markdown table (README quotes it verbatim, a test checks). */
std::string knobs_table();

/** The knobs as plain text, one a line: what `kiln run --help` ends with. */
std::string knobs_help();

}  // namespace kiln
