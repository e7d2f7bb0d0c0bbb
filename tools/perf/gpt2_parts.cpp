// gpt2_parts: issue 28's first target timed as a framework would run it. The GPT-2 block of
// tests/regressions/transformer_block.toml as one composite against its six parts
// (block_layernorm, block_qkv, block_attention, block_projection, block_layernorm, block_mlp)
// called back to back, each part reading the activations the one before wrote, through the
// public C++ API (include/kiln/kiln.h). Rounds alternate one run of the block with one pass of
// the parts, so both see the same machine and the same caches: the parts' weights are evicted
// by the other parts' as the block's are. Weights are drawn as GPT-2 initialises them (standard
// deviation 0.02, gains near 1); the parts' output must equal the block's.
//
//   gpt2_parts SPEC RUNTIME THREADS [S C HEADS ROUNDS]
//
// Prints the medians, the ratio parts / block (above 1: the block is faster) and the largest
// difference between the two outputs. Built on demand (`ninja -C build gpt2_parts`), by
// tools/perf/gpt2_block.sh.
#include <kiln/kiln.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace {

using Buffers = std::map<std::string, std::vector<float>>;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

/** Runs `c` on the named buffers of `data`: its inputs by name, then its outputs. */
void run(const kiln::Compiled& c, Buffers& data, const std::map<std::string, std::string>& names,
         const std::map<std::string, int64_t>& sizes) {
  std::vector<void*> args;
  for (const std::vector<std::string>& list : {c.inputs(), c.outputs()})
    for (const std::string& n : list) {
      auto it = names.find(n);
      args.push_back(data.at(it == names.end() ? n : it->second).data());
    }
  c.run(args, sizes);
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: gpt2_parts SPEC RUNTIME THREADS [S C HEADS ROUNDS]\n");
    return 2;
  }
  const std::string spec_path = argv[1], runtime = argv[2], threads = argv[3];
  const int64_t S = argc > 4 ? std::atoll(argv[4]) : 256, C = argc > 5 ? std::atoll(argv[5]) : 768;
  const std::string heads = argc > 6 ? argv[6] : "12";
  const int rounds = argc > 7 ? std::atoi(argv[7]) : 30;
  try {
    kiln::Spec spec = kiln::Spec::load(spec_path);
    kiln::CompileSettings settings;
    settings.config = {{"THREADS", threads}};
    kiln::CompileSettings with_heads = settings;
    with_heads.attrs = {{"heads", heads}};
    kiln::Compiled block = kiln::compile(spec, "gpt2_block", runtime, with_heads);
    kiln::Compiled ln = kiln::compile(spec, "block_layernorm", runtime, settings);
    kiln::Compiled qkv = kiln::compile(spec, "block_qkv", runtime, settings);
    kiln::Compiled att = kiln::compile(spec, "block_attention", runtime, with_heads);
    kiln::Compiled proj = kiln::compile(spec, "block_projection", runtime, settings);
    kiln::Compiled mlp = kiln::compile(spec, "block_mlp", runtime, settings);

    std::mt19937 rng(7);
    Buffers data;
    auto fill = [&](const std::string& name, int64_t n, float lo, float hi) {
      std::uniform_real_distribution<float> d(lo, hi);
      std::vector<float>& v = data[name];
      v.resize(static_cast<size_t>(n));
      for (float& x : v)
        x = d(rng);
    };
    const float w = 0.035f, b = 0.02f;  // uniform with standard deviation 0.02; small biases
    fill("x", S * C, -1, 1);
    fill("ln1_g", C, 0.8f, 1.2f);
    fill("ln1_b", C, -0.1f, 0.1f);
    fill("w_qkv", C * 3 * C, -w, w);
    fill("b_qkv", 3 * C, -b, b);
    fill("w_o", C * C, -w, w);
    fill("b_o", C, -b, b);
    fill("ln2_g", C, 0.8f, 1.2f);
    fill("ln2_b", C, -0.1f, 0.1f);
    fill("w_fc", C * 4 * C, -w, w);
    fill("b_fc", 4 * C, -b, b);
    fill("w_fc2", 4 * C * C, -w, w);
    fill("b_fc2", C, -b, b);
    for (const char* n : {"y", "h", "o", "x2", "h2", "y_parts"})
      data[n].assign(static_cast<size_t>(S * C), 0.f);
    data["qkv"].assign(static_cast<size_t>(S * 3 * C), 0.f);

    const std::map<std::string, int64_t> sizes = {{"S", S}, {"C", C}};
    auto one_block = [&] { run(block, data, {}, sizes); };
    auto parts = [&] {
      run(ln, data, {{"g", "ln1_g"}, {"b", "ln1_b"}}, sizes);
      run(qkv, data, {{"w", "w_qkv"}, {"b", "b_qkv"}}, sizes);
      run(att, data, {}, sizes);
      run(proj, data, {{"w", "w_o"}, {"b", "b_o"}}, sizes);
      run(ln, data, {{"x", "x2"}, {"g", "ln2_g"}, {"b", "ln2_b"}, {"h", "h2"}}, sizes);
      run(mlp, data, {{"y", "y_parts"}}, sizes);
    };
    std::vector<double> tb, tp;
    for (int r = -3; r < rounds; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      one_block();
      double a = ms_since(t0);
      t0 = std::chrono::steady_clock::now();
      parts();
      double p = ms_since(t0);
      if (r >= 0) tb.push_back(a), tp.push_back(p);
    }
    double diff = 0, scale = 0;
    for (size_t i = 0; i < data["y"].size(); ++i) {
      diff = std::max(diff, static_cast<double>(std::fabs(data["y"][i] - data["y_parts"][i])));
      scale = std::max(scale, static_cast<double>(std::fabs(data["y"][i])));
    }
    std::printf(
        "%s, THREADS=%s, S=%lld, C=%lld, heads=%s, %d rounds: block median %.2f ms (min %.2f), "
        "parts back to back %.2f ms (min %.2f), parts / block %.3f; outputs differ by at most "
        "%.3g (largest |y| %.3g)\n",
        runtime.c_str(), threads.c_str(), static_cast<long long>(S), static_cast<long long>(C),
        heads.c_str(), rounds, median(tb), *std::min_element(tb.begin(), tb.end()), median(tp),
        *std::min_element(tp.begin(), tp.end()), median(tp) / median(tb), diff, scale);
    return diff <= 1e-3 * std::max(1.0, scale) ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpt2_parts: %s\n", e.what());
    return 1;
  }
}
