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
  bool full = false;  // every kind and direction, not the overview's
  std::optional<double> target_ci, max_time, warmup, budget;
  double watchdog = -1;  // seconds a point may take; -1: derived from its size, 0: off
  unsigned threads = 0;
  std::string alignment = "4K";
  std::size_t unaligned_offset = 16;
  bool no_verify = false, quiet = false, verbose = false, no_affinity = false;
  bool together = false, together_only = false;  // every selected device of a backend at once
  int host_devices = 1;
  std::string json, csv;
};
void add_sweep_options(CLI::App& cmd, sweep_args& args);
int run_sweep_command(const sweep_args& args, const std::vector<std::string>& argv);

struct list_args {
  unsigned threads = 0;
  int host_devices = 1;
};

// --host-devices: how many stand-in devices the host backend shows.
void add_host_devices_option(CLI::App& cmd, int& n);
int run_list_command(const list_args& args);

struct peer_args {
  std::vector<std::string> backends;
  std::vector<int> devices;
  std::string sizes;
  bool quick = false, no_verify = false, quiet = false;
  std::optional<double> max_time;
  int host_devices = 1;
  std::string json, csv;
};
void add_peer_options(CLI::App& cmd, peer_args& args);
int run_peer_command(const peer_args& args, const std::vector<std::string>& argv);

struct fleet_args {
  std::string backend;
  std::string size = "256M";
  double max_time = 0.1;
  double rank_timeout = 300;
  std::string baseline;
  double mad_k = 3, tolerance = 0.10, min_ceiling = 0.5;
  bool no_alone = false;
  int repeat = 3;
  int host_devices = 1;
  std::string out_dir, json;
};
void add_fleet_options(CLI::App& cmd, fleet_args& args);
int run_fleet_command(const fleet_args& args, const std::vector<std::string>& argv);

struct info_args {
  bool json = false;
};
int run_info_command(const info_args& args);

}  // namespace xfer::cli
