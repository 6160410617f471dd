#include "app_command.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <iostream>
#include <xfer/backends/registry.hpp>
#include <xfer/core/errors.hpp>
#include <xfer/core/interrupt.hpp>
#include <xfer/core/output_file.hpp>
#include <xfer/core/reporter.hpp>
#include <xfer/core/size.hpp>
#include <xfer/core/sweep.hpp>
#include <xfer/core/system_probe.hpp>

#include "app_study.hpp"
#include "commands.hpp"
#include "run_info.hpp"

namespace xfer::cli {

CLI::App* add_app_options(CLI::App& app_cmd, app_args& a) {
  app_cmd.require_subcommand(1);
  auto* vadd = app_cmd.add_subcommand("vadd", "vector add timed phase by phase for each allocation strategy");
  vadd->footer(
      "Sizes count uint32 elements (binary suffixes: 24M = 25165824 elements, 96 MiB a vector).\n"
      "Example: xferbench app vadd -b cuda-rt -s pageable-unaligned,aligned,pinned --sizes 64K,1M,16M");
  vadd->add_option("-b,--backend", a.backends, "backends (default: every available one)")->delimiter(',');
  vadd->add_option("--device", a.device, "device index")->capture_default_str();
  vadd->add_option("-s,--strategies", a.strategies, "allocation strategies (default: all the backend offers)")
      ->delimiter(',');
  vadd->add_option("--size", a.size, "elements per vector")->capture_default_str();
  vadd->add_option("--sizes", a.sizes, "several sizes, to find where the accelerator starts to beat the CPU")
      ->check(not_empty());
  vadd->add_option("--repeat", a.repeat, "runs per strategy and size (medians reported)")->capture_default_str();
  vadd->add_option("--baseline", a.baseline, "strategy the others are compared with")->capture_default_str();
  vadd->add_option("--json", a.json, "write every phase's samples (schema xferbench/app/v1; - for stdout)")
      ->check(not_empty());
  return vadd;
}

int run_app_command(const app_args& a, const std::vector<std::string>& argv) {
  app_study::options o;
  o.sizes.clear();
  for (auto s : a.sizes.empty() ? std::vector<std::uint64_t>{parse_size(a.size)} : parse_size_list(a.sizes))
    o.sizes.push_back(static_cast<std::size_t>(s));
  o.repeats = a.repeat;
  o.baseline = a.baseline;
  o.strategies = without_repeats(a.strategies);
  if (o.repeats == 0 || o.repeats > 1000) throw usage_error(fmt::format("--repeat {} is out of range 1..1000", a.repeat));
  const system_info sys = probe_system();
  for (auto n : o.sizes) {
    // Four vectors (a, b, the device's result, the CPU's) live at once.
    if (sys.memory_available_bytes && n > sys.memory_available_bytes / 16)
      throw usage_error(fmt::format("{} elements need 4 buffers of {} = more than this machine's available memory ({})",
                                    format_size(n), format_capacity(n * 4), format_capacity(sys.memory_available_bytes)));
  }
  check_outputs({{"--json", a.json}});

  auto entries = make_backends({});
  std::vector<std::pair<backend*, std::unique_ptr<vadd_app>>> apps;
  for (auto& e : entries) {
    const bool wanted = a.backends.empty() ? e.impl != nullptr
                                           : std::any_of(a.backends.begin(), a.backends.end(),
                                                         [&](const std::string& s) { return backend_matches(s, e.name); });
    if (!wanted) continue;
    if (!e.impl) throw std::runtime_error(fmt::format("backend {} is unavailable: {}", e.name, e.reason));
    if (auto app = e.impl->make_vadd_app(a.device)) apps.emplace_back(e.impl.get(), std::move(app));
    else if (!a.backends.empty()) fmt::print(stderr, "backend {} has no vadd application; skipped\n", e.name);
  }
  for (const auto& s : a.backends)
    if (std::none_of(entries.begin(), entries.end(), [&](const backend_entry& e) { return backend_matches(s, e.name); }))
      throw usage_error(fmt::format("unknown backend '{}'", s));
  if (apps.empty()) throw usage_error("no selected backend has a vadd application");
  // A strategy or baseline no selected backend knows is a typo, not a skip.
  std::vector<std::string> known;
  for (auto& [b, app] : apps)
    for (const auto& k : app->strategies())
      if (std::find(known.begin(), known.end(), k.name) == known.end()) known.push_back(k.name);
  const auto is_known = [&](const std::string& s) { return std::find(known.begin(), known.end(), s) != known.end(); };
  for (const auto& s : o.strategies)
    if (!is_known(s)) throw usage_error(fmt::format("unknown strategy '{}' (see `xferbench list` for host memory kinds)", s));
  if (!is_known(o.baseline))
    throw usage_error(fmt::format("unknown baseline '{}' (known: {})", o.baseline, fmt::join(known, ", ")));

  // A result written to stdout has it to itself; the tables go to stderr.
  std::ostream& table = writes_to_stdout(a.json) ? std::cerr : std::cout;
  auto& stop = install_interrupt_flag();
  nlohmann::json results = nlohmann::json::array();
  bool failed = false;
  for (auto& [b, app] : apps) {
    const auto devices = b->devices();
    const std::string device = devices.empty() ? "?" : devices.at(std::min<std::size_t>(a.device, devices.size() - 1)).name;
    const auto rs = app_study::run(*app, b->name(), device, o, stop);
    for (auto n : o.sizes) table << app_study::render_table(rs, n, o.baseline) << "\n";
    if (o.sizes.size() > 1) table << app_study::render_crossover(rs) << "\n";
    for (const auto& r : rs) {
      results.push_back(app_study::to_json(r));
      failed = failed || r.reason.rfind("failed", 0) == 0;
    }
    if (stop.load()) break;
  }
  if (!a.json.empty()) {
    nlohmann::json doc{{"schema", app_study::schema}};
    doc.update(run_header(sys, argv));
    doc["config"]["sizes"] = o.sizes;
    doc["config"]["repeats"] = o.repeats;
    doc["config"]["baseline"] = o.baseline;
    doc["results"] = results;
    doc["interrupted"] = stop.load();
    write_output(a.json, doc.dump(1) + "\n");
    fmt::print(stderr, "wrote {}\n", a.json);
  }
  if (stop.load()) return interrupted_exit_code();
  return failed ? exit_failure : exit_ok;
}

}  // namespace xfer::cli
