#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <memory>
#include <xfer/backends/registry.hpp>
#include <xfer/core/describe.hpp>
#include <xfer/core/session.hpp>
#include <xfer/core/system_probe.hpp>
#include <xfer/mem/kinds.hpp>
#include <xfer/cpu/memory_kinds.hpp>
#include <xfer/cpu/options.hpp>
#include <xfer/cpu/study.hpp>

#include "commands.hpp"
#include "options.hpp"

namespace xfer::cli {

struct cpu_args {
  cpu::options study;  // checked by the study (cpu::options::check)
  std::string json;
  bool quiet = false;
  double watchdog = -1;  // add_watchdog_option
};

static int run_cpu(const cpu_args& a, const std::vector<std::string>& argv) {
  const system_info sys = probe_system();
  auto [config, kinds, notes] = a.study.check(sys.memory_bytes);
  for (const auto& n : notes) fmt::print(stderr, "xferbench: note: {}\n", n);
  // Every backend, present or not: each kind comes from the first that offers
  // it, and a kind none offers is reported with each one's reason. The
  // resources may refer to their backend, so `backends` outlives the study.
  const auto backends = make_backends(backend_options{});
  cpu::cpu_study study(std::move(config), kinds, backends);
  run_context context = make_context(sys, argv);
  for (const auto& e : backends)
    if (e.impl && std::ranges::count(study.providers(), e.name)) add_backend(context, *e.impl);
  session s(std::move(context), {.json = a.json, .csv = {}, .progress = !a.quiet, .verbose = false, .watchdog_s = a.watchdog});
  return s.finish(s.run(study));
}

// The study's own lists (the kind registry's), so the help cannot drift from them.
static std::string kinds_help() {
  std::vector<std::string> more;
  for (const auto& k : mem::host_kind_names())
    if (!std::ranges::count(cpu::default_kind_names(), k)) more.push_back(k);
  return fmt::format("Kinds: by default {}; also {}, and\n", fmt::join(cpu::default_kind_names(), ", "),
                     fmt::join(more, ", "));
}

command add_cpu_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "cpu", "the CPU's side: writing/reading regular, pinned, write-combined and uncached memory, first use vs steady");
  auto a = std::make_shared<cpu_args>();
  cmd->footer(
      "Examples:\n"
      "  xferbench cpu                                  every kind, op and method at 32M\n"
      "  xferbench cpu --kinds pageable,pinned-wc --ops write --sizes 4K,1M,32M --json cpu.json\n"
      "  xferbench cpu --threads 1,4 --methods nontemporal\n" +
      kinds_help() +
      "any other kind a backend offers (see `xferbench list`), spelled as in `xferbench sweep` (the seed's\n"
      "'regular' is 'pageable'); pageable is always measured, as the baseline for break-even.\n"
      "A point that makes no progress for --watchdog's time is failed and the run goes on.\n"
      "Exit codes: 0 ok or skipped, 1 a point failed, 2 bad input, 128 + signal when\n"
      "stopped by SIGINT (130), SIGTERM (143) or SIGHUP (129); the completed points are still written.");
  cmd->add_option("-k,--kinds", a->study.kinds,
                  fmt::format("memory kinds (default: {})", fmt::join(cpu::default_kind_names(), ",")))
      ->delimiter(',')
      ->check(not_empty());
  cmd->add_option("--ops", a->study.ops, "write (regular -> kind), read (kind -> regular), fill (default: all)")
      ->delimiter(',')
      ->check(not_empty());
  cmd->add_option("--methods", a->study.methods,
                 "memcpy, nontemporal (streaming stores), ntload (streaming loads, reads only) (default: all)")
      ->delimiter(',')
      ->check(not_empty());
  add_sizes_option(*cmd, a->study.sizes, "comma-separated sizes (4K,1M,1.5G; default: 32M)");
  cmd->add_option("--runs", a->study.runs, "steady runs after the first")->capture_default_str()
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  // Not empty: CLI11 read `--threads ''` as 0.
  cmd->add_option("--threads", a->study.threads, "threads sharing each op, a list (1..1024)")->capture_default_str()
      ->delimiter(',')
      ->check(not_empty());
  add_watchdog_option(*cmd, a->watchdog, watchdog_for::study);
  add_json_option(*cmd, a->json, "the result file (schema xferbench/cpu/v2)");
  add_quiet_flag(*cmd, a->quiet);
  return {cmd, [a](const std::vector<std::string>& argv) { return run_cpu(*a, argv); }};
}

}  // namespace xfer::cli
