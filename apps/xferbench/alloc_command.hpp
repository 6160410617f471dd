#pragma once
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace xfer::cli {

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

}  // namespace xfer::cli
