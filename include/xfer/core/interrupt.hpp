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

// Call first thing in main(): blocks the stop signals in the main thread, so
// every thread started from then on (a driver's, an OpenCL runtime's) inherits
// the block and never takes them. A signal sent meanwhile waits.
void hold_stop_signals();
// Lets the main thread take them again with their default action (commands
// that never poll the flag: list, info).
void release_stop_signals();

// Installs the handlers (idempotent), unblocks the stop signals in the
// calling thread, and returns the flag they set.
std::atomic<bool>& install_interrupt_flag();

// How many stop signals have arrived so far (a wait that must end at the next
// one compares it with its value when the wait began).
int stop_signals_seen();

// The signal that first set the flag; 0 before any (or when the flag was set
// directly, as tests do).
int interrupt_signal();

// Sets the flag as signal `sig` would, without one being sent: the console's
// reader went away (`xferbench sweep | head`; SIGPIPE itself is ignored, so
// that it cannot end the process before the completed points are written).
void stop_as_if(int sig);
// 128 + interrupt_signal(); 130 (SIGINT's) when the flag was set directly.
int interrupted_exit_code();

// For threads the program starts to do work (a point's thread, a thread
// team's helpers): the stop signals then always reach the main thread, one
// at a time in the order sent, so the first one sent decides the exit code.
void block_stop_signals_in_this_thread();

}  // namespace xfer
