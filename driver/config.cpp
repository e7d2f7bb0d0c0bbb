// The knob table and its use: parsing --config items into CompileOptions, merging a runtime
// descriptor's [config] defaults, the knobs' part of the program identity, and the listing.
#include "driver/config.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <sstream>

#include "ir/suggest.h"
#include "runtimes/runtime.h"

namespace kiln {

namespace {

[[noreturn]] void bad_value(const char* name, const std::string& expects,
                            const std::string& value) {
  throw ConfigError(std::string("--config ") + name + " expects " + expects + ", got '" + value +
                    "'");
}

/** A whole non-negative integer of type T (no sign, no trailing text). */
template <class T>
bool parse_count(const std::string& text, T& out) {
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0]))) return false;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && p == text.data() + text.size();
}

/** A 0-or-1 knob; `field(opt)` is the bool it sets. */
template <class Field>
Knob flag_knob(const char* name, KnobStage stage, const char* help, const char* def, Field field) {
  return {name,
          stage,
          help,
          def,
          true,
          [name, field](const std::string& v, CompileOptions& o) {
            if (v != "0" && v != "1") bad_value(name, "0 or 1", v);
            field(o) = v == "1";
          },
          [field](const CompileOptions& o) { return std::string(field(o) ? "1" : "0"); }};
}

/** A count knob (0: no limit); `field(opt)` is the unsigned long it sets. */
template <class Field>
Knob count_knob(const char* name, KnobStage stage, const char* help, const char* def,
                const char* expects, Field field) {
  return {name,
          stage,
          help,
          def,
          true,
          [name, expects, field](const std::string& v, CompileOptions& o) {
            if (!parse_count(v, field(o))) bad_value(name, expects, v);
          },
          [field](const CompileOptions& o) { return std::to_string(field(o)); }};
}

/** The counts of "AxBxC", up to the first part that is not one. */
std::vector<int64_t> counts_of(const std::string& value) {
  std::vector<int64_t> n;
  std::stringstream in(value);
  std::string part;
  while (std::getline(in, part, 'x')) {
    int64_t v = 0;
    if (!parse_count(part, v)) break;
    n.push_back(v);
  }
  return n;
}

void parse_tile(const std::string& value, CompileOptions& o) {
  std::vector<int64_t> sizes = counts_of(value);
  if (sizes.empty() || value.back() == 'x' ||
      std::count(value.begin(), value.end(), 'x') + 1 != static_cast<long>(sizes.size()))
    bad_value("TILE", "sizes such as 32 or 64x64x8 (0: no tiling)", value);
  o.schedule.tile = !(sizes.size() == 1 && sizes[0] == 0);
  if (sizes.size() == 1) sizes.assign(3, sizes[0]);
  o.schedule.tile_sizes = sizes;
}

std::string show_tile(const CompileOptions& o) {
  if (!o.schedule.tile) return "0";
  std::string s;
  for (int64_t t : o.schedule.tile_sizes)
    s += (s.empty() ? "" : "x") + std::to_string(t);
  return s;
}

void parse_micro(const std::string& value, CompileOptions& o) {
  std::vector<int64_t> n = counts_of(value);
  o.schedule.micro_auto = value == "auto";
  if (o.schedule.micro_auto) {
    o.schedule.micro = RegisterTileShape();
    return;
  }
  bool off = value == "0";
  size_t parts = static_cast<size_t>(std::count(value.begin(), value.end(), 'x')) + 1;
  bool ok = off || ((parts == 3 || parts == 4) && n.size() == parts && value.back() != 'x' &&
                    n[0] > 0 && n[0] <= 16 && n[1] > 0 && n[1] <= 8 && n[2] > 0 &&
                    n[2] <= 1 << 20 && (parts == 3 || n[3] == 16 || n[3] == 32 || n[3] == 64));
  if (!ok)
    bad_value("MICRO",
              "auto, or RxVxD or RxVxDxB: R rows (at most 16) of V vectors (at most 8) of B "
              "bytes (16, 32 or 64; default 32), k blocks of D; or 0",
              value);
  o.schedule.micro.rows = off ? 0 : static_cast<int>(n[0]);
  if (off) return;
  o.schedule.micro.vectors = static_cast<int>(n[1]);
  o.schedule.micro.depth = static_cast<int>(n[2]);
  o.schedule.micro.vector_bytes = parts == 4 ? static_cast<int>(n[3]) : 32;
}

