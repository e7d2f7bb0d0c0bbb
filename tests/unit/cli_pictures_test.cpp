// The `kiln` binary end to end, its pictures and traces: `show --format dot` for every stage but
// code (and the error for code), `--format svg|png` through Graphviz's dot (or the error that
// names it when dot is missing), and `run --trace` / `bench --trace` writing a Chrome trace
// that parses as JSON. KILN_BIN names the binary.
#include <doctest/doctest.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/cli.h"

using namespace clitest;

namespace {

Result kiln(const std::string& args, const std::string& env = "") {
  return run_kiln(args, env);
}

/** Whether `text` looks like one whole dot digraph: it starts so, ends with its closing brace,
 *  and its braces balance and its quotes close outside and inside quoted strings. */
bool well_formed_dot(const std::string& text) {
  if (text.rfind("digraph ", 0) != 0 || text.size() < 2 || text.substr(text.size() - 2) != "}\n")
    return false;
  int depth = 0;
  bool quoted = false;
  for (size_t k = 0; k < text.size(); ++k) {
    char c = text[k];
    if (quoted) {
      if (c == '\\')
        ++k;
      else if (c == '"')
        quoted = false;
      else if (c == '\n')
        return false;  // the writers keep a label on its line ("\n" escaped)
    } else if (c == '"') {
      quoted = true;
    } else if (c == '{') {
      ++depth;
    } else if (c == '}' && --depth < 0) {
      return false;
    }
  }
  return depth == 0 && !quoted;
}

/** A JSON value, as much of one as the trace tests look at. */
struct Json {
  enum class Kind { null, boolean, number, string, array, object } kind = Kind::null;
  double number = 0;
  std::string string;
  std::vector<Json> items;
  std::map<std::string, Json> fields;
};

/** A strict JSON parser (RFC 8259, no extensions); false on any syntax error. */
class JsonParser {
 public:
  explicit JsonParser(const std::string& text) : s_(text) {}
  bool parse(Json& out) {
    if (!value(out)) return false;
    space();
    return i_ == s_.size();
  }

 private:
  void space() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_])))
      ++i_;
  }
  bool literal(const char* word) {
    std::string w = word;
    if (s_.compare(i_, w.size(), w) != 0) return false;
    i_ += w.size();
    return true;
  }
  bool string(std::string& out) {
    if (i_ >= s_.size() || s_[i_] != '"') return false;
    for (++i_; i_ < s_.size(); ++i_) {
      char c = s_[i_];
      if (c == '"') {
        ++i_;
        return true;
      }
      if (static_cast<unsigned char>(c) < 0x20) return false;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (++i_ >= s_.size()) return false;
      char e = s_[i_];
      if (e == 'u') {
        if (i_ + 4 >= s_.size()) return false;
        for (int d = 1; d <= 4; ++d)
          if (!std::isxdigit(static_cast<unsigned char>(s_[i_ + d]))) return false;
        out += '?';
        i_ += 4;
      } else if (std::string("\"\\/bfnrt").find(e) != std::string::npos) {
        out += e;
      } else {
        return false;
      }
    }
    return false;
  }
  bool number(double& out) {
    size_t start = i_;
    if (i_ < s_.size() && s_[i_] == '-') ++i_;
    size_t digits = i_;
    while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_])))
      ++i_;
    if (i_ == digits || (s_[digits] == '0' && i_ - digits > 1)) return false;
    if (i_ < s_.size() && s_[i_] == '.') {
      size_t frac = ++i_;
      while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_])))
        ++i_;
      if (i_ == frac) return false;
    }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      ++i_;
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
      size_t exp = i_;
      while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_])))
        ++i_;
      if (i_ == exp) return false;
    }
    out = std::stod(s_.substr(start, i_ - start));
    return true;
  }
  bool value(Json& out) {
    space();
    if (i_ >= s_.size()) return false;
    char c = s_[i_];
    if (c == '{') {
      out.kind = Json::Kind::object;
      ++i_;
      space();
      if (i_ < s_.size() && s_[i_] == '}') return ++i_, true;
      while (true) {
        space();
        std::string key;
        if (!string(key)) return false;
        space();
        if (i_ >= s_.size() || s_[i_++] != ':') return false;
        if (!value(out.fields[key])) return false;
        space();
        if (i_ < s_.size() && s_[i_] == ',') {
          ++i_;
          continue;
        }
        return i_ < s_.size() && s_[i_++] == '}';
      }
    }
    if (c == '[') {
      out.kind = Json::Kind::array;
      ++i_;
      space();
      if (i_ < s_.size() && s_[i_] == ']') return ++i_, true;
      while (true) {
        out.items.emplace_back();
        if (!value(out.items.back())) return false;
        space();
        if (i_ < s_.size() && s_[i_] == ',') {
          ++i_;
          continue;
        }
        return i_ < s_.size() && s_[i_++] == ']';
      }
    }
    if (c == '"') {
      out.kind = Json::Kind::string;
      return string(out.string);
    }
    if (literal("true") || literal("false")) {
      out.kind = Json::Kind::boolean;
      return true;
    }
    if (literal("null")) return true;
    out.kind = Json::Kind::number;
    return number(out.number);
  }

  const std::string& s_;
  size_t i_ = 0;
};

