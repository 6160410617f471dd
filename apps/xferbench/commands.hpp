#pragma once
// Each subcommand registers itself, with its options, on the tool's CLI::App
// and hands main() what runs it once the command line has parsed; the
// options' values live with that runner. Errors propagate as exceptions to main.
#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>
#include <xfer/core/session.hpp>

namespace xfer::cli {

// Exit codes: core's (session.hpp), the same for every command.
using xfer::exit_ok;
using xfer::exit_failure;
using xfer::exit_usage;

struct command {
  CLI::App* cmd;  // parsed as this subcommand: run it
  // The process exit code; throws usage_error for bad input, before measuring anything.
  std::function<int(const std::vector<std::string>& argv)> run;
};

command add_sweep_command(CLI::App& app);
command add_peer_command(CLI::App& app);
// Fleet mode's options map onto its selection (xfer/fleet/run.hpp) as parsed.
command add_fleet_command(CLI::App& app);
// The CPU's side (seed 004): writing into and reading from regular, pinned,
// write-combined and uncached memory, first use against steady state.
command add_cpu_command(CLI::App& app);
command add_alloc_command(CLI::App& app);
// `app` with its one application so far, `vadd`: the command runs as `app vadd`.
command add_app_command(CLI::App& app);
// A copy beside compute: each way of copying beside a workload (xfer/beside/).
command add_beside_command(CLI::App& app);
// A real program's transfers, captured through CUPTI and priced on this machine (xfer/trace/).
command add_trace_command(CLI::App& app);

}  // namespace xfer::cli
