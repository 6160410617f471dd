#pragma once
#include <cstddef>
#include <span>

namespace xfer {

struct summary {
  double min = 0, median = 0, mean = 0, p95 = 0, max = 0, stddev = 0;
  std::size_t count = 0;
};

// p95 interpolates linearly between order statistics; stddev is the sample
// (n-1) standard deviation, 0 for fewer than two values.
summary summarize(std::span<const double> values);

// Relative half-width of the distribution-free 95% confidence interval of the
// median (order statistics n/2 -+ 0.98 sqrt(n)), over the median. Infinity
// when n is too small for the interval to lie inside the data.
double median_ci_relative(std::span<const double> values);

// The q-quantile (0..1) of values, interpolated as summary's p95 is; 0 for none.
double quantile(std::span<const double> values, double q);

}  // namespace xfer
