#pragma once
// `xferbench beside` (issue 53): each copy way beside each workload, through
// the session (core/study.hpp). Per workload it sizes one job (the copy's
// bytes that the fastest way alone moves in --seconds, the work the workload
// alone does in --seconds), then runs --rounds rounds, the ways in a rotated
// order each round; per (workload, way) one record of "results": the copy's
// rate alone and beside, the workload's slowdown, the joint time of the job,
// medians and ranges, and whether the copies' data arrived. A workload whose
// ways' joint times put a way other than the fastest alone first, with ranges
// that do not meet, adds one record of "findings".
#include <cstddef>
#include <string>
#include <vector>
#include <xfer/core/study.hpp>

namespace xfer::beside {

struct options {
  std::vector<std::string> workloads;  // empty: every host workload
  std::vector<std::string> ways;       // empty: every host way
  std::size_t copy_bytes = std::size_t{64} << 20;  // one copy step
  std::size_t work_bytes = std::size_t{256} << 20;  // cpu-memory's array
  long long threads = 0;  // the workload's team; 0: every CPU this process may use
  double seconds = 0.5;   // each phase of a round
  long long rounds = 5;

  // Throws usage_error naming the bad value (an unknown workload or way, a
  // size of 0, rounds or threads out of range, seconds not in (0, 60]).
  void check() const;
};

class beside_study final : public study {
 public:
  explicit beside_study(options o);  // checks o
  study_info info() const override;
  void run(study_context& context) override;

 private:
  options o_;
  unsigned threads_;
};

}  // namespace xfer::beside