std::string show_micro(const CompileOptions& o) {
  const RegisterTileShape& m = o.schedule.micro;
  if (o.schedule.micro_auto) return "auto";
  if (m.rows <= 0) return "0";
  return std::to_string(m.rows) + "x" + std::to_string(m.vectors) + "x" + std::to_string(m.depth) +
         "x" + std::to_string(m.vector_bytes);
}

void parse_gpu_tile(const std::string& value, CompileOptions& o) {
  std::vector<int64_t> n = counts_of(value);
  bool off = value == "0";
  bool ok = off || (n.size() == 5 && value.back() != 'x' &&
                    std::count(value.begin(), value.end(), 'x') == 4);
  for (size_t k = 0; ok && !off && k < 5; ++k)
    ok = n[k] > 0 && n[k] <= 256;
  // Rows and lanes split evenly over the block's threads, each share in groups of four.
  ok = ok && (off || (n[0] % n[2] == 0 && n[1] % n[3] == 0 && n[2] % 4 == 0 && n[3] % 4 == 0 &&
                      (n[0] / n[2]) * (n[1] / n[3]) == 256));
  if (!ok)
    bad_value("GPU_TILE",
              "RxLxrxlxD: blocks of R rows and L lanes, r x l per thread (multiples of 4, "
              "R/r x L/l = 256 threads), reduction blocks of D; or 0",
              value);
  o.schedule.gpu_tile.rows = off ? 0 : static_cast<int>(n[0]);
  if (off) return;
  o.schedule.gpu_tile.lanes = static_cast<int>(n[1]);
  o.schedule.gpu_tile.thread_rows = static_cast<int>(n[2]);
  o.schedule.gpu_tile.thread_lanes = static_cast<int>(n[3]);
  o.schedule.gpu_tile.depth = static_cast<int>(n[4]);
}

std::string show_gpu_tile(const CompileOptions& o) {
  const GpuTileShape& g = o.schedule.gpu_tile;
  if (g.rows <= 0) return "0";
  return std::to_string(g.rows) + "x" + std::to_string(g.lanes) + "x" +
         std::to_string(g.thread_rows) + "x" + std::to_string(g.thread_lanes) + "x" +
         std::to_string(g.depth);
}

void parse_gpu_mma(const std::string& value, CompileOptions& o) {
  std::vector<int64_t> n = counts_of(value);
  bool off = value == "0";
  bool ok = off || (n.size() == 4 && value.back() != 'x' &&
                    std::count(value.begin(), value.end(), 'x') == 3);
  // Warp tiles of whole m16n8k16 instructions (n in pairs: ldmatrix loads two n tiles at once).
  ok = ok && (off || (n[0] > 0 && n[0] <= 128 && n[0] % 16 == 0 && n[1] > 0 && n[1] <= 128 &&
                      n[1] % 16 == 0 && n[2] > 0 && n[2] <= 128 && n[2] % 16 == 0 && n[3] >= 1 &&
                      n[3] <= 8));
  if (!ok)
    bad_value("GPU_MMA",
              "WRxWLxDxS: warps of WR rows and WL lanes (multiples of 16, at most 128), reduction "
              "blocks of D (a multiple of 16), S pipeline stages (1 to 8); or 0",
              value);
  o.schedule.gpu_tile.mma = !off;
  if (off) return;
  o.schedule.gpu_tile.mma_warp_rows = static_cast<int>(n[0]);
  o.schedule.gpu_tile.mma_warp_lanes = static_cast<int>(n[1]);
  o.schedule.gpu_tile.mma_depth = static_cast<int>(n[2]);
  o.schedule.gpu_tile.mma_stages = static_cast<int>(n[3]);
}

std::string show_gpu_mma(const CompileOptions& o) {
  const GpuTileShape& g = o.schedule.gpu_tile;
  if (!g.mma) return "0";
  return std::to_string(g.mma_warp_rows) + "x" + std::to_string(g.mma_warp_lanes) + "x" +
         std::to_string(g.mma_depth) + "x" + std::to_string(g.mma_stages);
}

