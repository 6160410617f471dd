#pragma once
// One command's run, the same for every command: its context (tool, time,
// system, configuration), the reporter chain its results go through (the
// link-ceiling check, a progress line, the console table, the JSON and CSV
// files), the stop signals, and the exit code its outcome maps to.
//
//   session s(context, {.json = "r.json"});   // checks the outputs first
//   auto outcome = s.run(make_plan(entries, selection), measure_options{});
//   return s.finish(outcome);
//
// A command that is not a sweep runs a study (core/study.hpp) the same way:
//   return s.finish(s.run(my_study));
#include <atomic>
#include <iosfwd>
#include <memory>
#include <string>
#include <xfer/core/plan.hpp>
#include <xfer/core/result.hpp>
#include <xfer/core/concurrent.hpp>
#include <xfer/core/runner.hpp>
#include <xfer/core/study.hpp>

namespace xfer {

class reporter;

// Exit codes of every command (DESIGN.md, "Errors and bad input"). An
// interrupted run exits with interrupted_exit_code() (core/interrupt.hpp):
// 128 + the signal.
inline constexpr int exit_ok = 0;
inline constexpr int exit_failure = 1;  // a point failed, a driver is missing, an output could not be written
inline constexpr int exit_usage = 2;    // bad input

// The exit code an outcome maps to: 128 + signal when interrupted, 1 when a
// point failed, else 0.
int exit_code_of(const sweep_outcome& o);

struct session_options {
  std::string json, csv;  // result files ("-": standard output); empty: none
  bool progress = true;   // a progress line on stderr, when stderr is a terminal
  bool verbose = false;   // a console row per point; otherwise a summary table per backend at the end
  bool brief = false;     // the summary as one line per backend and device (scripts/run.sh: a console that fits)
  // A study's bound on a point without progress (study_context::watched), as
  // --watchdog gives it: negative derives it from the point, 0 lifts it.
  double watchdog_s = -1;
};

class session {
 public:
  // Checks the outputs (usage_error for an unwritable one, or two that are the
  // same file) before anything is measured.
  session(run_context context, session_options options);
  ~session();
  session(const session&) = delete;
  session& operator=(const session&) = delete;

  const run_context& context() const { return context_; }
  // Reports the context and hands the stop signals to the run (from here on
  // SIGINT, SIGTERM and SIGHUP end it with what it completed). Idempotent.
  void start();
  // Set by a stop signal once start() ran.
  const std::atomic<bool>& stop() const;
  // Where results go: link-ceiling check, progress line, console, files.
  reporter& sink();
  // Where a command's human-readable text goes: stdout, or stderr when a
  // result file is written to stdout.
  std::ostream& console();

  // How a plan's devices are driven: one point at a time (a sweep), the
  // devices of each backend all at once (core/concurrent.hpp), or each alone
  // and then all at once.
  enum class devices_mode { alone, together, alone_then_together };
  // start(), then every planned point of every backend in order; stops
  // between points on a stop signal.
  sweep_outcome run(const plan& p, const measure_options& m, devices_mode mode = devices_mode::alone);
  // start(), the study's file shape, then the study; its records are counted
  // by status (a failed one makes finish() return exit_failure).
  sweep_outcome run(study& st);
  // Finalizes the reporters (writing the files), says where they went on
  // stderr, and returns exit_code_of(o). When a backend was abandoned (a
  // thread is stuck inside it) it leaves the process right after writing:
  // destroying that backend would wait on the stuck thread forever.
  int finish(const sweep_outcome& o);

 private:
  class chain;
  run_context context_;
  session_options options_;
  std::unique_ptr<chain> chain_;
  bool started_ = false;
  const std::atomic<bool>* stop_ = nullptr;
};

}  // namespace xfer
