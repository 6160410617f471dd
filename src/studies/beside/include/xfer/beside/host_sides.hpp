#pragma once
// The host's sides of `xferbench beside`: workloads a program runs on its
// CPUs, and the ways of copying that take CPU time from them. On the host
// backend every copy is CPU work (its "device" memory is host memory), so
// this half measures what the staged copier's threads and a plain memcpy take
// from a program's own thread team; it runs anywhere, CI included.
#include <cstddef>
#include <memory>
#include <string>
#include <vector>
#include <xfer/beside/measure.hpp>

namespace xfer::beside {

// A copy way: an activity whose steps move bytes, and that can say whether
// what it moved arrived intact.
class copy_side : public activity {
 public:
  // After the run: empty where the destination holds the source's bytes,
  // else what differs.
  virtual std::string check() = 0;
};

// Workloads: a team of `threads` CPU threads, each step one pass of each.
//   cpu-compute  dependent multiply-adds in registers (no memory traffic):
//                what the copy's threads take from a compute-bound program;
//   cpu-memory   each thread reads its slice of `bytes` (summing it): what
//                they take from a memory-bound one, and it from them.
std::vector<std::string> host_workload_names();  // {"cpu-compute", "cpu-memory"}
// Throws std::invalid_argument naming the workload where it is not one of them.
std::unique_ptr<activity> make_host_workload(const std::string& name, unsigned threads, std::size_t bytes);

// Copy ways, pageable host memory to "device" (host) memory, `bytes` a step:
//   memcpy  one std::memcpy on the calling thread;
//   staged  libxfer's staged copier over the host step, its own threads.
std::vector<std::string> host_way_names();  // {"memcpy", "staged"}
std::unique_ptr<copy_side> make_host_way(const std::string& name, std::size_t bytes);

}  // namespace xfer::beside
