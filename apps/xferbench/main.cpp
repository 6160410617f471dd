// xferbench: measures what moving data between host and device memory costs.
#include <csignal>
#include <cstdio>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <system_error>
#include <xfer/config.hpp>
#include <xfer/backends/registry.hpp>
#include <xfer/core/describe.hpp>
#include <xfer/core/errors.hpp>
#include <xfer/core/interrupt.hpp>
#include <xfer/core/output_file.hpp>
#include <xfer/mem/settings.hpp>
#include <xfer/core/system_probe.hpp>

#include "commands.hpp"
#include "options.hpp"

namespace {

// CLI11 says only "A subcommand is required" for a mistyped or missing
// command, or an option before one: name what was typed, and the commands there are.
std::string check_command_words(CLI::App& app, int argc, char** argv) {
  CLI::App* at = &app;
  std::string path;
  for (int i = 1;; ++i) {
    std::vector<std::string> names;
    CLI::App* next = nullptr;
    const std::string word = i < argc ? argv[i] : "";
    for (auto* sub : at->get_subcommands([](CLI::App* s) { return !s->get_name().empty(); })) {
      names.push_back(sub->get_name());
      if (sub->get_name() == word) next = sub;
    }
    if (names.empty() || word == "-h" || word == "--help" || word == "--version") return "";
    const std::string known = fmt::format("{}", fmt::join(names, ", "));
    if (i == argc) return fmt::format("give a command, xferbench {}COMMAND (known: {})", path, known);
    if (!next)
      return word.starts_with('-') ? fmt::format("'{}': give a command first, xferbench {}COMMAND (known: {})", word, path, known)
                                   : fmt::format("unknown command '{}{}' (known: {})", path, word, known);
    path += word + " ";
    at = next;
  }
}

// CLI11's words for an option given twice, or beside one it excludes.
std::string usage_text(const CLI::ParseError& e) {
  std::string what = e.what();
  const std::string twice = ": At Most 1 required but received ";
  if (const auto at = what.find(twice); at != std::string::npos)
    return fmt::format("{} is given {} times: give it once", what.substr(0, at), what.substr(at + twice.size()));
  if (const auto at = what.find(" excludes "); at != std::string::npos && dynamic_cast<const CLI::ExcludesError*>(&e))
    return fmt::format("{} and {} cannot be given together: give one", what.substr(0, at), what.substr(at + 10));
  return what;
}

}  // namespace

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
  add_threads_option(*list_cmd, list.threads);
  add_host_devices_option(*list_cmd, list.host_devices);

  bool info_json = false;
  app.add_subcommand("info", "CPU, OS, memory, NUMA nodes, and each accelerator's PCIe link")
      ->add_flag("--json", info_json, "print the system section of a result file instead of text");

  // After list and info, in the order `xferbench --help` lists them.
  for (auto add : {add_cpu_command, add_alloc_command, add_app_command, add_beside_command, add_trace_command}) commands.push_back(add(app));

  bool stdout_failed = false;  // already reported, by the command's own failure
  const auto run = [&]() -> int {
    if (const auto bad = check_command_words(app, argc, argv); !bad.empty()) {
      fmt::print(stderr, "xferbench: error: {}\n", bad);
      return exit_usage;
    }
    try {
      app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
      if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
      fmt::print(stderr, "xferbench: error: {}\n", usage_text(e));
      return exit_usage;
    }

    const std::vector<std::string> args(argv, argv + argc);
    // libxfer's variables are input too: read once here (the front door,
    // xfer/mem/settings.hpp) and a bad one refused before anything is
    // measured, not found by a point.
    try {
      auto in = xfer::mem::inputs_from_environment();
      in.notify = [](const std::string& line) { fmt::print(stderr, "xferbench: note: {}\n", line); };
      xfer::mem::install_inputs(std::move(in));
    } catch (const std::invalid_argument& e) {
      fmt::print(stderr, "xferbench: error: {}\n", e.what());
      return exit_usage;
    }
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