void parse_gpu_wgmma(const std::string& value, CompileOptions& o) {
  GpuTileShape& g = o.schedule.gpu_tile;
  if (value == "0") {
    g.wgmma_rows = 0;
    g.wgmma_variants.clear();
    return;
  }
  std::vector<WgmmaShape> shapes;
  std::stringstream items(value);
  bool ok = !value.empty() && value.back() != ',';
  for (std::string item; ok && std::getline(items, item, ',');) {
    std::vector<int64_t> n = counts_of(item);
    ok = n.size() == 3 && !item.empty() && item.back() != 'x' &&
         std::count(item.begin(), item.end(), 'x') == 2;
    // Two warpgroups of R / 2 rows (whole m64 instructions) by L lanes (an instruction's n, in
    // blocks of 64 for operands held along their lanes), at least three stages.
    ok = ok && (n[0] == 128 || n[0] == 256) && (n[1] == 64 || n[1] == 128 || n[1] == 256) &&
         n[0] * n[1] <= 128 * 256 && n[2] >= 3 && n[2] <= 8;
    if (ok) {
      WgmmaShape w{static_cast<int>(n[0]), static_cast<int>(n[1]), static_cast<int>(n[2])};
      ok = std::find(shapes.begin(), shapes.end(), w) == shapes.end();
      shapes.push_back(w);
    }
  }
  if (!ok)
    bad_value("GPU_WGMMA",
              "RxLxS[,RxLxS...]: block tiles of R rows (128 or 256) and L lanes (64, 128 or 256; "
              "R x L at most 128 x 256), S pipeline stages (3 to 8), each shape once; the first "
              "the kernel's, the others compiled beside it and chosen at each launch by the "
              "sizes; or 0",
              value);
  g.wgmma_rows = shapes[0].rows;
  g.wgmma_lanes = shapes[0].lanes;
  g.wgmma_stages = shapes[0].stages;
  g.wgmma_variants.assign(shapes.begin() + 1, shapes.end());
}

std::string show_gpu_wgmma(const CompileOptions& o) {
  const GpuTileShape& g = o.schedule.gpu_tile;
  if (g.wgmma_rows <= 0) return "0";
  std::string text = wgmma_text(g.wgmma_shape());
  for (const WgmmaShape& v : g.wgmma_variants)
    text += "," + wgmma_text(v);
  return text;
}

