#pragma once
// A scattered block list for the block copier's tests (tests/unit and
// tests/cuda): n pairs, sources and destinations each drawn without repeats
// (n <= both counts), by a fixed seed.
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>
#include <xfer/mem/blocks/block_copier.hpp>

namespace xfer::test {

inline std::vector<mem::block_pair> scattered_pairs(std::size_t n, std::size_t src_blocks, std::size_t dst_blocks,
                                                    unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<std::int64_t> s(src_blocks), d(dst_blocks);
  std::iota(s.begin(), s.end(), 0);
  std::iota(d.begin(), d.end(), 0);
  std::shuffle(s.begin(), s.end(), rng);
  std::shuffle(d.begin(), d.end(), rng);
  std::vector<mem::block_pair> pairs(n);
  for (std::size_t i = 0; i < n; ++i) pairs[i] = {s[i], d[i]};
  return pairs;
}

}  // namespace xfer::test
