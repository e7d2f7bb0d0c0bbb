/** \file
 * The search of `kiln tune` (docs/tuning.md) over a space of tune_space.h: which points to
 * measure, in rounds, until the space, the trials or the time budget run out. Measuring is the
 * caller's: a round's points go to one call of the measure function, which may compile them
 * concurrently but must time them one at a time. The search knows nothing of compiling, so the
 * tests drive it with a made-up cost.
 */
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "driver/tune_space.h"

namespace kiln {

/** One measured point. */
struct Trial {
  TuneCandidate knobs;
  std::optional<double> median_ms;  ///< nullopt: rejected
  std::string why;                  ///< why it was rejected
};

/** Measures a batch of points (never empty, none measured before), one Trial each, in order. */
using MeasureBatch = std::function<std::vector<Trial>(const std::vector<TuneCandidate>&)>;

/** When a search stops starting batches, and how large a batch is. */
struct SearchLimits {
  size_t max_trials = 0;  ///< 0: no limit but the budget
  double budget_ms = 60000;
  size_t batch = 1;  ///< points a call of the measure function gets at most (--jobs)
};

/** A search over `space`; each strategy may run once. The default (every knob's first value)
 *  is always measured first, alone. */
class TuneSearch {
 public:
  TuneSearch(std::vector<TuneDimension> space, MeasureBatch measure, SearchLimits limits);

  /** Every point in order, the default first. */
  void exhaustive();
  /** One knob at a time from the default: each knob's values with the others at their best so
   *  far, the best kept; passes over the knobs until one changes nothing. */
  void greedy();
  /** Beam search: keeps the `width` fastest points measured so far; each round measures every
   *  neighbour (one knob changed to another of its values) of the beam's points not expanded
   *  yet, and the search stops when a round does not lower the best time. */
  void beam(size_t width);

  /** Every trial in the order measured; the default's first. */
  const std::vector<Trial>& trials() const { return trials_; }
  /** True when the trials or the budget ran out before the strategy was done. */
  bool out_of_budget() const { return stopped_; }

 private:
  using Point = std::vector<size_t>;  ///< a value index per dimension
  TuneCandidate candidate(const Point& at) const;
  const Trial* find(const Point& at) const;
  /** The point's median, or nothing when it was rejected or not measured. */
  std::optional<double> median(const Point& at) const;
  /** Measures the points not measured yet, in batches; false when the trials or the budget
   *  ran out first. */
  bool measure(const std::vector<Point>& points);
  /** Every point that differs from `at` in one knob. */
  std::vector<Point> neighbours(const Point& at) const;
  /** The `width` fastest points measured, fastest first (rejected ones never). */
  std::vector<Point> fastest(size_t width) const;
  Point point_of(const TuneCandidate& c) const;

  std::vector<TuneDimension> space_;
  MeasureBatch measure_;
  SearchLimits limits_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::vector<Trial> trials_;
  bool stopped_ = false;
};

}  // namespace kiln
