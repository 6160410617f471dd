#pragma once
// A study: a command that is not a transfer sweep (the allocator study, the
// vector-add application, the CPU's side) but reports the same way. It says
// what its result file holds (study_info), then hands each entry to the
// session as a record; the session's reporters put the entries in the file
// (through the same atomic write as a sweep's), show their text on the
// console, and count their statuses into the exit code.
//
//   session s(context, {.json = "alloc.json"});
//   alloc_study::study st(options, backends);
//   return s.finish(s.run(st));
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>
#include <xfer/core/result.hpp>  // point_status
#include <xfer/core/value.hpp>

namespace xfer {

// One entry of a study's result file and/or one piece of its console table.
struct record {
  // The top-level array of the result file the entry joins ("results",
  // "cost", ...); empty: console text only, nothing in the file.
  std::string section;
  // What the run's exit code sees: a failed record makes the command exit 1.
  // The file's own "status" field, where a section has one, is in `fields`.
  point_status status = point_status::ok;
  value fields;      // the entry as the file holds it (an object)
  std::string text;  // what the console shows for it (a row, a heading, a table); may be empty
};

// What a study's result file holds besides the run's context (tool, time,
// system, command line) that every file starts with.
struct study_info {
  std::string schema;                 // "xferbench/alloc/v2"
  std::vector<std::string> sections;  // its arrays, in order; present (empty) even when nothing joined them
  value config;                       // the parameters it resolved to, added to the file's "config"
  value fields;                       // other top-level members (the cpu study's "conventions")
};

// What a study's point calls at each step it completes (a run, a repeat): its
// sign of progress to the watchdog.
using beat_fn = std::function<void()>;

// A study's point run under the watchdog (study_context::watched).
template <class T>
struct watched_point {
  std::optional<T> result;  // empty: its thread was left behind where it hung
  std::string reason;       // why, where the watchdog left it; empty where a stop request did
};

// What a running study reports through, given by the session.
class study_context {
 public:
  virtual ~study_context() = default;
  virtual void report(const record& r) = 0;
  // Console text alone (a heading, a table).
  void say(std::string text) { report(record{.section = {}, .status = point_status::ok, .fields = {}, .text = std::move(text)}); }
  // Set by SIGINT, SIGTERM or SIGHUP: finish the item at hand and return.
  virtual const std::atomic<bool>& stop() const = 0;
  bool stopped() const { return stop().load(); }
  // A progress line (when the session shows one): item `done` of `total` is next.
  virtual void progress(std::size_t done, std::size_t total, const std::string& what) = 0;

  // One point of the study under the watchdog (core/watchdog.hpp), as a
  // sweep's point runs: `job` runs on a thread of its own and calls its beat
  // at each step; a point that goes longer than the bound without a beat
  // (--watchdog, or 30 s + `step_bytes` at 20 MB/s) is left behind where it
  // hangs, and the run ends by leaving the process once the results are
  // written (session::finish), so nothing it uses is ever destroyed. `job`
  // must own what it writes and capture by reference only what the study
  // keeps for the whole run; what it throws is rethrown here.
  template <class T>
  watched_point<T> watched(std::uint64_t step_bytes, std::function<T(const beat_fn&)> job) {
    // Shared: a thread left behind still writes them.
    auto slot = std::make_shared<std::optional<T>>();
    auto error = std::make_shared<std::exception_ptr>();
    auto left = run_point(step_bytes, [slot, error, job = std::move(job)](const beat_fn& beat) {
      try {
        *slot = job(beat);
      } catch (...) {
        *error = std::current_exception();
      }
    });
    if (left) return {std::nullopt, std::move(*left)};
    if (*error) std::rethrow_exception(*error);
    return {std::move(*slot), {}};
  }

 protected:
  // Runs `job` and returns nullopt once it ended, or leaves it behind and
  // returns why (empty where a stop request left it). This one runs it in
  // place, unwatched: a context with no watchdog (a test's); the session's
  // watches it.
  virtual std::optional<std::string> run_point(std::uint64_t step_bytes, std::function<void(const beat_fn&)> job) {
    (void)step_bytes;
    job([] {});
    return std::nullopt;
  }
};

// `context`'s watched(), or the point in place where a library caller runs a
// study's loop without one.
template <class T>
watched_point<T> run_watched_point(study_context* context, std::uint64_t step_bytes,
                                   std::function<T(const beat_fn&)> job) {
  if (context) return context->watched<T>(step_bytes, std::move(job));
  return {job([] {}), {}};
}

// A new study: a folder src/studies/<name>/ with a class implementing this,
// its command in apps/xferbench/ declaring options and calling it; it depends
// on core and mem only (a backend it needs is handed in by the CLI).
class study {
 public:
  virtual ~study() = default;
  virtual study_info info() const = 0;
  // Reports every item; an item that cannot run is a skipped record, one that
  // breaks a failed record, so only a fault of the study itself throws.
  virtual void run(study_context& context) = 0;
};

}  // namespace xfer
