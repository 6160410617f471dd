#pragma once
// The CPU workloads of `xferbench beside`: a program's own thread team, which
// the copy's CPU threads (the staged copier's, the pack way's) compete with.
// They run anywhere, CI included.
#include <cstddef>
#include <memory>
#include <string>
#include <vector>
#include <xfer/beside/measure.hpp>

namespace xfer::beside {

// Workloads: a team of `threads` CPU threads, each step one pass of each.
//   cpu-compute  dependent multiply-adds in registers (no memory traffic):
//                what the copy's threads take from a compute-bound program;
//   cpu-memory   each thread reads its slice of `bytes` (summing it): what
//                they take from a memory-bound one, and it from them.
std::vector<std::string> cpu_workload_names();  // {"cpu-compute", "cpu-memory"}
// Throws std::invalid_argument naming the workload where it is not one of them.
std::unique_ptr<activity> make_cpu_workload(const std::string& name, unsigned threads, std::size_t bytes);

}  // namespace xfer::beside
