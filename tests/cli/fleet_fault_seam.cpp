// The fleet's fault seam (xfer/fleet/run.hpp) set for tests/cli/test_fleet.py, linked only into
// the test build of the tool, xferbench-fleet-faults: XFER_FLEET_FAULT=die:R ends rank R at the
// start of the together phase, hang:R makes it sleep there. The hang obeys the tool's own bounds:
// a stop signal ends the rank as a signal ends any command, and after ten --rank-timeout (long
// past the others' giving up on it) it ends as a rank its launcher killed.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <xfer/core/interrupt.hpp>
#include <xfer/fleet/run.hpp>

namespace {

void fault(int rank, double rank_timeout_s, const std::atomic<bool>& stop) {
  const char* f = std::getenv("XFER_FLEET_FAULT");
  if (!f) return;
  const std::string s = f;
  const auto colon = s.find(':');
  if (colon == std::string::npos || std::to_string(rank) != s.substr(colon + 1)) return;
  if (s.substr(0, colon) == "die") std::_Exit(9);
  if (s.substr(0, colon) == "hang") {
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(10 * rank_timeout_s);
    while (!stop.load() && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::fflush(nullptr);
    std::_Exit(stop.load() ? xfer::interrupted_exit_code() : 9);
  }
}

// Set before main runs: the tool's own main is unchanged.
const bool installed = [] {
  xfer::fleet::set_fault_hook(fault);
  return true;
}();

}  // namespace
