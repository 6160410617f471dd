// The block copier's ranking rule (block_copier.hpp, rank_block_ways): the
// calibration's rounds turned into an order of the ways. Written on its own,
// so the rule is tested on given times, outliers and ties included.
//
// Why medians and rounds: the best of a few probes, one way after another,
// favours the way whose times spread the widest, and ranked ways in the
// wrong order where interleaved medians told them apart
// (docs/decisions/0003-block-copier-probe-and-ways.md).
#include <algorithm>
#include <cmath>
#include <vector>
#include <xfer/mem/blocks/block_copier.hpp>

namespace xfer::mem {
namespace {

// The order among exact ties: the way that costs the host less first (one
// launch, one call, the CPU's threads, a call per block).
int host_cost(block_way w) {
  switch (w) {
    case block_way::kernel: return 0;
    case block_way::batch: return 1;
    case block_way::pack: return 2;
    case block_way::loop: return 3;
  }
  return 4;
}

// Linear interpolation between order statistics of sorted values.
double quantile(const std::vector<double>& sorted, double q) {
  const double h = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(h));
  if (lo + 1 >= sorted.size()) return sorted.back();
  return sorted[lo] + (h - static_cast<double>(lo)) * (sorted[lo + 1] - sorted[lo]);
}

struct summary {
  block_way way;
  const std::vector<double>* rounds;
  double q1, median, q3;
  int wins = 0;  // rounds faster than another way of its tie, summed over those ways
};

bool within_spread(const summary& a, const summary& b) { return a.q1 <= b.q3 && b.q1 <= a.q3; }

// Rounds (both ran them) in which a was faster than b.
int rounds_faster(const summary& a, const summary& b) {
  const std::size_t n = std::min(a.rounds->size(), b.rounds->size());
  int won = 0;
  for (std::size_t r = 0; r < n; ++r) won += (*a.rounds)[r] < (*b.rounds)[r];
  return won;
}

}  // namespace

std::vector<block_way> rank_block_ways(const std::vector<block_way_times>& times) {
  std::vector<summary> ways;
  for (const auto& t : times) {
    if (t.seconds.empty()) continue;
    std::vector<double> s = t.seconds;
    std::sort(s.begin(), s.end());
    ways.push_back({t.way, &t.seconds, quantile(s, 0.25), quantile(s, 0.5), quantile(s, 0.75)});
  }
  const auto by_median = [](const summary& a, const summary& b) {
    if (a.median != b.median) return a.median < b.median;
    return host_cost(a.way) < host_cost(b.way);
  };
  std::sort(ways.begin(), ways.end(), by_median);
  // Ties: runs of neighbours (in median order) each within the spread of
  // the one before. A run is ordered by rounds won against its other
  // members: a total order, whatever the pairs' results (a head-to-head
  // comparison alone can go round in a circle).
  std::vector<block_way> ranking;
  for (std::size_t a = 0; a < ways.size();) {
    std::size_t b = a + 1;
    while (b < ways.size() && within_spread(ways[b - 1], ways[b])) ++b;
    for (std::size_t i = a; i < b; ++i)
      for (std::size_t j = a; j < b; ++j)
        if (i != j) ways[i].wins += rounds_faster(ways[i], ways[j]);
    std::stable_sort(ways.begin() + static_cast<std::ptrdiff_t>(a), ways.begin() + static_cast<std::ptrdiff_t>(b),
                     [](const summary& x, const summary& y) { return x.wins > y.wins; });
    for (std::size_t i = a; i < b; ++i) ranking.push_back(ways[i].way);
    a = b;
  }
  return ranking;
}

}  // namespace xfer::mem
