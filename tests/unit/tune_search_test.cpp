// The search strategies of `kiln tune` (driver/tune_search.h) on made-up costs: what each
// measures, in which batches, and where the trials stop it. No compile, no timing.
#include <doctest/doctest.h>

#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "driver/tune_search.h"

using kiln::SearchLimits;
using kiln::Trial;
using kiln::TuneCandidate;
using kiln::TuneDimension;
using kiln::TuneSearch;

namespace {

/** Two knobs, A with 4 values and B with 3; the default is A=a0 B=b0. */
std::vector<TuneDimension> small_space() {
  return {{"A", {"a0", "a1", "a2", "a3"}}, {"B", {"b0", "b1", "b2"}}};
}

/** A measure function whose cost is `cost(candidate)`, remembering the batches it got. */
struct FakeBench {
  std::function<double(const TuneCandidate&)> cost;
  std::vector<size_t> batches;

  kiln::MeasureBatch measure() {
    return [this](const std::vector<TuneCandidate>& batch) {
      batches.push_back(batch.size());
      std::vector<Trial> out;
      for (const TuneCandidate& c : batch) {
        double ms = cost(c);
        if (ms < 0)
          out.push_back(Trial{c, std::nullopt, "rejected"});
        else
          out.push_back(Trial{c, ms, ""});
      }
      return out;
    };
  }
};

/** The index of a value such as "a2" or "b1". */
int index_of(const std::string& v) {
  return std::atoi(v.c_str() + 1);
}

}  // namespace

TEST_CASE("tune search: exhaustive measures every point once, the default alone first") {
  FakeBench bench{[](const TuneCandidate& c) { return 10.0 + index_of(c.at("A")); }, {}};
  TuneSearch search(small_space(), bench.measure(), SearchLimits{0, 1e9, 4});
  search.exhaustive();
  REQUIRE(search.trials().size() == 12);
  CHECK(search.trials().front().knobs == TuneCandidate{{"A", "a0"}, {"B", "b0"}});
  CHECK(bench.batches == std::vector<size_t>{1, 4, 4, 3});
  CHECK_FALSE(search.out_of_budget());
}

TEST_CASE("tune search: --trials stops a search, mid-batch") {
  FakeBench bench{[](const TuneCandidate&) { return 1.0; }, {}};
  TuneSearch search(small_space(), bench.measure(), SearchLimits{6, 1e9, 4});
  search.exhaustive();
  CHECK(search.trials().size() == 6);
  CHECK(bench.batches == std::vector<size_t>{1, 4, 1});
  CHECK(search.out_of_budget());
}

TEST_CASE("tune search: greedy walks one knob at a time and skips what it measured") {
  // The best point is A=a2 B=b1; each knob alone improves the cost.
  FakeBench bench{[](const TuneCandidate& c) {
                    return 10.0 + std::abs(index_of(c.at("A")) - 2) +
                           std::abs(index_of(c.at("B")) - 1);
                  },
                  {}};
  TuneSearch search(small_space(), bench.measure(), SearchLimits{0, 1e9, 8});
  search.greedy();
  double best = 1e9;
  TuneCandidate winner;
  for (const Trial& t : search.trials())
    if (t.median_ms && *t.median_ms < best) best = *t.median_ms, winner = t.knobs;
  CHECK(winner == TuneCandidate{{"A", "a2"}, {"B", "b1"}});
  // The default, A's other 3, B's other 2, then a pass that changes nothing: A's other 3 with
  // B at b1 (B's values with A at a2 are measured already).
  CHECK(search.trials().size() == 9);
  CHECK(bench.batches == std::vector<size_t>{1, 3, 2, 3});
}

TEST_CASE("tune search: a rejected default does not stop the search") {
  FakeBench bench{[](const TuneCandidate& c) { return c.at("A") == "a0" ? -1.0 : 5.0; }, {}};
  TuneSearch search(small_space(), bench.measure(), SearchLimits{0, 1e9, 2});
  search.greedy();
  REQUIRE(search.trials().size() > 1);
  CHECK_FALSE(search.trials().front().median_ms);
}

namespace {

/** A landscape where the knobs interact: A=a1 is the best first step, but the fastest point,
 *  A=a3 B=b2, is reached only through A=a3 B=b0, the second best step. */
double coupled(const TuneCandidate& c) {
  const std::map<std::string, double> known = {
      {"a1b0", 8}, {"a3b0", 9}, {"a1b1", 8.5}, {"a1b2", 8.5}, {"a3b2", 1}};
  auto it = known.find(c.at("A") + c.at("B"));
  return it == known.end() ? 10 : it->second;
}

/** The fastest trial's knobs. */
TuneCandidate winner_of(const TuneSearch& search) {
  const Trial* best = nullptr;
  for (const Trial& t : search.trials())
    if (t.median_ms && (!best || *t.median_ms < *best->median_ms)) best = &t;
  REQUIRE(best);
  return best->knobs;
}

}  // namespace

TEST_CASE("tune search: a beam of 2 finds what the greedy walk misses") {
  FakeBench greedy_bench{coupled, {}};
  TuneSearch greedy(small_space(), greedy_bench.measure(), SearchLimits{0, 1e9, 8});
  greedy.greedy();
  CHECK(winner_of(greedy) == TuneCandidate{{"A", "a1"}, {"B", "b0"}});

  FakeBench beam_bench{coupled, {}};
  TuneSearch beam(small_space(), beam_bench.measure(), SearchLimits{0, 1e9, 8});
  beam.beam(2);
  CHECK(winner_of(beam) == TuneCandidate{{"A", "a3"}, {"B", "b2"}});
  // The default; its 5 neighbours; the new neighbours of a1b0 (2) and a3b0 (2); of a3b2 (1),
  // after which nothing improves.
  CHECK(beam.trials().size() == 11);
  CHECK(beam_bench.batches == std::vector<size_t>{1, 5, 4, 1});
  CHECK_FALSE(beam.out_of_budget());
}

TEST_CASE("tune search: a beam of 1 stops at the first round that does not improve") {
  FakeBench bench{
      [](const TuneCandidate& c) { return c.at("A") == "a0" && c.at("B") == "b0" ? 1.0 : 2.0; },
      {}};
  TuneSearch search(small_space(), bench.measure(), SearchLimits{0, 1e9, 16});
  search.beam(1);
  CHECK(search.trials().size() == 6);  // the default and its 5 neighbours
  CHECK(winner_of(search) == TuneCandidate{{"A", "a0"}, {"B", "b0"}});
}

TEST_CASE("tune search: a beam stops at --trials") {
  FakeBench bench{coupled, {}};
  TuneSearch search(small_space(), bench.measure(), SearchLimits{4, 1e9, 8});
  search.beam(4);
  CHECK(search.trials().size() == 4);
  CHECK(search.out_of_budget());
}