std::vector<Knob> make_knobs() {
  std::vector<Knob> k = {
      {"BLAS", KnobStage::simplifier,
       "the BLAS library 2-D matrix products call: openblas, or none (they stay loops); "
       "docs/rules.md",
       "none", true,
       [](const std::string& v, CompileOptions& o) {
         if (v != "openblas" && v != "none") bad_value("BLAS", "openblas or none", v);
         o.simplify.blas = v == "none" ? "" : v;
       },
       [](const CompileOptions& o) { return o.simplify.blas.empty() ? "none" : o.simplify.blas; }},
      flag_knob(
          "CHECK", KnobStage::codegen,
          "1: every buffer access in generated code checks its index, and a failure names "
          "the buffer and the element",
          "0", [](auto& o) -> auto& { return o.checked; }),
      flag_knob(
          "FASTMATH", KnobStage::simplifier,
          "1: the rewrite rules marked fastmath apply too (exact only up to rounding, NaN "
          "and infinities); docs/rules.md",
          "0", [](auto& o) -> auto& { return o.simplify.fastmath; }),
      {"GPU_ATTN", KnobStage::scheduler,
       "GPU: the lanes of the output (v's head) a block of the fused attention kernel computes: "
       "auto (128 for a head of 65 to 128, else 64: where the head is known only at run time "
       "the kernel is compiled again for heads up to 64 and for 65 to 128, each launch taking "
       "the one its head falls in), 64 or 128 (a row tile's scores once per 128 lanes; one block "
       "an SM on mma.sync, two on "
       "wgmma); "
       "docs/decisions.md",
       "auto", true,
       [](const std::string& v, CompileOptions& o) {
         if (v != "auto" && v != "64" && v != "128") bad_value("GPU_ATTN", "auto, 64 or 128", v);
         o.schedule.attention_lanes = v == "auto" ? 0 : std::stoi(v);
       },
       [](const CompileOptions& o) {
         return o.schedule.attention_lanes ? std::to_string(o.schedule.attention_lanes)
                                           : std::string("auto");
       }},
      {"GPU_MMA", KnobStage::scheduler,
       "GPU: block tiles of products of two f16 or bf16 operands run on tensor cores (mma.sync "
       "m16n8k16) in warps of WR rows x WL lanes, reduction blocks of D, S shared-memory stages "
       "(WRxWLxDxS; the block tile GPU_TILE must hold 8 warps); 0: off; docs/decisions.md",
       "64x32x32x3", true, parse_gpu_mma, show_gpu_mma},
      {"GPU_TILE", KnobStage::scheduler,
       "GPU block tile of contractions: R rows x L lanes per block, r x l per thread, "
       "reduction blocks of D (RxLxrxlxD); 0: off; docs/performance.md",
       "128x128x8x8x8", true, parse_gpu_tile, show_gpu_tile},
      flag_knob(
          "GPU_TMA", KnobStage::scheduler,
          "GPU with warpgroup instructions (sm_90a): 1: the stages of warpgroup tiles and of "
          "the fused attention kernel's keys and values filled by the TMA, one thread "
          "issuing, mbarriers per stage (where a launch's tensor maps encode; else "
          "cp.async); 0: cp.async copies by every thread; docs/decisions.md",
          "1", [](auto& o) -> auto& { return o.schedule.gpu_tma; }),
      {"GPU_WGMMA", KnobStage::scheduler,
       "GPU with warpgroup instructions (sm_90a): block tiles of products of two f16 or bf16 "
       "operands, each contiguous in memory along k or along its rows or lanes, run as wgmma "
       "from swizzled shared memory in tiles of R rows x L lanes (two warpgroups), S pipeline "
       "stages (RxLxS), and the fused attention kernel's two products as wgmma; more shapes "
       "after commas are compiled beside the first, each launch taking the one its sizes make "
       "fastest (docs/performance.md); 0: off (GPU_MMA's mma.sync, in attention too); "
       "docs/decisions.md",
       "128x256x4,128x128x4,128x128x3,128x64x4,128x64x8", true, parse_gpu_wgmma, show_gpu_wgmma},
      count_knob(
          "ISL_MS", KnobStage::scheduler,
          "the milliseconds isl may spend on one kernel's schedule before the kernel "
          "falls back to program order (0: no limit); docs/decisions.md",
          "5000", "a count of isl milliseconds (0: no limit)",
          [](auto& o) -> auto& { return o.schedule.max_milliseconds; }),
      count_knob(
          "ISL_OPS", KnobStage::scheduler,
          "the isl operations one kernel's schedule may take before the kernel falls back "
          "to program order (0: no limit); docs/decisions.md",
          "1000000", "a count of isl operations (0: no limit)",
          [](auto& o) -> auto& { return o.schedule.max_operations; }),
      {"BF16DOT", KnobStage::scheduler,
       "CPU: contractions of two bf16 values summing in f32 run on vectors of B bytes with dot "
       "products of bf16 pairs (vdpbf16ps; without AVX512-BF16 the pairs widened to f32 in "
       "plain vector code) where the matrix unit does not take them: auto (the CPU's full "
       "width with AVX512-BF16, else 0), 64 or 1, 32, 0: off (bf16 widened to f32 in the "
       "packs of the f32 register tile); docs/decisions.md",
       "auto", true,
       [](const std::string& v, CompileOptions& o) {
         if (v != "auto" && v != "0" && v != "1" && v != "32" && v != "64")
           bad_value("BF16DOT", "auto, 0, 1, 32 or 64", v);
         o.schedule.bf16_dot_auto = v == "auto";
         o.schedule.bf16_dot_bytes = v == "32" ? 32 : v == "1" || v == "64" ? 64 : 0;
       },
       [](const CompileOptions& o) {
         return o.schedule.bf16_dot_auto ? std::string("auto")
                                         : std::to_string(o.schedule.bf16_dot_bytes);
       }},
      {"MATRIX", KnobStage::scheduler,
       "CPU: contractions of two bf16 operands, or of two 8-bit integers summing in i32, run on "
       "the matrix unit (AMX tiles): auto (where the CPU has AMX-BF16 or AMX-INT8 and the OS "
       "grants its tiles), 1 (always: code for such CPUs), 0; docs/decisions.md",
       "auto", true,
       [](const std::string& v, CompileOptions& o) {
         if (v != "auto" && v != "0" && v != "1") bad_value("MATRIX", "auto, 0 or 1", v);
         o.schedule.amx_auto = v == "auto";
         o.schedule.amx_bf16 = o.schedule.amx_int8 = v == "1";
       },
       [](const CompileOptions& o) {
         return o.schedule.amx_auto ? "auto" : o.schedule.amx_bf16 ? "1" : "0";
       }},
      {"MICRO", KnobStage::scheduler,
       "CPU register tile of contractions: R rows of V vectors of B bytes over k blocks of D "
       "(6x2x256x64: 6x32 f32 over 256 k), 0: off, auto: 3x8x256x32 for one-loop reductions "
       "(matmul; 6x4x256x64 on CPUs with full-width AVX-512), 6x2x256x64 where a reduction runs "
       "over several loops (conv; 8x2x256x64 with full-width AVX-512); docs/performance.md",
       "auto", true, parse_micro, show_micro},
      flag_knob(
          "PACK_ROWS", KnobStage::scheduler,
          "CPU: register tiles whose row operands are f16 or bf16 or not contiguous along "
          "k (a[k, i] of aT * b) read them from a pack of each row tile's rows per k "
          "block; 0: in place; docs/decisions.md",
          "1", [](auto& o) -> auto& { return o.schedule.pack_rows; }),
      flag_knob(
          "PARALLEL", KnobStage::scheduler,
          "1: the outermost coincident loops run across threads, on backends with threads (openmp)",
          "1", [](auto& o) -> auto& { return o.schedule.parallel; }),
      flag_knob(
          "PREFETCH", KnobStage::scheduler,
          "CPU: the middle passes of a row-wise kernel (softmax's exponentials) prefetch "
          "the next row's cache lines, and register tiles of few rows that read b where it "
          "lies (a decode step) its lines 16 k rows ahead; 0: off; docs/decisions.md",
          "1", [](auto& o) -> auto& { return o.schedule.prefetch_rows; }),
      {"SIMD", KnobStage::scheduler,
       "CPU: the bytes a vector of the float loops mapped to vector lanes (openmp): auto (the "
       "CPU's full width: 64 where AVX-512 runs at full width, else 32), 32 (the C compiler's "
       "choice) or 64; docs/decisions.md",
       "auto", true,
       [](const std::string& v, CompileOptions& o) {
         if (v != "auto" && v != "32" && v != "64") bad_value("SIMD", "auto, 32 or 64", v);
         o.schedule.simd_auto = v == "auto";
         if (v != "auto") o.schedule.simd_bytes = std::stoi(v);
       },
       [](const CompileOptions& o) {
         return o.schedule.simd_auto ? std::string("auto") : std::to_string(o.schedule.simd_bytes);
       }},
      flag_knob(
          "SIMPLIFY", KnobStage::simplifier, "0: the rewrite rules are not applied", "1",
          [](auto& o) -> auto& { return o.simplify.enabled; }),
      count_knob(
          "STREAM", KnobStage::scheduler,
          "CPU: an output a kernel writes once, in vectors, bypasses the caches "
          "(non-temporal stores) from this many bytes on; 0: never; docs/decisions.md",
          "16777216", "a byte count (0: never)",
          [](auto& o) -> auto& { return o.schedule.stream_bytes; }),
      {"THREADS", KnobStage::runtime,
       "the threads a parallel runtime (openmp) runs kernels on; 0: every core", "0", false,
       [](const std::string& v, CompileOptions& o) {
         if (!parse_count(v, o.threads)) bad_value("THREADS", "a thread count (0: every core)", v);
       },
       [](const CompileOptions& o) { return std::to_string(o.threads); }},
      {"TILE", KnobStage::scheduler,
       "tile sizes of permutable loop bands: N for every dimension, or AxBxC; 0: no tiling", "32",
       true, parse_tile, show_tile},
      {"TUNED", KnobStage::scheduler,
       "1: the knobs `kiln tune` chose for this composite, runtime and sizes apply where "
       "--config does not pin them; 0: the tuning database is not consulted; docs/tuning.md",
       "1", false,
       [](const std::string& v, CompileOptions& o) {
         if (v != "0" && v != "1") bad_value("TUNED", "0 or 1", v);
         o.tuned = v == "1";
       },
       [](const CompileOptions& o) { return std::string(o.tuned ? "1" : "0"); }},
      flag_knob(
          "VECTORIZE", KnobStage::scheduler,
          "1: innermost unit-stride loops run across vector lanes, on backends with SIMD (openmp)",
          "1", [](auto& o) -> auto& { return o.schedule.vectorize; }),
      {"VNNI", KnobStage::scheduler,
       "CPU: contractions of two 8-bit integers summing in i32 run on vectors of B bytes with "
       "dot products of bytes (vpdpbusd; without VNNI the bytes widened for two vpmaddwd) "
       "where the matrix unit does not take them: auto (64 with AVX512-VNNI, 32 with AVX-VNNI, "
       "else 64 with AVX512BW, 32 with AVX2), 64 or 1, 32, 0: off (scalar loops); "
       "docs/decisions.md",
       "auto", true,
       [](const std::string& v, CompileOptions& o) {
         if (v != "auto" && v != "0" && v != "1" && v != "32" && v != "64")
           bad_value("VNNI", "auto, 0, 1, 32 or 64", v);
         o.schedule.dot_auto = v == "auto";
         o.schedule.dot_bytes = v == "32" ? 32 : v == "1" || v == "64" ? 64 : 0;
       },
       [](const CompileOptions& o) {
         return o.schedule.dot_auto ? std::string("auto") : std::to_string(o.schedule.dot_bytes);
       }},
  };
  std::sort(k.begin(), k.end(),
            [](const Knob& a, const Knob& b) { return std::string(a.name) < b.name; });
  return k;
}

