// Numbers for the Data pane that are computed on demand rather than while preparing.
#include <algorithm>

#include "forja/dataset.h"

namespace forja {

Histogram length_histogram(const std::vector<int64_t>& lengths, size_t bins) {
  Histogram h;
  if (lengths.empty() || bins == 0) return h;
  auto [lo_it, hi_it] = std::minmax_element(lengths.begin(), lengths.end());
  const double lo = static_cast<double>(*lo_it);
  // All lengths equal: one unit-wide range keeps the bin width non-zero.
  const double hi = *hi_it > *lo_it ? static_cast<double>(*hi_it) : lo + 1.0;
  const double width = (hi - lo) / static_cast<double>(bins);
  h.edges.resize(bins + 1);
  for (size_t i = 0; i <= bins; ++i) h.edges[i] = lo + width * static_cast<double>(i);
  h.edges[bins] = hi;
  h.counts.assign(bins, 0);
  for (int64_t len : lengths) {
    // The top edge belongs to the last bin, as in numpy.histogram.
    auto bin = static_cast<size_t>((static_cast<double>(len) - lo) / width);
    ++h.counts[std::min(bin, bins - 1)];
  }
  return h;
}

}  // namespace forja
