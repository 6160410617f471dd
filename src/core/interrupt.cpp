#include <cerrno>
#include <csignal>
#include <pthread.h>
#include <unistd.h>
#include <xfer/core/interrupt.hpp>

namespace xfer {
namespace {

constexpr int stop_signals[] = {SIGINT, SIGTERM, SIGHUP};

std::atomic<bool> interrupted{false};
std::atomic<int> first_signal{0};
std::atomic<int> signals_seen{0};

static_assert(std::atomic<int>::is_always_lock_free, "the handler may only touch lock-free atomics");

extern "C" void on_stop_signal(int sig) {
  const int saved_errno = errno;  // write() below must not disturb the code it interrupted
  int none = 0;
  first_signal.compare_exchange_strong(none, sig);
  interrupted.store(true);
  // Once is enough to stop; a second signal is someone waiting. Say what is
  // happening rather than kill the process and lose the completed points.
  if (signals_seen.fetch_add(1) >= 1) {
    static constexpr char note[] =
        "\nxferbench: stopping: the point under way finishes, then the completed points are written\n";
    [[maybe_unused]] const auto n = ::write(STDERR_FILENO, note, sizeof note - 1);
  }
  errno = saved_errno;
}

}  // namespace

std::atomic<bool>& install_interrupt_flag() {
  for (int sig : stop_signals) {
    struct sigaction old {};
    if (::sigaction(sig, nullptr, &old) == 0 && old.sa_handler == SIG_IGN) continue;
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    // The stop signals wait for each other's handler: otherwise a second one
    // arriving at once runs first, nested, and takes "first" from the one sent first.
    sigemptyset(&sa.sa_mask);
    for (int other : stop_signals) sigaddset(&sa.sa_mask, other);
    // Restart interrupted reads and writes: a signal must not turn the
    // console's or the result file's write into a failure.
    sa.sa_flags = SA_RESTART;
    ::sigaction(sig, &sa, nullptr);
  }
  // Only now, with the handlers in place, may this thread take them (any
  // that came while they were held are taken here).
  release_stop_signals();
  return interrupted;
}

int interrupt_signal() { return first_signal.load(); }

int stop_signals_seen() { return signals_seen.load(); }

void stop_as_if(int sig) {
  int none = 0;
  first_signal.compare_exchange_strong(none, sig);
  interrupted.store(true);
}

namespace {
void mask_stop_signals(int how) {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : stop_signals) sigaddset(&set, sig);
  ::pthread_sigmask(how, &set, nullptr);
}
}  // namespace

void block_stop_signals_in_this_thread() { mask_stop_signals(SIG_BLOCK); }
void hold_stop_signals() { mask_stop_signals(SIG_BLOCK); }
void release_stop_signals() { mask_stop_signals(SIG_UNBLOCK); }

int interrupted_exit_code() {
  const int sig = interrupt_signal();
  return 128 + (sig ? sig : SIGINT);
}

}  // namespace xfer
