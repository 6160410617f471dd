// xferbench: measures what moving data between host and device memory costs.
#include <csignal>
#include <cstdio>
#include <fmt/format.h>
#include <system_error>
#include <xfer/config.hpp>
#include <xfer/backends/registry.hpp>
#include <xfer/core/describe.hpp>
#include <xfer/core/errors.hpp>
#include <xfer/core/interrupt.hpp>
#include <xfer/core/output_file.hpp>
#include <xfer/core/system_probe.hpp>

#include "commands.hpp"
#include "options.hpp"

int main(int argc, char** argv) {
  using namespace xfer::cli;
  // Before any thread exists: threads the drivers start inherit the block, so
  // SIGINT, SIGTERM and SIGHUP only ever reach this thread, in the order sent.
  xfer::hold_stop_signals();
  // A closed pipe on stdout (`xferbench sweep | head`) is seen as a failed
  // write and handled (session.cpp), not a signal that ends the process and
  // loses the completed points.
  std::signal(SIGPIPE, SIG_IGN);
  CLI::App app{
      "xferbench: bandwidth and latency of every route between host and device memory.\n"
      "Start with `xferbench list` (what this machine offers), then `xferbench sweep`."};
  app.set_version_flag("--version", std::string("xferbench ") + XFER_VERSION);
  app.require_subcommand(1);

  std::vector<command> commands{add_sweep_command(app), add_peer_command(app), add_fleet_command(app)};

  xfer::backend_options list;
  auto* list_cmd = app.add_subcommand("list", "backends, devices, routes and host memory kinds, and why any is unavailable");
  list_cmd->add_option("--threads", list.threads, "threads the memcpy-mt route would use (0 = all CPUs)");
  add_host_devices_option(*list_cmd, list.host_devices);

  bool info_json = false;
  app.add_subcommand("info", "CPU, OS, memory, NUMA nodes, and each accelerator's PCIe link")
      ->add_flag("--json", info_json, "print the system section of a result file instead of text");

  // After list and info, in the order `xferbench --help` lists them.
  for (auto add : {add_cpu_command, add_alloc_command, add_app_command}) commands.push_back(add(app));

  bool stdout_failed = false;  // already reported, by the command's own failure
  const auto run = [&]() -> int {
    try {
      app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
      if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
      fmt::print(stderr, "xferbench: error: {}\n", e.what());
      return exit_usage;
    }

    const std::vector<std::string> args(argv, argv + argc);
    try {
      for (const auto& c : commands)
        if (*c.cmd) return c.run(args);
      xfer::release_stop_signals();  // list and info: nothing to save, Ctrl-C just ends it
      if (*list_cmd) fmt::print("{}", xfer::backends_text(xfer::make_backends(list)));
      else if (info_json) fmt::print("{}\n", xfer::system_json(xfer::probe_system()));
      else fmt::print("{}", xfer::system_text(xfer::probe_system()));
      return exit_ok;
    } catch (const xfer::usage_error& e) {
      fmt::print(stderr, "xferbench: error: {}\n", e.what());
      return exit_usage;
    } catch (const std::exception& e) {
      // A write to stdout that failed mid-command (fmt throws for it once its
      // buffer fills) is the failure close_stdout() reports: say it once.
      stdout_failed = std::ferror(stdout);
      const auto* se = dynamic_cast<const std::system_error*>(&e);
      if (stdout_failed)
        fmt::print(stderr, "xferbench: cannot write standard output: {}\n", se ? se->code().message() : e.what());
      else
        fmt::print(stderr, "xferbench: {}\n", e.what());
      return exit_failure;
    }
  };
  const int code = run();
  // A reader that went away has been said already (the run stopped for it).
  if (stdout_failed || xfer::interrupt_signal() == SIGPIPE) return code;

  // What went to stdout counts too: `xferbench list > /dev/full` is a failure
  // (an earlier failure keeps its own exit code).
  try {
    xfer::close_stdout();
  } catch (const std::exception& e) {
    fmt::print(stderr, "xferbench: {}\n", e.what());
    return code == exit_ok ? exit_failure : code;
  }
  return code;
}
