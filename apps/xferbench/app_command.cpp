#include <algorithm>
#include <fmt/format.h>
#include <memory>
#include <xfer/app/vadd.hpp>
#include <xfer/backends/registry.hpp>
#include <xfer/backends/vadd_registry.hpp>
#include <xfer/core/describe.hpp>
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
  for (backend* b : select_backends(entries, a.backends)) {
    auto app = make_vadd_app(*b, a.device);  // usage_error for a device it lacks
    if (!app) {
      if (!a.backends.empty()) fmt::print(stderr, "backend {} has no vadd application; skipped\n", b->name());
      continue;
    }
    const auto devices = b->devices();
    const auto device = devices.empty() ? "?" : devices.at(std::min<std::size_t>(a.device, devices.size() - 1)).name;
    targets.push_back({add_backend(context, *b), device, std::move(app)});
  }
  app_study::vadd_study study(std::move(o), std::move(targets));
  session s(std::move(context), {.json = a.json, .csv = {}, .progress = true});
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
  vadd->add_option("--device", a->device, "device index")->capture_default_str();
  vadd->add_option("-s,--strategies", a->study.strategies, "allocation strategies (default: all the backend offers)")
      ->delimiter(',');
  vadd->add_option("--size", a->size, "elements per vector")->capture_default_str();
  add_sizes_option(*vadd, a->sizes, "several sizes, to find where the accelerator starts to beat the CPU");
  vadd->add_option("--repeat", a->study.repeats, "runs per strategy and size (medians reported)")->capture_default_str();
  vadd->add_option("--baseline", a->study.baseline, "strategy the others are compared with")->capture_default_str();
  add_json_option(*vadd, a->json, "every phase's samples (schema xferbench/app/v1)");
  return {vadd, [a](const std::vector<std::string>& argv) { return run_app(*a, argv); }};
}

}  // namespace xfer::cli
