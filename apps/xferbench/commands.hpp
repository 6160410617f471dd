#pragma once
// Each subcommand: its options (registered on a CLI11 subcommand) and a run()
// that returns the process exit code. Errors propagate as exceptions to main.
#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>
#include <xfer/core/session.hpp>

namespace xfer::cli {

// Exit codes: core's (session.hpp), the same for every command.
using xfer::exit_ok;
using xfer::exit_failure;
using xfer::exit_usage;

// An empty value (`--json ''`, a script's unset variable) is refused, naming
// the option, rather than read as "not given": that ran the default sweep
// for `--sizes ''` and wrote no file for `--json ''`, silently.
inline CLI::Validator not_empty() {
  return CLI::Validator([](std::string& v) { return v.empty() ? std::string("the value is empty") : std::string(); },
                        "", "not empty");
}

struct sweep_args {
  std::vector<std::string> backends, routes, memory, directions;
  std::vector<int> devices;
  // Unset options take core's defaults (measure_options, default_sizes), or
  // --quick's where it is given.
  std::optional<std::string> min, max;
  std::string sizes;
  bool quick = false;
  bool dense = false;
  std::optional<double> target_ci, max_time, warmup;
  double watchdog = -1;  // seconds a point may take; -1: derived from its size, 0: off
  unsigned threads = 0;
  std::string alignment = "4K";
  std::size_t unaligned_offset = 16;
  bool no_verify = false, quiet = false, verbose = false, no_affinity = false;
  std::string json, csv;
};
void add_sweep_options(CLI::App& cmd, sweep_args& args);
int run_sweep_command(const sweep_args& args, const std::vector<std::string>& argv);

struct list_args {
  unsigned threads = 0;
};
int run_list_command(const list_args& args);

struct info_args {
  bool json = false;
};
int run_info_command(const info_args& args);

}  // namespace xfer::cli