/** One complete ("X") event of a trace. */
struct Event {
  std::string name, category;
  double ts = 0, dur = 0;
};

/** The complete events of the trace file at `path`; fails the test case where the file is not
 *  JSON or an event lacks a field of the format. */
std::vector<Event> read_trace(const std::filesystem::path& path) {
  std::string text = read_file(path);
  Json root;
  REQUIRE_MESSAGE(JsonParser(text).parse(root), "not JSON:\n" << text);
  REQUIRE(root.kind == Json::Kind::object);
  REQUIRE(root.fields.count("traceEvents"));
  const Json& events = root.fields.at("traceEvents");
  REQUIRE(events.kind == Json::Kind::array);
  std::vector<Event> out;
  for (const Json& e : events.items) {
    REQUIRE(e.kind == Json::Kind::object);
    REQUIRE(e.fields.count("ph"));
    for (const char* f : {"name", "pid", "tid"})
      CHECK_MESSAGE(e.fields.count(f), "an event without '" << f << "'");
    if (e.fields.at("ph").string != "X") continue;
    for (const char* f : {"ts", "dur", "cat"})
      REQUIRE_MESSAGE(e.fields.count(f), "a complete event without '" << f << "'");
    Event ev{e.fields.at("name").string, e.fields.at("cat").string, e.fields.at("ts").number,
             e.fields.at("dur").number};
    CHECK(ev.ts >= 0);
    CHECK(ev.dur >= 0);
    out.push_back(ev);
  }
  return out;
}

const Event* find_event(const std::vector<Event>& events, const std::string& name) {
  for (const Event& e : events)
    if (e.name == name) return &e;
  return nullptr;
}

size_t count_category(const std::vector<Event>& events, const std::string& category) {
  size_t n = 0;
  for (const Event& e : events)
    n += e.category == category;
  return n;
}

}  // namespace

TEST_CASE("cli: show --format dot draws the graph, with views labelled by what they do") {
  if (!std::getenv("KILN_BIN")) return;
  Result r = kiln("show ops/tensor.toml:transpose --format dot");
  CAPTURE(r.out);
  CHECK(r.code == 0);
  CHECK(well_formed_dot(r.out));
  CHECK(has(r, "view transpose [M, N] -> [N, M]"));
  CHECK(!has(r, "(%0, %1) ->"));  // not the index map of the text form
  r = kiln("show ops/nn.toml:softmax --format dot");
  CAPTURE(r.out);
  CHECK(r.code == 0);
  CHECK(well_formed_dot(r.out));
  CHECK(has(r, "view broadcast dim 0 [1] -> [N]"));
  CHECK(has(r, "headlabel=1"));  // operands numbered where there are several
  r = kiln("show ops/tensor.toml:slice --format dot");
  CAPTURE(r.out);
  CHECK(r.code == 0);
  CHECK(has(r, "view slice dim "));
  r = kiln("show ops/nn.toml:softmax --stage simplified --format dot");
  CAPTURE(r.out);
  CHECK(r.code == 0);
  CHECK(well_formed_dot(r.out));
  CHECK(has(r, "reduce max"));
}

