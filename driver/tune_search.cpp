// The strategies of `kiln tune`'s search and the batching of what they measure.
#include "driver/tune_search.h"

#include <algorithm>

namespace kiln {

TuneSearch::TuneSearch(std::vector<TuneDimension> space, MeasureBatch measure, SearchLimits limits)
    : space_(std::move(space)), measure_(std::move(measure)), limits_(limits) {
  limits_.batch = std::max<size_t>(limits_.batch, 1);
}

TuneCandidate TuneSearch::candidate(const Point& at) const {
  TuneCandidate c;
  for (size_t d = 0; d < space_.size(); ++d)
    c[space_[d].knob] = space_[d].values[at[d]];
  return c;
}

const Trial* TuneSearch::find(const Point& at) const {
  TuneCandidate c = candidate(at);
  for (const Trial& t : trials_)
    if (t.knobs == c) return &t;
  return nullptr;
}

std::optional<double> TuneSearch::median(const Point& at) const {
  const Trial* t = find(at);
  return t ? t->median_ms : std::nullopt;
}

bool TuneSearch::measure(const std::vector<Point>& points) {
  std::vector<TuneCandidate> todo;
  for (const Point& p : points) {
    TuneCandidate c = candidate(p);
    if (!find(p) && std::find(todo.begin(), todo.end(), c) == todo.end()) todo.push_back(c);
  }
  for (size_t next = 0; next < todo.size();) {
    double spent =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_)
            .count();
    size_t left = limits_.max_trials
                      ? limits_.max_trials - std::min(limits_.max_trials, trials_.size())
                      : todo.size();
    if (left == 0 || (!trials_.empty() && spent > limits_.budget_ms)) {
      stopped_ = true;
      return false;
    }
    // The default goes alone, so that a search always has its reference time.
    size_t n = std::min({trials_.empty() ? size_t{1} : limits_.batch, todo.size() - next, left});
    std::vector<TuneCandidate> batch(todo.begin() + static_cast<std::ptrdiff_t>(next),
                                     todo.begin() + static_cast<std::ptrdiff_t>(next + n));
    std::vector<Trial> measured = measure_(batch);
    trials_.insert(trials_.end(), measured.begin(), measured.end());
    next += n;
  }
  return true;
}

void TuneSearch::exhaustive() {
  std::vector<Point> all;
  Point at(space_.size(), 0);
  while (true) {
    all.push_back(at);
    size_t d = space_.size();
    while (d > 0 && ++at[d - 1] == space_[d - 1].values.size())
      at[--d] = 0;
    if (d == 0) break;
  }
  measure(all);
}

void TuneSearch::greedy() {
  Point best(space_.size(), 0);
  if (!measure({best})) return;
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t d = 0; d < space_.size(); ++d) {
      std::vector<Point> round;
      Point at = best;
      for (size_t v = 0; v < space_[d].values.size(); ++v) {
        at[d] = v;
        round.push_back(at);
      }
      bool complete = measure(round);
      size_t before = best[d];
      for (const Point& p : round) {
        std::optional<double> ms = median(p), best_ms = median(best);
        if (ms && (!best_ms || *ms < *best_ms)) best = p;
      }
      changed |= best[d] != before;
      if (!complete) return;
    }
  }
}

std::vector<TuneSearch::Point> TuneSearch::neighbours(const Point& at) const {
  std::vector<Point> out;
  for (size_t d = 0; d < space_.size(); ++d)
    for (size_t v = 0; v < space_[d].values.size(); ++v) {
      if (v == at[d]) continue;
      Point p = at;
      p[d] = v;
      out.push_back(p);
    }
  return out;
}

TuneSearch::Point TuneSearch::point_of(const TuneCandidate& c) const {
  Point at(space_.size(), 0);
  for (size_t d = 0; d < space_.size(); ++d) {
    const std::vector<std::string>& values = space_[d].values;
    at[d] = static_cast<size_t>(std::find(values.begin(), values.end(), c.at(space_[d].knob)) -
                                values.begin());
  }
  return at;
}

std::vector<TuneSearch::Point> TuneSearch::fastest(size_t width) const {
  std::vector<const Trial*> valid;
  for (const Trial& t : trials_)
    if (t.median_ms) valid.push_back(&t);
  std::stable_sort(valid.begin(), valid.end(),
                   [](const Trial* a, const Trial* b) { return *a->median_ms < *b->median_ms; });
  std::vector<Point> out;
  for (size_t k = 0; k < valid.size() && k < width; ++k)
    out.push_back(point_of(valid[k]->knobs));
  return out;
}

void TuneSearch::beam(size_t width) {
  width = std::max<size_t>(width, 1);
  Point start(space_.size(), 0);
  if (!measure({start})) return;
  std::vector<Point> expanded;
  // A rejected default still has neighbours worth trying: expand it once.
  std::vector<Point> beam = median(start) ? fastest(width) : std::vector<Point>{start};
  while (true) {
    std::optional<double> before = fastest(1).empty() ? std::nullopt : median(fastest(1)[0]);
    std::vector<Point> round;
    for (const Point& p : beam) {
      if (std::find(expanded.begin(), expanded.end(), p) != expanded.end()) continue;
      expanded.push_back(p);
      for (const Point& n : neighbours(p))
        round.push_back(n);
    }
    if (round.empty() || !measure(round)) return;
    beam = fastest(width);
    if (beam.empty()) return;
    std::optional<double> after = median(beam[0]);
    if (before && after && !(*after < *before)) return;
  }
}

}  // namespace kiln
