#pragma once
// Fleet mode's protocol: this process is one rank; it measures the health set
// on its device, first one device of each node at a time ("alone"), then with
// every rank at once ("together"), --repeat times each, meeting the others at
// barriers with a deadline; rank 0 merges the ranks' reports, judges them
// (core/fleet.hpp) and writes the fleet's file. The CLI maps its options to a
// selection and calls run(); the transport is chosen here (comm.hpp).
#include <atomic>
#include <functional>
#include <string>
#include <vector>
#include <xfer/core/fleet.hpp>
#include <xfer/core/backend.hpp>
#include <xfer/core/plan.hpp>
#include <xfer/core/runner.hpp>

namespace xfer::fleet {

struct selection {
  std::vector<std::string> backends;  // at most one; empty: the first with a GPU, else host
  std::string size = "256M";          // bytes per bandwidth transfer (parse_size), at least 4K
  measure_options measure = [] {
    measure_options o;
    o.max_time_s = default_max_time_s;
    o.target_ci = fleet::target_ci;
    return o;
  }();
  double rank_timeout_s = 300;  // a phase, and rank 0's wait for the reports
  std::string baseline;         // a known-good fleet file, or empty
  thresholds judge;
  bool alone = true;  // false: only the together phase
  int repeat = 3;
  int host_devices = 1;  // recorded in what every rank must share
  std::string out_dir;   // one file per rank instead of meeting over MPI
  std::string json;      // rank 0's fleet file (- for stdout)
};

// A seam for tests of the fault paths: called on every rank at the start of the together phase
// with its rank, --rank-timeout and the stop flag. The product sets none; tests/cli's
// xferbench-fleet-faults (the tool plus fleet_fault_seam.cpp) sets one that ends or hangs a rank.
using fault_hook = std::function<void(int rank, double rank_timeout_s, const std::atomic<bool>& stop)>;
void set_fault_hook(fault_hook hook);

// Runs this rank's part; returns the process's exit code (core/fleet.hpp's
// exit_*; usage errors said once, by rank 0). `backends` is called once the
// ranks have met (after MPI_Init); `context` starts the result file.
int run(const selection& s, const std::function<std::vector<backend_entry>()>& backends, run_context context);

class comm;
// The same over a transport given (tests give one of their own); run() above
// chooses it (comm.hpp: choose_comm).
int run(const selection& s, comm& c, const std::function<std::vector<backend_entry>()>& backends, run_context context);

// The rank files of `--out-dir dir` merged and judged, as rank 0 judges the
// ranks over MPI (the judging options and --baseline from `s`), written to
// s.json (default dir/fleet.json); returns the fleet's exit code, or
// exit_usage for no or unreadable rank files.
int merge_dir(const std::string& dir, const selection& s);

}  // namespace xfer::fleet
