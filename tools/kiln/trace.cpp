#include "tools/kiln/trace.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <stdexcept>

#include "tools/kiln/json.h"

namespace kiln::cli {

namespace {

/** Microseconds with a nanosecond's precision, as the format's "ts" and "dur" take them. */
std::string micros(double us) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.3f", us);
  return buf;
}

std::string args_json(const std::vector<std::pair<std::string, std::string>>& args) {
  std::string s = "{";
  for (const auto& [k, v] : args)
    s += (s.size() > 1 ? ", " : "") + json_string(k) + ": " + json_string(v);
  return s + "}";
}

}  // namespace

Trace::Trace(const std::string& process) : origin_(Clock::now()) {
  std::string pid = std::to_string(getpid());
  events_.push_back("{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": " + pid +
                    ", \"tid\": 1, \"args\": {\"name\": " + json_string(process) + "}}");
  events_.push_back("{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": " + pid +
                    ", \"tid\": 1, \"args\": {\"name\": \"main\"}}");
}

void Trace::span(const std::string& name, const std::string& category, Clock::time_point start,
                 double ms, const std::vector<std::pair<std::string, std::string>>& args) {
  if (start < origin_) return;
  double ts = std::chrono::duration<double, std::micro>(start - origin_).count();
  events_.push_back("{\"name\": " + json_string(name) + ", \"cat\": " + json_string(category) +
                    ", \"ph\": \"X\", \"ts\": " + micros(ts) + ", \"dur\": " + micros(ms * 1000) +
                    ", \"pid\": " + std::to_string(getpid()) +
                    ", \"tid\": 1, \"args\": " + args_json(args) + "}");
}

void Trace::span_since(const std::string& name, const std::string& category,
                       Clock::time_point start,
                       const std::vector<std::pair<std::string, std::string>>& args) {
  span(name, category, start,
       std::chrono::duration<double, std::milli>(Clock::now() - start).count(), args);
}

void Trace::build(const Executable& exe, Clock::time_point start, double ms) {
  const CompileInfo& c = exe.build_info().compile;
  span("build", "build", start, ms,
       {{"kernels", std::to_string(exe.program().plan.kernels.size())}});
  for (const StageTime& t : exe.build_info().stages)
    span(t.name, "stage", t.start, t.milliseconds);
  span("compile", "build", c.compile_start, c.compile_ms,
       {{"cache", c.cache_hit ? "hit" : "miss"}, {"key", c.key}});
  span("load", "build", c.load_start, c.load_ms);
}

void Trace::run(const Executable& exe, const std::string& name, Clock::time_point start, double ms,
                const std::vector<LaunchSpan>& launches) {
  const LoweredProgram& p = exe.program();
  span(name, "run", start, ms);
  for (const LaunchSpan& l : launches) {
    if (l.kernel < 0) {
      span("kernels", "kernel", l.start, l.milliseconds,
           {{"launches", std::to_string(p.plan.kernels.size())},
            {"note", "a device's kernels, launched as one sequence and waited for once"}});
      continue;
    }
    size_t k = static_cast<size_t>(l.kernel);
    std::string symbol = k < p.symbols.size() ? p.symbols[k] : "kernel " + std::to_string(k);
    span(symbol, "kernel", l.start, l.milliseconds,
         {{"statements", std::to_string(p.plan.kernels.at(k).statements.size())}});
  }
}

void Trace::write(const std::string& path) const {
  std::ofstream out(path, std::ios::binary);
  out << "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n";
  for (size_t k = 0; k < events_.size(); ++k)
    out << "  " << events_[k] << (k + 1 < events_.size() ? ",\n" : "\n");
  out << "]}\n";
  if (!out.flush()) throw std::runtime_error("cannot write the trace to '" + path + "'");
}

}  // namespace kiln::cli