TEST_CASE("cli: show --format dot draws kernels as clusters over their buffers and slots") {
  if (!std::getenv("KILN_BIN")) return;
  Result r = kiln("show ops/nn.toml:softmax --stage kernels --format dot --batch 4");
  CAPTURE(r.out);
  CHECK(r.code == 0);
  CHECK(well_formed_dot(r.out));
  CHECK(has(r, "subgraph cluster_0 {"));
  CHECK(has(r, "shape=invhouse"));  // the input
  CHECK(has(r, "shape=house"));     // the output
  CHECK(has(r, "shape=cylinder"));  // a temp slot
  CHECK(has(r, "temp, slot 0"));
  CHECK(has(r, " -> b1 [style=bold];"));  // a statement writes the output
  CHECK(has(r, "  b0 -> k0s"));           // and one reads the input
}

TEST_CASE("cli: show --format dot draws each loop nest as a tree of loops and statements") {
  if (!std::getenv("KILN_BIN")) return;
  Result r = kiln("show ops/nn.toml:softmax --stage schedule --format dot --batch 4");
  CAPTURE(r.out);
  CHECK(r.code == 0);
  CHECK(well_formed_dot(r.out));
  CHECK(has(r, "subgraph cluster_0 {"));
  CHECK(has(r, "kernel 0: kiln_softmax_0"));
  CHECK(has(r, "for c0 in [0, "));
  CHECK(has(r, "shape=note"));  // a statement leaf
  CHECK(has(r, "S0("));
  // Each loop names its mapping, and the mapped ones are coloured by it.
  r = kiln("show ops/nn.toml:softmax --batch 4 --runtime openmp --stage schedule --format dot");
  CAPTURE(r.out);
  CHECK(r.code == 0);
  CHECK(well_formed_dot(r.out));
  CHECK(has(r,
            "for c0 in [0, batch0)\\nparallel, band 0.0, coincident\", shape=box, "
            "style=\"rounded,filled\", fillcolor=lightsalmon"));
  CHECK(has(r, "\\nsimd, band 2.0, reduction"));
  TempDir tmp;
  r = kiln("show ops/nn.toml:softmax --batch 4 --runtime cuda --stage schedule --format dot",
           "KILN_CACHE=" + (tmp.path / "cache").string());
  CAPTURE(r.out);
  CHECK(r.code == 0);
  CHECK(well_formed_dot(r.out));
  CHECK(has(r, "\\nblock.x, band 0.0, coincident"));
  CHECK(has(r, "\\nthread.x, band 1.0, reduction"));
  CHECK(has(r, "label=\"single  // one thread of the block\""));
}

TEST_CASE("cli: show says which stages draw, and --output writes a file") {
  if (!std::getenv("KILN_BIN")) return;
  for (const char* format : {"dot", "svg", "png"}) {
    Result r = kiln("show ops/nn.toml:softmax --stage code --format " + std::string(format));
    CAPTURE(r.out);
    CHECK(r.code == 2);
    CHECK(has(r, "kiln: error: --format " + std::string(format) +
                     " draws --stage graph, simplified, kernels or schedule"));
  }
  Result r = kiln("show ops/nn.toml:softmax --stage simplified --stats --format dot");
  CHECK(r.code == 2);
  CHECK(has(r, "--stats prints text"));
  TempDir dir;
  std::filesystem::path file = dir.path / "kernels.dot";
  r = kiln("show ops/nn.toml:softmax --stage kernels --format dot -o " + file.string());
  CHECK(r.code == 0);
  CHECK(r.out.empty());
  CHECK(well_formed_dot(read_file(file)));
}

