// xferbench peer: the device-to-device matrix of each selected backend.
#include <fmt/format.h>
#include <memory>
#include <xfer/backends/registry.hpp>
#include <xfer/core/describe.hpp>
#include <xfer/core/errors.hpp>
#include <xfer/core/peer_matrix.hpp>
#include <xfer/core/plan.hpp>
#include <xfer/core/size.hpp>
#include <xfer/core/system_probe.hpp>

#include "commands.hpp"
#include "options.hpp"

namespace xfer::cli {

struct peer_args {
  std::vector<std::string> backends;
  std::vector<int> devices;
  std::string sizes;
  bool quick = false, quiet = false;
  measure_args measure;
  int host_devices = 1;
  std::string json, csv;
};

static int run_peer(const peer_args& a, const std::vector<std::string>& argv) {
  const measure_options opts = measure_from(a.measure, a.quick ? measure_options::quick() : measure_options{});
  const std::vector<std::uint64_t> sizes = a.sizes.empty() ? std::vector<std::uint64_t>{256ull << 20} : parse_size_list(a.sizes);
  check_device_indices(a.devices);  // before any backend is made
  const system_info sys = probe_system();
  check_sizes_fit(sizes, sys.memory_bytes);
  backend_options bopts;
  check_host_devices(a.host_devices, a.backends);
  bopts.host_devices = a.host_devices;
  auto entries = make_backends(bopts);
  const auto runs = select_peer_devices(select_backends(entries, a.backends), a.devices);

  run_context ctx = make_context(sys, argv);
  std::vector<std::string> names;
  for (const auto& r : runs) names.push_back(add_backend(ctx, *r.impl));
  ctx.config["command"] = "peer";
  ctx.config["backends"] = names;
  ctx.config["sizes"] = sizes;
  ctx.config["max_time_s"] = opts.max_time_s;
  ctx.config["verify"] = opts.verify;
  session run(std::move(ctx), {.json = a.json, .csv = a.csv, .progress = !a.quiet, .verbose = false});
  run.start();
  std::vector<point_result> results;
  const sweep_outcome all = run_peer_matrices(runs, sizes, opts, run.sink(), run.stop(), results);
  run.console() << peer_matrix_text(results);
  return run.finish(all);
}

command add_peer_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("peer", "device-to-device copies between every pair of devices: the peer matrix");
  auto a = std::make_shared<peer_args>();
  cmd->footer(
      "Examples:\n"
      "  xferbench peer -b cuda-rt                  every GPU to every GPU, 256 MiB copies\n"
      "  xferbench peer -b opencl:pocl --sizes 1M   (POCL_DEVICES='pthread pthread' for two devices)\n"
      "Each cell is a copy from the row's device memory to the column's; the diagonal stays on one device.\n"
      "Each pair says how it travelled: peer access, or staged via host where the API has no direct path.\n"
      "Exit codes: 0 ok or skipped, 1 a copy failed or a backend is unavailable, 2 bad input,\n"
      "128 + signal when interrupted.");
  add_backends_option(*cmd, a->backends, "backends (default: every available one)");
  add_devices_option(*cmd, a->devices, "device indices (default: all of each backend)");
  add_sizes_option(*cmd, a->sizes, "comma-separated copy sizes (default: 256M)");
  cmd->add_flag("--quick", a->quick, "coarse and fast: 10 ms a point, 5% CI target");
  add_max_time_option(*cmd, a->measure.max_time, measure_options{}.max_time_s);
  add_host_devices_option(*cmd, a->host_devices);
  add_no_verify_flag(*cmd, a->measure.no_verify);
  add_json_option(*cmd, a->json, "the result file (schema xferbench/result/v2)");
  add_csv_option(*cmd, a->csv);
  add_quiet_flag(*cmd, a->quiet);
  return {cmd, [a](const std::vector<std::string>& argv) { return run_peer(*a, argv); }};
}

}  // namespace xfer::cli
