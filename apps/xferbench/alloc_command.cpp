#include <fmt/format.h>
#include <memory>
#include <optional>
#include <xfer/backends/registry.hpp>
#include <xfer/core/describe.hpp>
#include <xfer/core/size.hpp>
#include <xfer/core/system_probe.hpp>
#include <xfer/mem/kind_registry.hpp>

#include "alloc_study.hpp"
#include "commands.hpp"
#include "options.hpp"
#include "strategies.hpp"

namespace xfer::cli {

// What the study's options do not hold as parsed. --quick is a starting
// point (alloc_study::options::quick): a count or sizes given beside it win,
// and are checked like any other (it used to replace them silently, so
// `--quick --runs -5` ran 5 runs and exited 0).
struct alloc_args {
  alloc_study::options study;
  std::optional<std::size_t> runs, repeats, iterations;
  std::string sizes, max_block = "1M", json;
  bool quick = false;
  double watchdog = -1;  // add_watchdog_option
};

static int run_alloc(const alloc_args& a, const std::vector<std::string>& argv) {
  alloc_study::options o = a.quick ? alloc_study::options::quick() : alloc_study::options{};
  std::vector<std::string> notes;
  o.strategies = alloc_study::respell_strategies(a.study.strategies, notes);
  for (const auto& n : notes) fmt::print(stderr, "xferbench: note: {}\n", n);
  if (!a.sizes.empty()) o.sizes = parse_size_list(a.sizes);
  o.runs = a.runs.value_or(o.runs);
  o.repeats = a.repeats.value_or(o.repeats);
  o.iterations = a.iterations.value_or(o.iterations);
  o.max_live = a.study.max_live;
  o.seed = a.study.seed;
  o.max_block = parse_size(a.max_block);
  const system_info sys = probe_system();
  o.check(sys.memory_bytes);

  const auto backends = make_backends({});
  alloc_study::allocator_study study(std::move(o), backends);
  session s(make_context(sys, argv), {.json = a.json, .csv = {}, .progress = true, .verbose = false, .watchdog_s = a.watchdog});
  return s.finish(s.run(study));
}

// The strategies as the kind registry describes them, so the list cannot drift.
static std::string strategies_help() {
  std::string text = "Strategies (device kinds come from whichever backend offers them):\n";
  for (const auto& name : alloc_study::strategy_names())
    text += fmt::format("  {:<21}{}\n", name, mem::find_host_kind(name)->summary);
  return text + "  pool:<any of these>  the caching pool over it\n";
}

command add_alloc_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("alloc", "host allocation strategies: alignment, cost, first touch, fragmentation");
  auto a = std::make_shared<alloc_args>();
  const alloc_study::options defaults, quick = alloc_study::options::quick();
  cmd->footer(strategies_help() +
              "Kinds are spelled as in `xferbench sweep` (the old 'malloc' is 'pageable').\n"
              "Example: xferbench alloc --strategies aligned,pool:aligned --sizes 4K,256M --json alloc.json\n"
              "First-time pinning: xferbench alloc --strategies pinned,registered,pinned-fast --sizes 256M,1G");
  cmd->add_option("-s,--strategies", a->study.strategies, "strategies to compare (default: all that run here)")
      ->delimiter(',')
      ->check(not_empty());
  add_sizes_option(*cmd, a->sizes, "sizes for the cost section (default 64,4K,64K,1M,16M,256M)");
  const auto count = [&](const char* name, std::optional<std::size_t>& v, std::size_t was, std::size_t quick_was,
                         const char* help) {
    cmd->add_option(name, v, fmt::format("{} (default: {}; --quick: {})", help, was, quick_was))->check(not_negative());
  };
  count("--runs", a->runs, defaults.runs, quick.runs, "allocate+free timings per size (fewer once 1 s is spent)");
  count("--repeat", a->repeats, defaults.repeats, quick.repeats, "repeat cost and fragmentation this many times");
  count("--iterations", a->iterations, defaults.iterations, quick.iterations, "fragmentation workload steps");
  cmd->add_option("--max-live", a->study.max_live, "live blocks the workload keeps at most")
      ->check(not_negative())
      ->capture_default_str();
  cmd->add_option("--max-block", a->max_block, "largest block of the workload")->check(size_value())->capture_default_str();
  cmd->add_option("--seed", a->study.seed, "workload random seed")->check(not_negative())->capture_default_str();
  cmd->add_flag("--quick", a->quick,
                "5 runs, 1 repeat, 2000 steps, sizes 4K,1M: a starting point, which --runs, --repeat, --iterations "
                "and --sizes change");
  add_watchdog_option(*cmd, a->watchdog, watchdog_for::study);
  add_json_option(*cmd, a->json, "the study (schema xferbench/alloc/v2)");
  return {cmd, [a](const std::vector<std::string>& argv) { return run_alloc(*a, argv); }};
}

}  // namespace xfer::cli
