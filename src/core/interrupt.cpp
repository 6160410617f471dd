#include <csignal>
#include <xfer/core/interrupt.hpp>

namespace xfer {
namespace {

std::atomic<bool> interrupted{false};

extern "C" void on_sigint(int) {
  interrupted.store(true);
  // A second Ctrl-C kills at once, for a point that will not come back.
  std::signal(SIGINT, SIG_DFL);
}

}  // namespace

std::atomic<bool>& install_interrupt_flag() {
  struct sigaction sa {};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  return interrupted;
}

}  // namespace xfer
