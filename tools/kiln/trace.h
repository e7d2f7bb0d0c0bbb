/** \file
 * `kiln run --trace FILE.json` and `kiln bench --trace FILE.json`: a trace in the Chrome trace
 * event format that Perfetto (ui.perfetto.dev) and chrome://tracing open — a JSON object whose
 * "traceEvents" are complete events ("ph": "X", "ts" and "dur" in microseconds from the start
 * of the command): lowering, the pipeline stages, the compile and the load, each run and each
 * kernel launch in it.
 */
#pragma once

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "driver/executable.h"

namespace kiln::cli {

class Trace {
 public:
  using Clock = std::chrono::steady_clock;
  /** Names the process `process` (e.g. "kiln run softmax"); times count from now. */
  explicit Trace(const std::string& process);

  /** One complete event: `name` in `category` from `start` for `ms` milliseconds, with string
   *  arguments. An event that starts before the trace (a time never set) is left out. */
  void span(const std::string& name, const std::string& category, Clock::time_point start,
            double ms, const std::vector<std::pair<std::string, std::string>>& args = {});
  /** The same, from `start` to now. */
  void span_since(const std::string& name, const std::string& category, Clock::time_point start,
                  const std::vector<std::pair<std::string, std::string>>& args = {});

  /** The stages, compile and load of `exe`, built from `start` for `ms` (one "build" event
   *  around them). */
  void build(const Executable& exe, Clock::time_point start, double ms);
  /** A run of `exe` named `name` from `start` for `ms`, and each launch in it. */
  void run(const Executable& exe, const std::string& name, Clock::time_point start, double ms,
           const std::vector<LaunchSpan>& launches);

  /** Writes the trace to `path`; throws std::runtime_error when it cannot. */
  void write(const std::string& path) const;

 private:
  Clock::time_point origin_;
  std::vector<std::string> events_;  ///< each one JSON object
};

}  // namespace kiln::cli
