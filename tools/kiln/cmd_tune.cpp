// `kiln tune FILE[:COMPOSITE] --runtime R [--test SIZES] [--budget 60s] [--trials N] [--jobs N]
// [--list]`: searches the composite's space (driver/tune_space.h) with driver/tune_search.h, the
// default first; each batch of candidates is compiled on up to --jobs threads into the cache,
// then each is loaded, checked against the interpreter and timed with `kiln bench`'s timer, one
// at a time; prints a table and stores the winner in the tuning database (driver/tune_db.h),
// which later compiles of the same composite, runtime and sizes use; its subcommands on the
// database are in cmd_tune_db.cpp. docs/tuning.md.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <optional>
#include <set>
#include <thread>

#include "backends/backend.h"
#include "driver/compare.h"
#include "driver/tune_db.h"
#include "driver/tune_search.h"
#include "runtimes/cache.h"
#include "tools/kiln/bench_subjects.h"
#include "tools/kiln/commands.h"
#include "tools/kiln/session.h"

namespace kiln::cli {

namespace {

struct TuneOptions : RunRequest {
  TuneOptions() { runtime = "clang"; }
  std::string budget = "60s";
  int trials = 0;               ///< 0: no limit but the budget
  int jobs = 0;                 ///< candidates compiled at once; 0: every core
  int beam = 4;                 ///< points the beam search keeps
  std::string search = "auto";  ///< auto, exhaustive, beam or greedy
  bool list = false;
};

/** Spaces of at most this many points are searched exhaustively (unless --trials is smaller). */
constexpr size_t kExhaustiveMax = 32;
/** Timed runs of a candidate: at least kMinRepeats, until kTargetMs has passed. */
constexpr int kWarmup = 2;
constexpr int kMinRepeats = 5;
constexpr double kTargetMs = 200;
/** A candidate replaces the default only when its median is this much lower: less is noise. */
constexpr double kMinGain = 0.03;

/** "60s", "2m", "500ms" or "90" (seconds) in milliseconds; a UsageError otherwise. */
double parse_budget(const std::string& text) {
  size_t digits = 0;
  while (digits < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[digits])) || text[digits] == '.'))
    ++digits;
  std::string unit = text.substr(digits);
  double scale = unit.empty() || unit == "s" ? 1000 : unit == "ms" ? 1 : unit == "m" ? 60000 : 0;
  double n = digits ? std::strtod(text.substr(0, digits).c_str(), nullptr) : 0;
  if (scale == 0 || !(n > 0) || digits == 0)
    throw UsageError("--budget expects a positive duration such as 60s, 2m or 500ms, got '" + text +
                     "'");
  return n * scale;
}

/** What a search needs to measure a candidate. */
struct Bench {
  const TuneOptions& o;
  const Loaded& l;
  const Graph& g;
  const SizeBindings& sizes;
  const std::vector<Tensor>& inputs;
  const std::vector<Tensor>& want;

  size_t jobs;  ///< candidates compiled at once; 1: each compiled as it is measured

  /** The --config items of candidate `c`. */
  std::vector<std::string> config_of(const TuneCandidate& c) const {
    std::vector<std::string> config = o.config;
    for (const auto& [knob, value] : c)
      config.push_back(knob + "=" + value);
    config.push_back("TUNED=0");
    return config;
  }

  /** Compiles `c` into the cache, on the calling thread with a runtime of its own; why it
   *  failed, or empty. */
  std::string precompile(const TuneCandidate& c) const {
    try {
      std::unique_ptr<Runtime> rt = open_runtime(o.runtime);
      Graph own = g;  // each thread plans its own copy
      Executable::precompile(own, *rt, compile_options(config_of(c), 0, *rt, l));
      return "";
    } catch (const std::exception& e) {
      std::string what = e.what();
      return "failed: " + what.substr(0, what.find('\n'));
    }
  }

  /** The measure function of the search: the batch compiled on up to `jobs` threads into the
   *  cache, then each candidate loaded from it and timed, one at a time, after every compile
   *  has finished, so that no compile disturbs a timing. */
  std::vector<Trial> measure_batch(const std::vector<TuneCandidate>& batch) const {
    std::vector<std::string> failed(batch.size());
    if (jobs > 1 && batch.size() > 1) {
      std::atomic<size_t> next{0};
      std::vector<std::thread> workers;
      for (size_t w = 0; w < std::min(jobs, batch.size()); ++w)
        workers.emplace_back([&] {
          for (size_t k; (k = next++) < batch.size();)
            failed[k] = precompile(batch[k]);
        });
      for (std::thread& t : workers)
        t.join();
    }
    std::vector<Trial> trials;
    for (size_t k = 0; k < batch.size(); ++k) {
      if (isatty(STDERR_FILENO))
        std::cerr << "\r\033[K  " << candidate_text(batch[k]) << std::flush;
      trials.push_back(failed[k].empty() ? measure(batch[k]) : Trial{batch[k], {}, failed[k]});
    }
    return trials;
  }

