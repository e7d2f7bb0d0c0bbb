// The decode step and its state through the public API: ops/gpt2.toml:gpt2_step's logits after
// a prompt and after each one-token call (its cache buffers swapped as Compiled::state() pairs
// them) equal the prefill logits of ops/gpt2.toml:gpt2 at the same position, and
// kiln::generate's greedy tokens are the argmax of those prefill logits. Random weights.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "kiln/kiln.h"

namespace {

using Sizes = std::map<std::string, int64_t>;

/** Random weights for every float input of `c` under `sizes`, GPT-2-like: N(0, 0.1) matrices
 *  (the tests need distinct logits, not GPT-2's 0.02), norm gains near 1. */
std::map<std::string, std::vector<float>> weights(const kiln::Compiled& c, const Sizes& sizes) {
  std::mt19937 gen(7);
  std::normal_distribution<float> normal(0.0f, 0.1f);
  std::map<std::string, std::vector<float>> w;
  for (const std::string& in : c.inputs()) {
    if (c.dtype(in) != "f32" || in.find("cache") != std::string::npos) continue;
    std::vector<float>& v = w[in];
    v.resize(c.byte_size(in, sizes) / 4);
    const bool gain = in.find("ln") != std::string::npos && in.find("weight") != std::string::npos;
    for (float& x : v)
      x = gain ? 1.0f + normal(gen) : normal(gen);
  }
  return w;
}

int32_t argmax(const float* v, size_t n) {
  size_t best = 0;
  for (size_t k = 1; k < n; ++k)
    if (v[k] > v[best]) best = k;
  return static_cast<int32_t>(best);
}

}  // namespace

TEST_CASE("api: gpt2_step's decode logits equal gpt2's prefill logits; generate is greedy") {
  const kiln::Spec spec = kiln::Spec::load("ops/gpt2.toml");
  for (const char* runtime : {"interp", "clang"}) {
    CAPTURE(runtime);
    const kiln::Compiled step = kiln::compile(spec, "gpt2_step", runtime);
    const kiln::Compiled prefill = kiln::compile(spec, "gpt2", runtime);
    CHECK(step.state() == std::vector<std::pair<std::string, std::string>>{
                              {"k_cache_out", "k_cache"}, {"v_cache_out", "v_cache"}});
    const int64_t T = 7, V = 23, C = 64, L = 2, P = 16, N = T;
    Sizes sizes = {{"V", V}, {"C", C}, {"L", L}, {"P", P}, {"N", N}, {"S", T}};
    const auto w = weights(prefill, sizes);
    const std::vector<int32_t> ids = {3, 14, 15, 9, 2, 6, 5};
    // The prefill logits of every position.
    std::vector<float> want(T * V);
    std::vector<void*> b;
    for (const std::string& in : prefill.inputs())
      b.push_back(in == "ids" ? static_cast<void*>(const_cast<int32_t*>(ids.data()))
                              : const_cast<float*>(w.at(in).data()));
    b.push_back(want.data());
    prefill.run(b, sizes);
    // The step: the first 3 ids at once, then one a call, the caches swapped after each.
    std::map<std::string, std::vector<float>> state;
    for (const auto& [out, in] : step.state()) {
      state[in].assign(L * N * C, 0.0f);
      state[out].assign(L * N * C, 0.0f);
    }
    std::vector<float> logits(V);
    int32_t pos = 0;
    for (int64_t at = 3; at <= T; ++at) {
      const int64_t count = pos == 0 ? 3 : 1;
      sizes["S"] = count;
      b.clear();
      for (const std::string& in : step.inputs())
        b.push_back(in == "ids"       ? const_cast<int32_t*>(ids.data() + pos)
                    : in == "pos"     ? static_cast<void*>(&pos)
                    : state.count(in) ? static_cast<void*>(state.at(in).data())
                                      : const_cast<float*>(w.at(in).data()));
      for (const std::string& out : step.outputs())
        b.push_back(out == "logits" ? logits.data() : state.at(out).data());
      step.run(b, sizes);
      for (const auto& [out, in] : step.state())
        state.at(out).swap(state.at(in));
      CAPTURE(at);
      for (int64_t v = 0; v < V; ++v)
        CHECK(std::abs(logits[v] - want[(at - 1) * V + v]) <= 1e-4f + 1e-4f * std::abs(want[v]));
      pos += static_cast<int32_t>(count);
    }
    // Greedy generation: each token the argmax of the prefill logits over what came before.
    std::map<std::string, const void*> given;
    for (const auto& [name, v] : w)
      given[name] = v.data();
    const Sizes model = {{"V", V}, {"C", C}, {"L", L}, {"P", P}};
    std::vector<int32_t> seen;
    const kiln::Generation g =
        kiln::generate(step, given, model, {3, 14, 15}, 5, [&](int32_t t) { seen.push_back(t); });
    CHECK(seen == g.tokens);
    REQUIRE(g.tokens.size() == 5);
    std::vector<int32_t> seq = {3, 14, 15};
    for (int32_t t : g.tokens) {
      Sizes s = {{"V", V}, {"C", C}, {"L", L}, {"P", P}, {"S", static_cast<int64_t>(seq.size())}};
      std::vector<float> all(seq.size() * V);
      b.clear();
      for (const std::string& in : prefill.inputs())
        b.push_back(in == "ids" ? static_cast<void*>(seq.data())
                                : const_cast<float*>(w.at(in).data()));
      b.push_back(all.data());
      prefill.run(b, s);
      CHECK(t == argmax(all.data() + (seq.size() - 1) * V, V));
      seq.push_back(t);
    }
    // The one-token calls on the step compiled for S = 1: the same tokens.
    kiln::CompileSettings one;
    one.fixed_sizes["S"] = 1;
    const kiln::Compiled decode = kiln::compile(spec, "gpt2_step", runtime, one);
    CHECK(kiln::generate(step, given, model, {3, 14, 15}, 5, {}, &decode).tokens == g.tokens);
    CHECK_THROWS_AS(kiln::generate(step, given, model, {3}, 2, {}, &prefill),
                    std::invalid_argument);
    CHECK_THROWS_WITH_AS(kiln::generate(step, given, model, {3, 23}, 2),
                         "generate: token id 23 at prompt position 1 is outside the vocabulary "
                         "[0, 23)",
                         std::invalid_argument);
    given.erase("wpe_weight");
    CHECK_THROWS_AS(kiln::generate(step, given, model, {3}, 2), std::invalid_argument);
  }
}
