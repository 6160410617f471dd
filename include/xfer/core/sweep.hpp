#pragma once
// Sweep axes (as in nvbench): devices x routes x directions x host kinds x
// sizes, expanded into points for one backend.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>
#include <xfer/core/backend.hpp>

namespace xfer {

// Empty axis = everything the backend offers.
struct sweep_spec {
  std::vector<int> devices;
  std::vector<std::string> routes;
  std::vector<std::string> host_memory;
  std::vector<direction> directions;
  std::vector<std::uint64_t> sizes;
  // False where `sizes` is the default grid (none were asked for): a route
  // with default_sizes of its own is measured at those instead.
  bool sizes_given = true;
  // A route with a host memory kind it can never move (backend::pairing_gap)
  // is left out of the points unless both were named: then the point is
  // planned and skipped with the reason, as the user asked for it.
  bool pairs_named = false;
  // The many-blocks workload (core/block_route.hpp): empty, a plain sweep
  // (block routes left out); else only the block routes, each total of
  // `sizes` at each of these block sizes, moved by block_list where given.
  std::vector<std::uint64_t> block_sizes;
  std::shared_ptr<const std::vector<block_pair_spec>> block_list = nullptr;
};

// Points for one backend, nested device > route > direction > host kind > size;
// a name or size given twice gives its points once.
// d2d points (and routes that use no host memory) have host_memory "none". A requested route the backend lacks, or a host kind
// unknown to it, is a usage_error; a direction a route does not support is left
// out (with several routes, most support only some directions) unless no
// selected route supports it, which is a usage_error too. Kinds the backend
// knows but cannot provide here still expand: prepare() skips them with the
// reason, so the report shows them.
std::vector<point_spec> expand(const backend& b, const sweep_spec& spec);

// The sizes a sweep measures when none are given. The overview (the
// default): x16 apart from 1 B to 16 MiB, and 64 MiB, where every route
// measured so far is at its plateau; eight sizes, so that a run of every
// backend has the time to converge. dense: every power of two from
// default_min_size to default_max_size (also what --min/--max range over).
// quick: x16 apart up to 16 MiB.
inline constexpr std::uint64_t default_min_size = 1, default_max_size = 256ull << 20;
enum class size_grid { overview, dense, quick };
std::vector<std::uint64_t> default_sizes(size_grid grid = size_grid::overview);

// A selection with its repeats dropped, the first of each kept in place:
// `-r memcpy,memcpy --sizes 4K,4K` is one point, measured once.
template <class T>
std::vector<T> without_repeats(const std::vector<T>& items) {
  std::vector<T> out;
  for (const auto& i : items)
    if (std::find(out.begin(), out.end(), i) == out.end()) out.push_back(i);
  return out;
}

}  // namespace xfer
