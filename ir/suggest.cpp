#include "ir/suggest.h"

#include <algorithm>

namespace kiln {

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] != b[j - 1])});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string did_you_mean(const std::string& name, const std::vector<std::string>& candidates) {
  const std::string* best = nullptr;
  size_t best_distance = 3;  // within two edits
  for (const std::string& c : candidates) {
    if (c == name) continue;
    size_t d = edit_distance(name, c);
    if (d < best_distance && d < std::max(name.size(), c.size())) {
      best = &c;
      best_distance = d;
    }
  }
  return best ? " (did you mean " + *best + "?)" : "";
}

}  // namespace kiln
