#pragma once
// The bill of a traced program: its transfers grouped by what they are, what
// each group cost, what it would cost done the better way on this machine
// (priced from its measured curves), and the fixes ranked by the time they save.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>
#include <xfer/trace/capture.hpp>
#include <xfer/trace/machine_curves.hpp>

namespace xfer::trace {

// A change the program could make, priced on this machine.
struct what_if {
  std::string fix;          // pin | staged | blocks
  std::string advice;       // what to do, in words
  std::string call_to_use;  // the call that does it
  std::string route, host_memory;  // the curve it is priced with
  std::optional<double> predicted_s, saving_s;
  std::string not_priced;  // why there is no price (no such curve, a size outside it)
};

struct group {
  int id = 0;
  std::string op, direction, host_memory, call;
  bool async = false;
  unsigned device = 0, stream = 0;
  std::uint64_t size_class = 0;  // the power of two at or below each transfer's bytes
  std::size_t count = 0;
  std::uint64_t bytes = 0;
  double device_s = 0, host_s = 0, cost_s = 0, overlap_s = 0;
  std::vector<what_if> what_ifs;
  std::vector<std::size_t> members;  // indexes into the bill's transfers
};

struct ranked_fix {
  int rank = 0;
  int group = 0;
  what_if fix;
  double cost_s = 0;
};

struct bill {
  std::vector<transfer> transfers;  // every process's, in start order within each
  std::vector<group> groups;        // largest cost first
  std::vector<ranked_fix> fixes;    // each group's best fix that saves enough, largest saving first
  double wall_s = 0;
  double cost_s = 0;
  std::uint64_t bytes = 0;
};

// A fix is named only when it saves more than this share of its group's
// cost: less is within what two runs of the same program differ by.
inline constexpr double min_saving_share = 0.05;

std::uint64_t size_class_of(std::uint64_t bytes);

bill make_bill(const std::vector<process_capture>& processes, const machine_curves& machine, double wall_s);

}  // namespace xfer::trace
