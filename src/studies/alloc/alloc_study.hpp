#pragma once
// `xferbench alloc`: seed 001's allocator study. For each strategy:
//  - alignment: 200 buffers from 1 B to an 8K 32 bpp image, every pointer checked;
//  - cost: allocate+free time by size and first-touch time, median and spread
//    (for pinned memory also the pinning cost per GiB);
//  - fragmentation: a long randomized allocate/free workload, watching resident
//    set, address space, commit charge and peak (and the pool's own books);
//  - repeats: cost and fragmentation run N times for run-to-run spread.
#include <cstdint>
#include <string>
#include <vector>
#include <xfer/core/backend.hpp>
#include <xfer/core/study.hpp>

namespace xfer::alloc_study {

inline constexpr const char* schema = "xferbench/alloc/v2";

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

  // `xferbench alloc --quick`'s starting point: 5 runs, 1 repeat, 2000
  // steps, sizes 4K and 1M. Options given beside --quick change it.
  static options quick();

  // Throws usage_error naming the bad value: a count out of range, a block
  // under 64 bytes, a size or the workload's live bytes at most (max_block x
  // max_live) over half of `memory_bytes` (0: unknown, not checked).
  void check(std::uint64_t memory_bytes) const;
};

// Strategy names in the sweep's spelling ("pool:" kept), each once; `notes`
// gets a line for each name given in an old spelling.
std::vector<std::string> respell_strategies(const std::vector<std::string>& given, std::vector<std::string>& notes);

// The seed's 200 sizes: geometric from 1 byte to a 7680x4320 image of 4-byte pixels.
std::vector<std::uint64_t> alignment_sizes(std::size_t count = 200, std::uint64_t largest = 7680ull * 4320 * 4);

// One step of the fragmentation workload: allocate `bytes` (if > 0) or free
// the live block at `victim`. Deterministic for a seed.
struct workload_step {
  std::uint64_t bytes = 0;
  std::size_t victim = 0;
};
std::vector<workload_step> make_workload(const options& o);

// The study through the session: records in the file's "strategies",
// "alignment", "cost" and "fragmentation" sections, a table per section on
// the console. A cost or fragmentation run the allocator refuses is a failed
// record; a strategy this machine lacks is a skipped one.
class allocator_study final : public study {
 public:
  // Throws usage_error for a strategy nobody knows. `backends` (for the
  // device kinds) must outlive the study.
  allocator_study(options o, const std::vector<backend_entry>& backends);
  study_info info() const override;
  void run(study_context& context) override;

 private:
  options options_;
  const std::vector<backend_entry>& backends_;
};

}  // namespace xfer::alloc_study
