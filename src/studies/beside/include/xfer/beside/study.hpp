#pragma once
// `xferbench beside` (issue 53): each copy way beside each workload, through
// the session (core/study.hpp). Per workload it sizes one job (the copy steps
// the fastest way alone does in `seconds`, the work the workload alone does
// in `seconds`), then runs `rounds` rounds, the ways in a rotated order each
// round; a way its step cannot run is a skipped record with the reason; per
// (workload, way) one record of "results": the copy's
// rate alone and beside, the workload's slowdown, the joint time of the job,
// medians and ranges, and whether the copies' data arrived. A workload whose
// ways' joint times put a way other than the fastest alone first, with ranges
// that do not meet, adds one record of "findings".
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>
#include <xfer/beside/copy_ways.hpp>
#include <xfer/core/study.hpp>

namespace xfer::beside {

struct options {
  std::vector<std::string> workloads;  // empty: every workload of the sides
  std::vector<std::string> ways;       // empty: every way (copy_ways.hpp)
  std::string direction = "h2d";       // h2d | d2h
  std::size_t block_bytes = std::size_t{16} << 10;
  std::size_t blocks = 4096;  // a copy step moves blocks x block_bytes, whatever the way
  std::size_t work_bytes = std::size_t{256} << 20;  // cpu-memory's array
  long long threads = 0;  // the workload's team; 0: every CPU this process may use
  double seconds = 0.25;  // each phase of a round
  long long rounds = 5;

  // Throws usage_error naming the bad value (a workload not among
  // `workload_names`, an unknown way or direction, a size of 0, rounds or
  // threads out of range, seconds not in (0, 60]).
  void check(const std::vector<std::string>& workload_names) const;
};

// What a backend hands the study: the steps the ways run over, and the
// workloads that can run beside them. host_sides(): the host's steps (host
// memory standing in for the device's) and the CPU workloads; a GPU
// backend's adds its own (xfer/beside/cuda_sides.hpp).
struct sides {
  std::string backend;  // "host", "cuda-rt": what the file's config names
  std::unique_ptr<mem::device_step> contiguous;
  std::unique_ptr<mem::block_step> blocks;
  std::vector<std::string> workloads;  // every workload's name, in the default order
  // The workload `name` (one of `workloads`) for these options.
  std::function<std::unique_ptr<activity>(const std::string& name, const options& o, unsigned threads)> make_workload;
};
sides host_sides();

class beside_study final : public study {
 public:
  beside_study(options o, sides s);  // checks o
  study_info info() const override;
  void run(study_context& context) override;

 private:
  options o_;
  sides sides_;
  copy_shape shape_;
  unsigned threads_;
  std::vector<std::unique_ptr<activity>> kept_;  // the sides of a point left behind (run())
};

}  // namespace xfer::beside
