#pragma once
// `xferbench cpu`: the CPU's side (seed 004): writing into and reading from
// regular, pinned, write-combined and uncached memory, first use against
// steady state.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace xfer::cli {

struct cpu_args {
  std::vector<std::string> kinds, ops, methods;  // empty: all
  std::string sizes = "32M";
  long long runs = 20;
  std::vector<long long> threads{1};  // signed, so "-1" gets our message rather than a wrap-around
  std::string json;
  bool quiet = false;
};
void add_cpu_options(CLI::App& cmd, cpu_args& args);
// Throws usage_error for bad input (before measuring anything); returns 0, 1
// (a point failed) or 128 + the signal (interrupted; completed points are still written).
int run_cpu_command(const cpu_args& args, const std::vector<std::string>& argv);

}  // namespace xfer::cli
