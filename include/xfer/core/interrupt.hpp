#pragma once
// SIGINT turns into a flag the runner polls, so an interrupted sweep still
// writes the points it completed.
#include <atomic>

namespace xfer {

// Installs the SIGINT handler (idempotent) and returns the flag it sets.
std::atomic<bool>& install_interrupt_flag();

}  // namespace xfer
