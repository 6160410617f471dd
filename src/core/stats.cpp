#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>
#include <xfer/core/stats.hpp>

namespace xfer {

summary summarize(std::span<const double> values) {
  summary s;
  s.count = values.size();
  if (values.empty()) return s;
  std::vector<double> v(values.begin(), values.end());
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  s.min = v.front();
  s.max = v.back();
  s.median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  s.mean = std::accumulate(v.begin(), v.end(), 0.0) / n;
  const double h = (n - 1) * 0.95;
  const auto lo = static_cast<std::size_t>(std::floor(h));
  s.p95 = lo + 1 < n ? v[lo] + (h - lo) * (v[lo + 1] - v[lo]) : v[lo];
  if (n > 1) {
    double ss = 0;
    for (double x : v) ss += (x - s.mean) * (x - s.mean);
    s.stddev = std::sqrt(ss / (n - 1));
  }
  return s;
}

double quantile(std::span<const double> values, double q) {
  if (values.empty()) return 0;
  std::vector<double> v(values.begin(), values.end());
  std::sort(v.begin(), v.end());
  const double h = (v.size() - 1) * q;
  const auto lo = static_cast<std::size_t>(std::floor(h));
  return lo + 1 < v.size() ? v[lo] + (h - lo) * (v[lo + 1] - v[lo]) : v[lo];
}

double median_ci_relative(std::span<const double> values) {
  const std::size_t n = values.size();
  const double half = 0.98 * std::sqrt(static_cast<double>(n));  // 1.96 * sqrt(n) / 2
  const double lo_rank = std::floor(n / 2.0 - half);             // 1-based order statistics
  const double hi_rank = std::ceil(n / 2.0 + half + 1);
  if (n == 0 || lo_rank < 1 || hi_rank > n) return std::numeric_limits<double>::infinity();
  std::vector<double> v(values.begin(), values.end());
  std::sort(v.begin(), v.end());
  const double median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  if (median <= 0) return std::numeric_limits<double>::infinity();
  return (v[static_cast<std::size_t>(hi_rank) - 1] - v[static_cast<std::size_t>(lo_rank) - 1]) / (2 * median);
}

}  // namespace xfer