  Trial measure(const TuneCandidate& c) const {
    Trial t{c, std::nullopt, ""};
    try {
      std::unique_ptr<Runtime> rt = open_runtime(o.runtime);
      CompileOptions opt = compile_options(config_of(c), 0, *rt, l);
      CompiledSubject s(g, std::move(rt), opt, inputs, sizes);
      for (int k = 0; k < kWarmup; ++k)
        s.run();
      if (std::string why = differs(*s.outputs()); !why.empty()) {
        t.why = why;
        return t;
      }
      std::vector<double> ms;
      auto start = std::chrono::steady_clock::now();
      auto spent = [&] {
        return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count();
      };
      while (ms.size() < static_cast<size_t>(kMinRepeats) || spent() < kTargetMs)
        ms.push_back(time_ms(s));
      t.median_ms = stats_of(ms).median;
    } catch (const std::exception& e) {
      std::string what = e.what();
      t.why = "failed: " + what.substr(0, what.find('\n'));
    }
    return t;
  }

  /** Why `got` differs from the interpreter's outputs; empty when it does not. */
  std::string differs(const std::vector<Tensor>& got) const {
    for (size_t k = 0; k < got.size() && k < want.size(); ++k) {
      Tolerance tol = tolerance_for(want[k].dtype, l.comp->test.rtol, l.comp->test.atol, want[k]);
      Comparison cmp = compare(got[k], want[k], tol);
      if (!cmp.ok)
        return "output '" + g.outputs[k].name + "' differs from the interpreter's at element " +
               std::to_string(cmp.first_bad);
    }
    return "";
  }
};

/** The target's first words, the CPU or GPU, without the feature list that follows. */
std::string target_head(const std::string& target) {
  std::string head = target.substr(0, target.find_first_of(";+"));
  while (!head.empty() && head.back() == ' ')
    head.pop_back();
  return head;
}

/** The table of trials and the winner (nullptr: only the default, or none valid). */
const Trial* report(const std::vector<Trial>& trials) {
  const Trial& base = trials.front();
  const Trial* win = base.median_ms ? &base : nullptr;
  for (const Trial& t : trials)
    if (t.median_ms && (!win || *t.median_ms < *win->median_ms * (win == &base ? 1 - kMinGain : 1)))
      win = &t;
  std::printf("  %-40s %12s  %s\n", "candidate", "median ms", "vs default");
  for (const Trial& t : trials) {
    std::string name = candidate_text(t.knobs) + (&t == &base ? " (default)" : "");
    if (!t.median_ms) {
      std::printf("  %-40s %12s  rejected: %s\n", name.c_str(), "-", t.why.c_str());
      continue;
    }
    char ratio[32] = "-";
    if (base.median_ms) std::snprintf(ratio, sizeof ratio, "%.2fx", *base.median_ms / *t.median_ms);
    std::printf("  %-40s %12.4g  %s%s\n", name.c_str(), *t.median_ms, ratio,
                &t == win ? "  <- winner" : "");
  }
  return win;
}

