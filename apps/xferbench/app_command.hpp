#pragma once
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace xfer::cli {

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