TEST_CASE("cli: show --format svg and png go through Graphviz's dot, or say it is missing") {
  if (!std::getenv("KILN_BIN")) return;
  TempDir dir, empty;
  // No dot on PATH: one line that names it, exit code 4, whatever is installed here.
  for (const char* format : {"svg", "png"}) {
    Result r = kiln("show ops/nn.toml:softmax --format " + std::string(format),
                    "PATH=" + empty.path.string());
    CAPTURE(r.out);
    CHECK(r.code == 4);
    CHECK(r.out == "kiln: error: --format " + std::string(format) +
                       " needs Graphviz's 'dot' on PATH (Debian: apt install graphviz)\n");
  }
  if (std::system("command -v dot > /dev/null 2>&1") != 0) {
    MESSAGE("Graphviz's dot is not installed: the svg and png pictures are not checked");
    return;
  }
  std::filesystem::path svg = dir.path / "schedule.svg", png = dir.path / "kernels.png";
  Result r = kiln("show ops/nn.toml:softmax --stage schedule --format svg -o " + svg.string());
  CAPTURE(r.out);
  CHECK(r.code == 0);
  CHECK(read_file(svg).find("<svg") != std::string::npos);
  r = kiln("show ops/nn.toml:softmax --stage kernels --format png -o " + png.string());
  CHECK(r.code == 0);
  CHECK(read_file(png).rfind("\x89PNG", 0) == 0);
  r = kiln("show ops/tensor.toml:transpose --format svg");  // to stdout
  CHECK(r.code == 0);
  CHECK(has(r, "<svg"));
  CHECK(has(r, "transpose"));
}

TEST_CASE("cli: run --trace writes a Chrome trace of the stages, compile, load and each kernel") {
  if (!std::getenv("KILN_BIN")) return;
  TempDir dir;
  std::filesystem::path file = dir.path / "trace.json";
  Result r = kiln("run ops/nn.toml:softmax --runtime cc --batch 3 --trace " + file.string(),
                  "KILN_CACHE=" + (dir.path / "cache").string());
  CAPTURE(r.out);
  REQUIRE(r.code == 0);
  std::vector<Event> events = read_trace(file);
  for (const char* name :
       {"load spec", "lower", "interpret", "build", "simplified", "kernels", "buffers", "schedule",
        "render", "compile", "load", "run (warm-up)", "run", "kiln_softmax_0"})
    CHECK_MESSAGE(find_event(events, name), "no event '" << name << "'");
  const Event* run = find_event(events, "run");
  const Event* build = find_event(events, "build");
  REQUIRE(run);
  REQUIRE(build);
  CHECK(build->ts + build->dur <= run->ts);
  // Two runs (the warm-up and the timed one), each with every kernel inside it.
  size_t kernels = count_category(events, "kernel");
  CHECK(kernels >= 2);
  CHECK(kernels % 2 == 0);
  for (const Event& e : events)
    if (e.category == "kernel" && e.ts >= run->ts)
      CHECK(e.ts + e.dur <= run->ts + run->dur + 1);  // the events' rounding: 1 ns each
  // A second run hits the cache: no schedule or render, and compile says so.
  r = kiln("run ops/nn.toml:softmax --runtime cc --batch 3 --trace " + file.string(),
           "KILN_CACHE=" + (dir.path / "cache").string());
  REQUIRE(r.code == 0);
  events = read_trace(file);
  CHECK(find_event(events, "compile"));
  CHECK(!find_event(events, "schedule"));
  CHECK(has(Result{0, read_file(file)}, "\"cache\": \"hit\""));
  // The interpreter alone: the front end and the interpreter.
  r = kiln("run ops/nn.toml:softmax --trace " + file.string());
  REQUIRE(r.code == 0);
  events = read_trace(file);
  CHECK(find_event(events, "interpret"));
  CHECK(!find_event(events, "build"));
}

TEST_CASE("cli: bench --trace writes every timed run and its kernels") {
  if (!std::getenv("KILN_BIN")) return;
  TempDir dir;
  std::filesystem::path file = dir.path / "bench.json";
  Result r = kiln(
      "bench tests/data/cli.toml:scale --runtime cc --test N=64 --repeat 3 --warmup 1 "
      "--trace " +
          file.string(),
      "KILN_CACHE=" + (dir.path / "cache").string());
  CAPTURE(r.out);
  REQUIRE(r.code == 0);
  std::vector<Event> events = read_trace(file);
  for (const char* name : {"build", "compile", "load", "warm-up 0", "run 0", "run 2"})
    CHECK_MESSAGE(find_event(events, name), "no event '" << name << "'");
  CHECK(!find_event(events, "run 3"));
  CHECK(count_category(events, "kernel") == 4);  // one kernel, in 1 warm-up and 3 runs
}