int tune(const TuneOptions& o) {
  if (o.runtime == "interp") throw UsageError("kiln tune times compiled code, not interp");
  if (!o.grad.empty()) throw UsageError("kiln tune does not tune --grad composites yet");
  double budget_ms = parse_budget(o.budget);
  Loaded l;
  load_selection(o.sel, l);
  SizeBindings sizes = bind_sizes(l, o.test);
  if (o.specialize) l.options.fixed_sizes = sizes;
  Graph g = lower_checked(l, &sizes, true);
  std::unique_ptr<Runtime> rt = open_runtime(o.runtime);
  rt->probe();
  std::vector<std::string> untuned = o.config;
  untuned.push_back("TUNED=0");
  CompileOptions opt = compile_options(untuned, 0, *rt, l);
  bool host = backend_for(rt->backend()).memory() == MemoryKind::host;
  std::vector<TuneDimension> space = tune_space(g, opt, host, opt.schedule.gpu_tile.wgmma);
  std::set<std::string> pinned;
  for (const auto& [knob, value] : config_items(o.config))
    pinned.insert(find_knob(knob)->name);
  std::erase_if(space, [&](const TuneDimension& d) { return pinned.count(d.knob) > 0; });
  size_t points = space_size(space);
  // Past the exhaustive limit the greedy walk: on today's two-knob spaces it reached the beam's
  // winners in a third to two thirds of its time (docs/decisions.md, "Beam search measured").
  std::string strategy = o.search;
  if (strategy == "auto")
    strategy = points <= (o.trials ? static_cast<size_t>(o.trials) : kExhaustiveMax) ? "exhaustive"
                                                                                     : "greedy";
  std::cout << g.name << " [" << sizes_text(sizes) << "] on " << rt->name() << " ("
            << target_head(rt->target()) << "): " << points << " point" << (points == 1 ? "" : "s")
            << " in the space\n"
            << space_text(space);
  if (o.list) return Exit::ok;
  if (space.empty()) {
    std::cout << "nothing to tune: no knob of the space applies to this composite here\n";
    return Exit::ok;
  }

  std::vector<Tensor> inputs = random_inputs(g, *l.comp, sizes, o.seed);
  std::vector<Tensor> want = interpret(g, sizes, inputs, false);
  // Candidates compile in parallel into the cache and load from it to be timed; without a
  // cache (KILN_CACHE=off) each compiles as it is measured.
  size_t jobs = o.jobs ? static_cast<size_t>(o.jobs)
                       : std::max<size_t>(1, std::thread::hardware_concurrency());
  if (Cache::default_dir().empty()) jobs = 1;
  Bench bench{o, l, g, sizes, inputs, want, jobs};
  SearchLimits limits{static_cast<size_t>(o.trials), budget_ms, jobs};
  TuneSearch search(
      space, [&](const std::vector<TuneCandidate>& batch) { return bench.measure_batch(batch); },
      limits);
  std::cout << "search: "
            << (strategy == "beam"     ? "beam of " + std::to_string(o.beam)
                : strategy == "greedy" ? std::string("greedy, one knob at a time")
                                       : strategy)
            << (o.trials ? ", at most " + std::to_string(o.trials) + " trials" : "") << ", budget "
            << o.budget << ", " << jobs << " compile" << (jobs == 1 ? "" : "s") << " at once\n";
  std::cout.flush();
  auto started = std::chrono::steady_clock::now();
  if (strategy == "exhaustive")
    search.exhaustive();
  else if (strategy == "greedy")
    search.greedy();
  else
    search.beam(static_cast<size_t>(o.beam));
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (isatty(STDERR_FILENO)) std::cerr << "\r\033[K" << std::flush;
  const std::vector<Trial>& trials = search.trials();
  std::printf("%zu candidate%s measured in %.1f s", trials.size(), trials.size() == 1 ? "" : "s",
              seconds);
  std::cout << (search.out_of_budget() ? " (stopped at the budget or --trials)" : "") << "\n";
  const Trial* win = report(trials);
  if (!win) {
    std::cerr << "kiln: error: no candidate ran correctly; nothing stored\n";
    return Exit::test_failed;
  }
  TuneEntry e;
  e.knobs = win->knobs;
  e.label = g.name + " [" + sizes_text(sizes) + "] on " + rt->name();
  e.default_ms = trials.front().median_ms.value_or(0);
  e.best_ms = *win->median_ms;
  std::cout << "winner: " << (e.knobs.empty() ? "the default" : candidate_text(e.knobs));
  if (e.default_ms > 0) std::printf(" (%.2fx the default)", e.default_ms / e.best_ms);
  std::cout << "\n";
  TuneDb db;
  std::string warning;
  if (!db.put(tune_key(g, rt->name(), rt->target(), sizes, opt), e, &warning)) {
    std::cerr << "kiln: warning: " << (warning.empty() ? "the tuning database is off" : warning)
              << "; the winner is not stored\n";
    return Exit::ok;
  }
  // Also under the size bucket, for nearby sizes; a specialized graph holds its sizes, so only
  // its own sizes can find it.
  std::string bucket;
  if (!o.specialize && !sizes.empty()) {
    TuneEntry b = e;
    b.label = g.name + " [bucket " + sizes_text(size_bucket(sizes)) + "] on " + rt->name();
    if (db.put(tune_bucket_key(g, rt->name(), rt->target(), sizes, opt), b, &warning))
      bucket = " (and under the size bucket " + sizes_text(size_bucket(sizes)) + ")";
    else
      std::cerr << "kiln: warning: " << warning << "; not stored under the size bucket\n";
  }
  std::cout << "stored in " << db.dir() << bucket << "\n";
  return Exit::ok;
}

}  // namespace

void add_tune_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "tune", "Search the schedule knobs for the fastest on this machine and remember the winner");
  auto o = std::make_shared<TuneOptions>();
  add_run_request_options(*cmd, *o,
                          "A runtime name (clang, openmp, cc, cuda) or a descriptor path");
  cmd->get_option("target")->required(false);
  cmd->add_option("--budget", o->budget, "Stop starting candidates after this long: 60s, 2m, 500ms")
      ->capture_default_str();
  cmd->add_option("--trials", o->trials, "Measure at most this many candidates")
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--jobs", o->jobs,
                  "Compile this many candidates at once (default: every core); timing stays "
                  "one candidate at a time")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--beam", o->beam, "Points --search beam keeps")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--search", o->search,
                  "auto (exhaustive up to 32 points or --trials, else greedy), exhaustive, "
                  "greedy (one knob at a time) or beam (--beam points, every neighbour of each)")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "exhaustive", "beam", "greedy"}));
  cmd->add_flag("--list", o->list, "Print the search space and stop");
  add_tune_db_commands(*cmd, exit_code);
  cmd->callback([o, cmd, &exit_code] {
    for (const char* sub : {"ls", "clear", "export", "import"})
      if (cmd->got_subcommand(sub)) return;
    if (o->sel.target.empty())
      throw UsageError(
          "kiln tune needs FILE[:COMPOSITE], or ls, clear, export FILE or import FILE");
    exit_code = tune(*o);
  });
}

}  // namespace kiln::cli
