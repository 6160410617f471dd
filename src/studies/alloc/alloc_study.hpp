#pragma once
// `xferbench alloc`: seed 001's allocator study. For each strategy:
//  - alignment: 200 buffers from 1 B to an 8K 32 bpp image, every pointer checked;
//  - cost: allocate+free time by size and first-touch time, median and spread
//    (for pinned memory also the pinning cost per GiB);
//  - fragmentation: a long randomized allocate/free workload, watching resident
//    set, address space, commit charge and peak (and the pool's own books);
//  - repeats: cost and fragmentation run N times for run-to-run spread.
#include <atomic>
#include <cstdint>
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>
#include <xfer/core/backend.hpp>

namespace xfer::alloc_study {

inline constexpr const char* schema = "xferbench/alloc/v1";

struct options {
  std::vector<std::string> strategies;  // empty: default_strategy_names()
  std::vector<std::uint64_t> sizes{64, 4096, 65536, 1 << 20, 16 << 20, 256 << 20};
  std::size_t runs = 30;          // allocate+free timings per size (fewer once budget_s is spent)
  double budget_s = 1.0;          // per strategy and size
  std::size_t repeats = 3;
  std::size_t iterations = 20000; // fragmentation workload steps
  std::size_t max_live = 256;     // live allocations the workload keeps at most
  std::uint64_t max_block = 1 << 20;
  std::uint64_t seed = 1;
};

// The seed's 200 sizes: geometric from 1 byte to a 7680x4320 image of 4-byte pixels.
std::vector<std::uint64_t> alignment_sizes(std::size_t count = 200, std::uint64_t largest = 7680ull * 4320 * 4);

// One step of the fragmentation workload: allocate `bytes` (if > 0) or free
// the live block at `victim`. Deterministic for a seed.
struct workload_step {
  std::uint64_t bytes = 0;
  std::size_t victim = 0;
};
std::vector<workload_step> make_workload(const options& o);

// Runs the study; prints a table to `out` as it goes; returns the document
// (without system/config, which the caller adds). Stops early when `stop` is set.
nlohmann::json run(const options& o, const std::vector<backend_entry>& backends, std::ostream& out,
                   const std::atomic<bool>& stop);

// True when a measurement in `doc` (run's result) failed; a strategy skipped
// because this machine lacks it is not a failure.
bool any_failed(const nlohmann::json& doc);

}  // namespace xfer::alloc_study
