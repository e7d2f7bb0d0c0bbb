// The registry of --config knobs (driver/config.h): every default parses to CompileOptions{}'s
// value, bad values and unknown keys are errors naming the knob or the known keys, keys match
// without case, descriptors' [config] tables go through the same registry, only knobs marked
// for the cache key reach the program identity, and README lists the table verbatim.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

#include "driver/config.h"
#include "driver/host_cpu.h"
#include "ir/suggest.h"
#include "runtimes/runtime.h"

using namespace kiln;

namespace {

std::string error_of(const std::map<std::string, std::string>& config,
                     const RuntimeDescriptor* d = nullptr) {
  try {
    config_options(config, d);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

const char* kKnown =
    "known keys: BF16DOT, BLAS, CHECK, FASTMATH, GPU_ATTN, GPU_MMA, GPU_TILE, GPU_TMA, GPU_WGMMA, "
    "ISL_MS, "
    "ISL_OPS, "
    "MATRIX, "
    "MICRO, "
    "PACK_ROWS, PARALLEL, PREFETCH, "
    "SIMD, "
    "SIMPLIFY, "
    "STREAM, "
    "THREADS, TILE, TUNED, "
    "VECTORIZE, VNNI";

}  // namespace

TEST_CASE("config: every knob parses its default to the default options") {
  REQUIRE(knobs().size() == 24);
  const CompileOptions defaults;
  CompileOptions all;
  for (const Knob& k : knobs()) {
    CAPTURE(std::string(k.name));
    CHECK(std::string(k.name) == std::string(find_knob(k.name)->name));
    CHECK(std::string(k.help).find('|') == std::string::npos);
    CompileOptions o;
    k.parse(k.default_value, o);
    CHECK(k.show(o) == k.show(defaults));
    all.config[k.name] = k.default_value;
  }
  apply_config(all);
  CHECK(config_identity(all) == config_identity(defaults));
  CHECK(all.threads == defaults.threads);
  CHECK(all.schedule.tile_sizes == defaults.schedule.tile_sizes);
}

TEST_CASE("config: values reach the typed options") {
  CompileOptions o = config_options({{"TILE", "64x16"},
                                     {"PARALLEL", "0"},
                                     {"THREADS", "4"},
                                     {"BLAS", "openblas"},
                                     {"ISL_OPS", "7"},
                                     {"CHECK", "1"},
                                     {"FASTMATH", "1"},
                                     {"SIMPLIFY", "0"}},
                                    nullptr);
  CHECK(o.schedule.tile);
  CHECK(o.schedule.tile_sizes == std::vector<int64_t>{64, 16});
  CHECK_FALSE(o.schedule.parallel);
  CHECK(o.schedule.vectorize);
  CHECK(o.threads == 4);
  CHECK(o.simplify.blas == "openblas");
  CHECK(o.schedule.max_operations == 7);
  CHECK(o.checked);
  CHECK(o.simplify.fastmath);
  CHECK_FALSE(o.simplify.enabled);
  CHECK_FALSE(config_options({{"TILE", "0"}}, nullptr).schedule.tile);
  // VNNI: auto follows the host; 1 or 64 forces AVX512-VNNI code, 32 AVX-VNNI's, 0 none.
  CHECK(config_options({}, nullptr).schedule.dot_auto);
  for (const auto& [value, bytes] :
       std::vector<std::pair<std::string, int>>{{"0", 0}, {"1", 64}, {"64", 64}, {"32", 32}}) {
    CompileOptions v = config_options({{"VNNI", value}}, nullptr);
    CHECK_FALSE(v.schedule.dot_auto);
    CHECK(v.schedule.dot_bytes == bytes);
  }
  CHECK_THROWS_AS(config_options({{"VNNI", "16"}}, nullptr), ConfigError);
  // BF16DOT likewise for bf16 pairs (vdpbf16ps).
  CHECK(config_options({}, nullptr).schedule.bf16_dot_auto);
  for (const auto& [value, bytes] :
       std::vector<std::pair<std::string, int>>{{"0", 0}, {"1", 64}, {"64", 64}, {"32", 32}}) {
    CompileOptions v = config_options({{"BF16DOT", value}}, nullptr);
    CHECK_FALSE(v.schedule.bf16_dot_auto);
    CHECK(v.schedule.bf16_dot_bytes == bytes);
  }
  CHECK_THROWS_AS(config_options({{"BF16DOT", "yes"}}, nullptr), ConfigError);
  // MICRO: auto (the default) lets the program choose; RxVxD keeps 32-byte vectors, RxVxDxB
  // names them.
  CHECK(config_options({}, nullptr).schedule.micro_auto);
  RegisterTileShape m = config_options({{"MICRO", "6x2x128x64"}}, nullptr).schedule.micro;
  CHECK((m.rows == 6 && m.vectors == 2 && m.depth == 128 && m.vector_bytes == 64));
  CHECK_FALSE(config_options({{"MICRO", "6x2x128x64"}}, nullptr).schedule.micro_auto);
  CHECK(config_options({{"MICRO", "4x6x256"}}, nullptr).schedule.micro.vector_bytes == 32);
  CHECK(config_options({{"MICRO", "0"}}, nullptr).schedule.micro.rows == 0);
  // GPU_TILE: RxLxrxlxD, R/r × L/l = 256 threads; 0 turns it off.
  GpuTileShape g = config_options({{"GPU_TILE", "64x64x4x4x16"}}, nullptr).schedule.gpu_tile;
  CHECK(g.rows == 64);
  CHECK(g.thread_lanes == 4);
  CHECK(g.depth == 16);
  CHECK(config_options({{"GPU_TILE", "0"}}, nullptr).schedule.gpu_tile.rows == 0);
  // GPU_MMA: WRxWLxDxS; 0 keeps contractions off the tensor cores.
  g = config_options({{"GPU_MMA", "64x64x64x4"}}, nullptr).schedule.gpu_tile;
  CHECK(g.mma);
  CHECK(g.mma_warp_lanes == 64);
  CHECK(g.mma_depth == 64);
  CHECK(g.mma_stages == 4);
  CHECK_FALSE(config_options({{"GPU_MMA", "0"}}, nullptr).schedule.gpu_tile.mma);
  // GPU_ATTN: the fused attention's lanes a block, auto (0: from the head) or 64 or 128.
  CHECK(config_options({{"GPU_ATTN", "128"}}, nullptr).schedule.attention_lanes == 128);
  CHECK(config_options({{"GPU_ATTN", "auto"}}, nullptr).schedule.attention_lanes == 0);
  CHECK_THROWS(config_options({{"GPU_ATTN", "96"}}, nullptr));
  // GPU_WGMMA: RxLxS for targets with warpgroup instructions; 0 leaves them to mma.sync.
  g = config_options({{"GPU_WGMMA", "256x128x5"}}, nullptr).schedule.gpu_tile;
  CHECK(g.wgmma_rows == 256);
  CHECK(g.wgmma_lanes == 128);
  CHECK(g.wgmma_stages == 5);
  CHECK_FALSE(g.wgmma);  // whether the target has them is the runtime's (driver/instantiate.cpp)
  CHECK(g.wgmma_variants.empty());  // one shape: the kernel is compiled at it alone
  CHECK(config_options({{"GPU_WGMMA", "0"}}, nullptr).schedule.gpu_tile.wgmma_rows == 0);
  // More shapes after commas: compiled beside the first, chosen at launch.
  g = config_options({{"GPU_WGMMA", "128x256x4,128x64x3"}}, nullptr).schedule.gpu_tile;
  CHECK(g.wgmma_lanes == 256);
  REQUIRE(g.wgmma_variants.size() == 1);
  CHECK(g.wgmma_variants[0] == WgmmaShape{128, 64, 3});
  CompileOptions shown;
  shown.schedule.gpu_tile = g;
  CHECK(find_knob("GPU_WGMMA")->show(shown) == "128x256x4,128x64x3");
  CHECK(find_knob("GPU_WGMMA")->show(CompileOptions{}) ==
        "128x256x4,128x128x4,128x128x3,128x64x4,128x64x8");
  for (const char* bad :
       {"128x256x4,", "128x256x4,128x256x4", "128x256x4,,128x64x4", "128x256x4,64x64x4"})
    CHECK(error_of({{"GPU_WGMMA", bad}}).find("--config GPU_WGMMA expects") == 0);
  CHECK(config_options({{"TILE", "8"}}, nullptr).schedule.tile_sizes ==
        std::vector<int64_t>{8, 8, 8});
}

TEST_CASE("config: a bad value is an error naming the knob") {
  for (const Knob& k : knobs()) {
    CAPTURE(std::string(k.name));
    std::string msg = error_of({{k.name, "bogus"}});
    CHECK(msg.find(std::string("--config ") + k.name + " expects ") == 0);
    CHECK(msg.find("got 'bogus'") != std::string::npos);
  }
  CHECK(error_of({{"TILE", "32abc"}}) ==
        "--config TILE expects sizes such as 32 or 64x64x8 (0: no tiling), got '32abc'");
  CHECK(error_of({{"TILE", "32x"}}) != "");
  CHECK(error_of({{"TILE", "-4"}}) != "");
  CHECK(error_of({{"THREADS", "-1"}}) ==
        "--config THREADS expects a thread count (0: every core), got '-1'");
  CHECK(error_of({{"THREADS", "99999999999"}}) != "");
  CHECK(error_of({{"ISL_MS", "+5"}}) != "");
  CHECK(error_of({{"PARALLEL", "2"}}) == "--config PARALLEL expects 0 or 1, got '2'");
  CHECK(error_of({{"BLAS", "mkl"}}) == "--config BLAS expects openblas or none, got 'mkl'");
  CHECK(error_of({{"MICRO", "6x2x256x48"}}).find("got '6x2x256x48'") != std::string::npos);
  CHECK(error_of({{"MICRO", "6x2x256x64x2"}}) != "");
  CHECK(error_of({{"MICRO", "6x2"}}) != "");
  CHECK(error_of({{"GPU_TILE", "128x128x8x8"}}).find("R/r x L/l = 256 threads") !=
        std::string::npos);
  CHECK(error_of({{"GPU_TILE", "128x64x8x8x8"}}) != "");  // 128 threads
  CHECK(error_of({{"GPU_TILE", "96x128x6x8x8"}}) != "");  // rows of 6
  CHECK(error_of({{"GPU_MMA", "64x24x32x3"}}).find("multiples of 16") != std::string::npos);
  CHECK(error_of({{"GPU_MMA", "64x32x32x9"}}) != "");  // 9 stages
  CHECK(error_of({{"GPU_MMA", "64x32x32"}}) != "");
  CHECK(error_of({{"GPU_WGMMA", "256x256x4"}}).find("at most 128 x 256") != std::string::npos);
  CHECK(error_of({{"GPU_WGMMA", "128x96x4"}}) != "");   // no m64n96 tile in blocks of 64
  CHECK(error_of({{"GPU_WGMMA", "128x256x2"}}) != "");  // a stage in flight needs three
  CHECK(error_of({{"GPU_WGMMA", "128x256"}}) != "");
}

TEST_CASE("config: an unknown key lists the known keys and suggests the closest") {
  CHECK(error_of({{"TIEL", "64"}}) ==
        std::string("unknown --config key 'TIEL' (did you mean TILE?); ") + kKnown);
  CHECK(error_of({{"OMP", "1"}}) == std::string("unknown --config key 'OMP'; ") + kKnown);
  CHECK(error_of({{"THREAD", "1"}}).find("(did you mean THREADS?)") != std::string::npos);
  CHECK_THROWS_AS(config_options({{"OMP", "1"}}, nullptr), std::invalid_argument);
  CompileOptions o;
  o.config = {{"NOPE", "1"}};
  CHECK_THROWS_WITH_AS(apply_config(o), doctest::Contains(kKnown), ConfigError);
}

TEST_CASE("config: keys match without case and are stored as the knob's name") {
  CompileOptions o = config_options({{"tile", "0"}, {"Threads", "2"}}, nullptr);
  CHECK_FALSE(o.schedule.tile);
  CHECK(o.threads == 2);
  CHECK(o.config == std::map<std::string, std::string>{{"THREADS", "2"}, {"TILE", "0"}});
}

TEST_CASE("config: a descriptor's [config] goes through the registry, --config overrides it") {
  RuntimeDescriptor d;
  d.path = "somewhere/mine.toml";
  d.config = {{"threads", "1"}, {"tile", "16"}};
  CompileOptions o = config_options({{"THREADS", "3"}}, &d);
  CHECK(o.threads == 3);
  CHECK(o.schedule.tile_sizes == std::vector<int64_t>{16, 16, 16});
  CHECK(config_options({}, &d).threads == 1);
  d.config = {{"omp", "1"}};
  CHECK(error_of({}, &d) ==
        std::string("somewhere/mine.toml: unknown [config] key 'omp'; ") + kKnown);
  d.config = {{"threads", "-2"}};
  CHECK(error_of({{"THREADS", "2"}}, &d) ==
        "somewhere/mine.toml: [config] threads: --config THREADS expects a thread count (0: "
        "every core), got '-2'");
  for (const char* name : {"clang", "cc"}) {
    std::unique_ptr<Runtime> rt = Runtime::open(name);
    CHECK_NOTHROW(config_options({}, &rt->descriptor()));
  }
}

TEST_CASE("config: only knobs marked for the cache key enter the program identity") {
  LoweredProgram p;
  auto identity = [&](const std::map<std::string, std::string>& config) {
    return program_identity(p, "c", config_options(config, nullptr));
  };
  const std::string base = identity({});
  CHECK(identity({{"THREADS", "4"}}) == base);
  CHECK(identity({{"TILE", "32"}}) == base);  // the same tiling spelled two ways
  CHECK(identity({{"TILE", "16"}}) != base);
  CHECK(identity({{"CHECK", "1"}}) != base);
  CHECK(identity({{"ISL_OPS", "5"}}) != base);
  for (const Knob& k : knobs()) {
    CAPTURE(std::string(k.name));
    CHECK((config_identity(CompileOptions{}).find(std::string(k.name) + "=") !=
           std::string::npos) == k.in_cache_key);
  }
  CHECK_FALSE(find_knob("THREADS")->in_cache_key);
}

TEST_CASE("config: README lists every knob as the registry has it") {
  std::ifstream f("README.md");
  std::stringstream text;
  text << f.rdbuf();
  REQUIRE_FALSE(text.str().empty());
  INFO("README.md must contain this table verbatim:\n" << knobs_table());
  CHECK(text.str().find(knobs_table()) != std::string::npos);
}

TEST_CASE("did_you_mean: the closest name within two edits, never a wild guess") {
  const std::vector<std::string> names = {"softmax", "log_softmax", "sqrt", "exp2", "TILE"};
  CHECK(did_you_mean("sofmax", names) == " (did you mean softmax?)");
  CHECK(did_you_mean("sqr", names) == " (did you mean sqrt?)");
  CHECK(did_you_mean("TIEL", names) == " (did you mean TILE?)");  // a swap is two edits
  CHECK(did_you_mean("exp", names) == " (did you mean exp2?)");
  CHECK(did_you_mean("softmax", names).empty());  // the name itself is no suggestion
  CHECK(did_you_mean("matmul", names).empty());
  CHECK(did_you_mean("x", {"y", "xy"}) == " (did you mean xy?)");
  CHECK(did_you_mean("x", {"y"}).empty());  // one edit, but the whole name
  CHECK(edit_distance("kitten", "sitting") == 3);
  CHECK(edit_distance("", "abc") == 3);
}

TEST_CASE("host cpu: VNNI=auto's vectors for 8-bit products follow the CPU's dot products") {
  // AVX512-VNNI at full width: 64 bytes; on Zen 4 (two halves) or with AVX-VNNI alone: 32.
  // Without VNNI the bytes are widened (vpmaddwd): 64 with AVX512BW at full width, 32 on AVX2.
  auto cpu = [](const char* vendor, int family, bool avx512, bool avx512_vnni, bool avx_vnni) {
    HostCpu c;
    c.vendor = vendor;
    c.family = family;
    c.avx2 = true;
    c.avx512f = c.avx512bw = avx512;
    c.avx512_vnni = avx512_vnni;
    c.avx_vnni = avx_vnni;
    return c;
  };
  CHECK(dot_vector_bytes(cpu("AuthenticAMD", 0x1a, true, true, true)) == 64);
  CHECK(dot_vector_bytes(cpu("AuthenticAMD", 0x19, true, true, false)) == 32);
  CHECK(dot_vector_bytes(cpu("GenuineIntel", 6, false, false, true)) == 32);
  CHECK(dot_vector_bytes(cpu("GenuineIntel", 6, true, false, false)) == 64);
  CHECK(dot_vector_bytes(cpu("GenuineIntel", 6, false, false, false)) == 32);
  CHECK(dot_vector_bytes({}) == 0);
}

TEST_CASE("host cpu: BF16DOT=auto's vectors for bf16 products follow AVX512-BF16") {
  // With AVX512-BF16: the full width (64; 32 on Zen 4's halves); without it none.
  HostCpu zen5{"AuthenticAMD", 0x1a, true, true};
  zen5.avx512_bf16 = true;
  CHECK(bf16_dot_vector_bytes(zen5) == 64);
  HostCpu zen4 = zen5;
  zen4.family = 0x19;
  CHECK(bf16_dot_vector_bytes(zen4) == 32);
  zen5.avx512_bf16 = false;
  CHECK(bf16_dot_vector_bytes(zen5) == 0);
  CHECK(bf16_dot_vector_bytes({}) == 0);
}

TEST_CASE("host cpu: the caches come from cpuid; MICRO=auto's packed block is half the L2") {
  HostCpu c;
  CHECK(pack_block_bytes(c) == 512 << 10);  // unknown: the default
  c.l2_bytes = 2 << 20;                     // 2 MiB (Sapphire Rapids): capped by the stack
  CHECK(pack_block_bytes(c) == 512 << 10);
  c.l2_bytes = 512 << 10;  // Zen 2
  CHECK(pack_block_bytes(c) == 256 << 10);
  c.l2_bytes = 64 << 10;
  CHECK(pack_block_bytes(c) == 64 << 10);
  // This machine's, against Linux's own reading where it has one.
  HostCpu here = host_cpu();
  if (here.vendor == "GenuineIntel" || here.vendor == "AuthenticAMD") {
    CHECK(here.l1d_bytes >= (8 << 10));
    CHECK(here.l1d_bytes <= (4 << 20));
    CHECK(here.l2_bytes >= (128 << 10));
    CHECK(here.l2_bytes <= (256 << 20));
    for (int index = 0; index < 8; ++index) {
      std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/";
      std::ifstream level(dir + "level"), type(dir + "type"), size(dir + "size");
      int l = 0;
      std::string t, text;
      if (!(level >> l) || !(type >> t) || !(size >> text) || text.empty() || text.back() != 'K')
        continue;
      int64_t bytes = std::stoll(text) << 10;
      if (l == 1 && t == "Data") CHECK(here.l1d_bytes == bytes);
      if (l == 2) CHECK(here.l2_bytes == bytes);
    }
  }
}

TEST_CASE("host cpu: MICRO=auto's full-width vectors follow the CPU's vector units") {
  // AVX-512 at full width: Intel, and AMD from Zen 5 (family 1Ah); Zen 4 (19h) runs 512-bit
  // operations as two halves, AVX2 machines have 32-byte vectors.
  CHECK(full_width_vector_bytes({"GenuineIntel", 6, true, true}) == 64);
  CHECK(full_width_vector_bytes({"AuthenticAMD", 0x19, true, true}) == 32);
  CHECK(full_width_vector_bytes({"AuthenticAMD", 0x1a, true, true}) == 64);
  CHECK(full_width_vector_bytes({"AuthenticAMD", 0x19, true, false}) == 32);
  CHECK(full_width_vector_bytes({"GenuineIntel", 6, true, false}) == 32);
  CHECK(full_width_vector_bytes({}) == 32);
  HostCpu here = host_cpu();
#if defined(__x86_64__)
  CHECK_FALSE(here.vendor.empty());
  CHECK(here.family > 0);
  CHECK((!here.avx512f || here.avx2));  // no AVX-512 machine lacks AVX2
#endif
  MESSAGE("host: " << here.vendor << " family " << here.family << ", avx2 " << here.avx2
                   << ", avx512f " << here.avx512f << ": " << full_width_vector_bytes(here)
                   << "-byte vectors");
}
