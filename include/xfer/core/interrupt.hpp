#pragma once
// SIGINT (Ctrl-C), SIGTERM (kill, a batch system's time limit) and SIGHUP (a
// closed terminal or ssh session) all turn into one flag the runners poll, so
// a stopped run still writes the points it completed and exits 128 + the
// signal, as a shell reports a process the signal ended.
//
// A second signal does not kill: the point under way still comes back and
// what is done is written. A signal ignored when the process started (nohup,
// a background job of a script) stays ignored.
#include <atomic>

namespace xfer {

// Installs the handlers (idempotent) and returns the flag they set.
std::atomic<bool>& install_interrupt_flag();

// The signal that first set the flag; 0 before any (or when the flag was set
// directly, as tests do).
int interrupt_signal();

// 128 + interrupt_signal(); 130 (SIGINT's) when the flag was set directly.
int interrupted_exit_code();

}  // namespace xfer
