#pragma once
// `xferbench cpu`: the CPU's side (seed 004): writing into and reading from
// regular, pinned, write-combined and uncached memory, first use against
// steady state.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>
#include <xfer/cpu/options.hpp>

namespace xfer::cli {

struct cpu_args {
  cpu::options study;  // checked by the study (cpu::options::check)
  std::string json;
  bool quiet = false;
};
void add_cpu_options(CLI::App& cmd, cpu_args& args);
// Throws usage_error for bad input (before measuring anything); returns 0, 1
// (a point failed) or 128 + the signal (interrupted; completed points are still written).
int run_cpu_command(const cpu_args& args, const std::vector<std::string>& argv);

}  // namespace xfer::cli
