#pragma once
// Each subcommand: its options (registered on a CLI11 subcommand) and a run()
// that returns the process exit code. Errors propagate as exceptions to main.
#include <optional>
#include <string>
#include <vector>
#include <xfer/core/plan.hpp>
#include <xfer/core/session.hpp>
#include <xfer/fleet/run.hpp>

#include "options.hpp"

namespace xfer::cli {

// Exit codes: core's (session.hpp), the same for every command.
using xfer::exit_ok;
using xfer::exit_failure;
using xfer::exit_usage;

struct sweep_args {
  // What the options name directly (full: false, the overview, unless --full);
  // the sizes and directions are parsed from the options below.
  selection sel;
  std::vector<std::string> directions;
  // Unset options take core's defaults (measure_options, default_sizes), or
  // --quick's where it is given.
  std::optional<std::string> min, max;
  std::string sizes;
  bool quick = false, dense = false;
  measure_args measure;
  std::optional<double> budget;
  unsigned threads = 0;
  std::string alignment = "4K";
  std::size_t unaligned_offset = 16;
  bool quiet = false, verbose = false;
  bool together = false, together_only = false;  // every selected device of a backend at once
  int host_devices = 1;
  std::string json, csv;
};
void add_sweep_options(CLI::App& cmd, sweep_args& args);
int run_sweep_command(const sweep_args& args, const std::vector<std::string>& argv);


struct peer_args {
  std::vector<std::string> backends;
  std::vector<int> devices;
  std::string sizes;
  bool quick = false, quiet = false;
  measure_args measure;
  int host_devices = 1;
  std::string json, csv;
};
void add_peer_options(CLI::App& cmd, peer_args& args);
int run_peer_command(const peer_args& args, const std::vector<std::string>& argv);

// Fleet mode's options map onto its selection (xfer/fleet/run.hpp) as parsed.
struct fleet_args {
  fleet::selection sel;
  std::optional<double> max_time;
  bool no_alone = false;
  std::string merge;  // a directory of rank files to merge and judge instead of measuring
};
void add_fleet_options(CLI::App& cmd, fleet_args& args);
int run_fleet_command(fleet_args args, const std::vector<std::string>& argv);

struct alloc_args {
  std::vector<std::string> strategies;
  std::string sizes;
  std::size_t runs = 30, repeat = 3, iterations = 20000, max_live = 256;
  std::string max_block = "1M";
  std::uint64_t seed = 1;
  bool quick = false;
  std::string json;
};
void add_alloc_options(CLI::App& cmd, alloc_args& args);
int run_alloc_command(const alloc_args& args, const std::vector<std::string>& argv);

struct app_args {
  std::vector<std::string> backends, strategies;
  int device = 0;
  std::string size = "24M", sizes, baseline = "pageable-unaligned";
  std::size_t repeat = 3;
  std::string json;
};
// Registers `app` with its one application so far, `vadd`; returns the vadd subcommand.
CLI::App* add_app_options(CLI::App& app_cmd, app_args& args);
int run_app_command(const app_args& args, const std::vector<std::string>& argv);

}  // namespace xfer::cli