std::string upper(std::string s) {
  for (char& c : s)
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

const char* knob_stage_name(KnobStage s) {
  switch (s) {
    case KnobStage::simplifier:
      return "simplifier";
    case KnobStage::scheduler:
      return "scheduler";
    case KnobStage::codegen:
      return "codegen";
    case KnobStage::runtime:
      return "runtime";
  }
  return "?";
}

const std::vector<Knob>& knobs() {
  static const std::vector<Knob> table = make_knobs();
  return table;
}

const Knob* find_knob(const std::string& name) {
  std::string key = upper(name);
  for (const Knob& k : knobs())
    if (key == k.name) return &k;
  return nullptr;
}

std::string unknown_knob_message(const std::string& key, const std::string& where) {
  std::string known;
  std::vector<std::string> names;
  for (const Knob& k : knobs()) {
    known += (known.empty() ? "" : ", ") + std::string(k.name);
    names.emplace_back(k.name);
  }
  return "unknown " + where + " key '" + key + "'" + did_you_mean(upper(key), names) +
         "; known keys: " + known;
}

void apply_config(CompileOptions& opt) {
  std::map<std::string, std::string> named;
  for (const auto& [key, value] : opt.config) {
    const Knob* k = find_knob(key);
    if (!k) throw ConfigError(unknown_knob_message(key, "--config"));
    k->parse(value, opt);
    named[k->name] = value;
  }
  opt.config = std::move(named);
}

CompileOptions config_options(const std::map<std::string, std::string>& config,
                              const RuntimeDescriptor* descriptor) {
  CompileOptions opt;
  if (descriptor) {
    for (const auto& [key, value] : descriptor->config) {
      const Knob* k = find_knob(key);
      if (!k) throw ConfigError(descriptor->path + ": " + unknown_knob_message(key, "[config]"));
      try {
        CompileOptions scratch;
        k->parse(value, scratch);
      } catch (const ConfigError& e) {
        throw ConfigError(descriptor->path + ": [config] " + key + ": " + e.what());
      }
      opt.config[k->name] = value;
    }
  }
  for (const auto& [key, value] : config) {
    const Knob* k = find_knob(key);
    if (!k) throw ConfigError(unknown_knob_message(key, "--config"));
    opt.config[k->name] = value;
  }
  apply_config(opt);
  return opt;
}

std::string config_identity(const CompileOptions& opt) {
  std::string id;
  for (const Knob& k : knobs())
    if (k.in_cache_key) id += std::string(k.name) + "=" + k.show(opt) + "\n";
  return id;
}

std::string knobs_table() {
  std::string t =
      "| knob | default | stage | in the cache key | meaning |\n"
      "| --- | --- | --- | --- | --- |\n";
  for (const Knob& k : knobs())
    t += "| `" + std::string(k.name) + "` | `" + k.default_value + "` | " +
         knob_stage_name(k.stage) + " | " + (k.in_cache_key ? "yes" : "no") + " | " + k.help +
         " |\n";
  return t;
}

std::string knobs_help() {
  std::string t = "--config knobs (KEY=VALUE; default, stage, meaning):\n";
  for (const Knob& k : knobs()) {
    std::string head = "  " + std::string(k.name) + "=" + k.default_value;
    head.resize(std::max<size_t>(head.size() + 1, 20), ' ');
    std::string stage = knob_stage_name(k.stage);
    stage.resize(12, ' ');
    t += head + stage + k.help + (k.in_cache_key ? "" : " (not in the cache key)") + "\n";
  }
  return t;
}

}  // namespace kiln
