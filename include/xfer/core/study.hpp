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
  std::string schema;                 // "xferbench/alloc/v1"
  std::vector<std::string> sections;  // its arrays, in order; present (empty) even when nothing joined them
  value config;                       // the parameters it resolved to, added to the file's "config"
  value fields;                       // other top-level members (the cpu study's "conventions")
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
};

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
