#include <fmt/format.h>
#include <fmt/ranges.h>
#include <memory>
#include <xfer/app/vadd.hpp>
#include <xfer/backends/registry.hpp>
#include <xfer/backends/vadd_registry.hpp>
#include <xfer/core/describe.hpp>
#include <xfer/core/errors.hpp>
#include <xfer/core/plan.hpp>
#include <xfer/core/size.hpp>
#include <xfer/core/sweep.hpp>
#include <xfer/core/system_probe.hpp>

#include "app_study.hpp"
#include "commands.hpp"
#include "options.hpp"

namespace xfer::cli {

// The repeats, baseline and strategies bind to the study's own options.
struct app_args {
  app_study::options study;
  std::vector<std::string> backends;
  int device = 0;
  std::string size = "24M", sizes, json;
  double watchdog = -1;  // add_watchdog_option
};

static int run_app(const app_args& a, const std::vector<std::string>& argv) {
  app_study::options o = a.study;
  o.sizes.clear();
  for (auto s : a.sizes.empty() ? std::vector<std::uint64_t>{parse_size(a.size)} : parse_size_list(a.sizes))
    o.sizes.push_back(static_cast<std::size_t>(s));
  o.strategies = without_repeats(a.study.strategies);
  const system_info sys = probe_system();
  o.check(sys.memory_available_bytes);

  run_context context = make_context(sys, argv);
  auto entries = make_backends({});
  std::vector<app_study::target> targets;
  std::vector<std::string> without;  // named, but with no vadd
  for (backend* b : select_backends(entries, a.backends)) {
    auto app = make_vadd_app(*b, a.device);  // usage_error for a device it lacks
    if (!app) {
      if (!a.backends.empty()) without.push_back(b->name());
      continue;
    }
    // The host's vadd takes any index: --device 1 ran device 0 without a word.
    const device_info device = find_device(*b, a.device);
    targets.push_back({add_backend(context, *b), device.name, std::move(app)});
  }
  // One line either way: the note where others run, the error where none does.
  if (targets.empty() && !without.empty())
    throw usage_error(fmt::format("-b {}: no vadd application in {}", fmt::join(without, ","),
                                  without.size() == 1 ? "this backend" : "these backends"));
  for (const auto& name : without) fmt::print(stderr, "xferbench: note: backend {} has no vadd application; skipped\n", name);
  app_study::vadd_study study(std::move(o), std::move(targets));
  session s(std::move(context), {.json = a.json, .csv = {}, .progress = true, .verbose = false, .watchdog_s = a.watchdog});
  return s.finish(s.run(study));
}

command add_app_command(CLI::App& app) {
  auto* app_cmd = app.add_subcommand("app", "a whole small application timed phase by phase (vadd)");
  app_cmd->require_subcommand(1);
  auto* vadd = app_cmd->add_subcommand("vadd", "vector add timed phase by phase for each allocation strategy");
  auto a = std::make_shared<app_args>();
  vadd->footer(
      "Sizes count uint32 elements (binary suffixes: 24M = 25165824 elements, 96 MiB a vector).\n"
      "Example: xferbench app vadd -b cuda-rt -s pageable-unaligned,aligned,pinned --sizes 64K,1M,16M");
  add_backends_option(*vadd, a->backends, "backends (default: every available one)");
  vadd->add_option("--device", a->device, "device index of each backend")->capture_default_str();
  vadd->add_option("-s,--strategies", a->study.strategies, "allocation strategies (default: all the backend offers)")
      ->delimiter(',')
      ->check(not_empty());
  auto* size = vadd->add_option("--size", a->size, "elements per vector")->check(size_value())->capture_default_str();
  add_sizes_option(*vadd, a->sizes, "several sizes, to find where the accelerator starts to beat the CPU");
  // One of the two: --sizes used to win over --size without a word.
  vadd->get_option("--sizes")->excludes(size);
  vadd->add_option("--repeat", a->study.repeats, "runs per strategy and size (medians reported)")
      ->check(not_negative())
      ->capture_default_str();
  vadd->add_option("--baseline", a->study.baseline,
                   fmt::format("strategy the others are compared with, one of --strategies where they are given "
                               "(default: {}, where it is measured)",
                               app_study::default_baseline))
      ->check(not_empty());
  add_watchdog_option(*vadd, a->watchdog, watchdog_for::study);
  add_json_option(*vadd, a->json, "every phase's samples (schema xferbench/app/v2)");
  return {vadd, [a](const std::vector<std::string>& argv) { return run_app(*a, argv); }};
}

}  // namespace xfer::cli
