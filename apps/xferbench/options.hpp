#pragma once
// The options several commands share, each declared once: one name, one
// range, one default (core's measure_options; fleet mode's own in
// core/fleet.hpp, with why). Scalar options take the last value given, so
// scripts can set defaults that a user's own arguments override; an output
// (--json, --csv) given twice is refused instead, as a second file the user
// asked for would silently not be written.
#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>
#include <xfer/core/runner.hpp>

namespace xfer::cli {

// An empty value (`--json ''`, a script's unset variable) is refused, naming
// the option, rather than read as "not given": that ran the default sweep
// for `--sizes ''` and wrote no file for `--json ''`, silently.
CLI::Validator not_empty();
// A count bound to an unsigned type: CLI11 reads "-5" as 2^64 - 5, so the
// range check later said "--runs 18446744073709551611"; refused here instead.
CLI::Validator not_negative();
// A number within a range, parsed by the one parser of numbers
// (xfer/mem/numbers.hpp): 1e400, 1e-400, inf and nan are refused with the
// range in words. Open ends are excluded.
CLI::Validator number_in(double lo, double hi, bool lo_open, bool hi_open, const char* words);
// A size (parse_size) or a list of sizes (parse_size_list), read as parsed so
// that the message names the option; core's parser is the rule.
CLI::Validator size_value();
CLI::Validator size_list();

// How a point is sampled: unset options keep the command's defaults.
struct measure_args {
  std::optional<double> target_ci, max_time, warmup;
  double watchdog = -1;  // seconds a point may take; -1: derived from its size, 0: off (add_watchdog_option)
  bool no_verify = false, no_affinity = false;
};
// `base` with what was given: each option was checked against its range when parsed.
measure_options measure_from(const measure_args& a, measure_options base);

void add_target_ci_option(CLI::App& cmd, std::optional<double>& v);
void add_max_time_option(CLI::App& cmd, std::optional<double>& v, double default_s, const std::string& more = {});
void add_warmup_option(CLI::App& cmd, std::optional<double>& v);
// --watchdog: a sweep's bound on a point (derived from its size and
// --max-time), or a study's (cpu, alloc, app) on a point without progress.
enum class watchdog_for { sweep, study };
void add_watchdog_option(CLI::App& cmd, double& v, watchdog_for what = watchdog_for::sweep);
void add_no_verify_flag(CLI::App& cmd, bool& v);
void add_no_affinity_flag(CLI::App& cmd, bool& v);

// -b,--backend: names, comma-separated or repeated.
void add_backends_option(CLI::App& cmd, std::vector<std::string>& v, const std::string& help);
// --device: indices, comma-separated.
void add_devices_option(CLI::App& cmd, std::vector<int>& v, const std::string& help);
// --sizes: a comma-separated list with binary suffixes (parse_size_list).
void add_sizes_option(CLI::App& cmd, std::string& v, const std::string& help);
// --threads: the memcpy-mt route's workers (0: one per CPU).
void add_threads_option(CLI::App& cmd, unsigned& v);
// --host-devices: how many stand-in devices the host backend shows.
void add_host_devices_option(CLI::App& cmd, int& n);
// --json FILE (- for stdout); `what` names the file's schema.
void add_json_option(CLI::App& cmd, std::string& v, const std::string& what);
void add_csv_option(CLI::App& cmd, std::string& v);
void add_quiet_flag(CLI::App& cmd, bool& v);

}  // namespace xfer::cli
