// The block copier's cost per call on the host step, the C++ side of
// python/benchmarks/blocks_call_overhead.py: the same block list (n pairs
// over 2n blocks each side, scattered by seed 38) moved by one way alone
// (block_mover::move) and through block_copier::copy (check, choice, move),
// interleaved; prints the median microseconds of each. Small blocks make the
// per-call work, not the bytes, the time (issue 38: Python's copy_blocks ran
// about 200 us per 64 MiB call behind C++ on a GPU machine). Not a test.
//
//   build/bench/xfer_bench_blocks_host_calls [pairs=4096] [block_bytes=64] [way=pack] [reps=2000]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>
#include <xfer/mem/blocks/block_copier.hpp>

namespace {

using namespace xfer;
using clock_type = std::chrono::steady_clock;

double median_us(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2] * 1e6;
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 4096;
  const std::size_t block = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 64;
  const std::string way_name = argc > 3 ? argv[3] : "pack";
  const mem::block_way way = mem::parse_block_way(way_name);
  const unsigned reps = argc > 4 ? unsigned(std::atoi(argv[4])) : 2000;
  if (n == 0 || block == 0 || reps == 0) {
    std::fprintf(stderr, "usage: %s [pairs>0] [block_bytes>0] [way] [reps>0]\n", argv[0]);
    return 2;
  }
  mem::host_block_step step;
  mem::block_copier_options o;
  o.way = way;
  mem::block_copier copier(step, o);
  std::vector<unsigned char> host(2 * n * block, 0x5A);
  const mem::device_ref dev = step.allocate(2 * n * block);
  const auto pairs = mem::scattered_block_pairs(n, 2 * n, 2 * n, 38);
  const mem::block_job job{mem::staged_direction::to_device, host.data(), host.size(), dev, block, pairs};
  const auto access = step.access(host.data(), host.size());
  auto& mover = copier.mover(way);
  std::vector<double> alone, through;
  for (unsigned r = 0; r < reps + 50; ++r) {  // the first 50 warm up
    auto t0 = clock_type::now();
    mover.move(job, access);
    const double a = std::chrono::duration<double>(clock_type::now() - t0).count();
    t0 = clock_type::now();
    copier.copy(job);
    const double c = std::chrono::duration<double>(clock_type::now() - t0).count();
    if (r >= 50) alone.push_back(a), through.push_back(c);
  }
  std::printf("C++ host step, %zu pairs of %zu bytes, way %s: move %.1f us, block_copier::copy %.1f us "
              "(medians of %u)\n",
              n, block, way_name.c_str(), median_us(alone), median_us(through), reps);
  step.deallocate(dev);
  return 0;
}
