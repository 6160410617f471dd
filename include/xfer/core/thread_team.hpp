#pragma once
// The benchmark's thread team: libxfer's (xfer/mem/thread_team.hpp) with its
// helpers blocking the stop signals, which are the main thread's to take
// (core/interrupt.hpp).
#include <xfer/core/interrupt.hpp>
#include <xfer/mem/thread_team.hpp>

namespace xfer {

class thread_team : public mem::thread_team {
 public:
  explicit thread_team(unsigned size) : mem::thread_team(size, block_stop_signals_in_this_thread) {}
};

}  // namespace xfer
