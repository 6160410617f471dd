#include <fmt/format.h>
#include <memory>
#include <xfer/backends/registry.hpp>
#include <xfer/core/describe.hpp>
#include <xfer/core/size.hpp>
#include <xfer/core/system_probe.hpp>

#include "alloc_study.hpp"
#include "commands.hpp"
#include "options.hpp"

namespace xfer::cli {

// The counts bind to the study's own options; sizes are parsed, and --quick
// overrides, once the command line is read.
struct alloc_args {
  alloc_study::options study;
  std::string sizes, max_block = "1M", json;
  bool quick = false;
};

static int run_alloc(const alloc_args& a, const std::vector<std::string>& argv) {
  alloc_study::options o = a.study;
  std::vector<std::string> notes;
  o.strategies = alloc_study::respell_strategies(a.study.strategies, notes);
  for (const auto& n : notes) fmt::print(stderr, "xferbench: note: {}\n", n);
  if (!a.sizes.empty()) o.sizes = parse_size_list(a.sizes);
  else if (a.quick) o.sizes = {4096, 1 << 20};
  if (a.quick) {
    o.runs = 5;
    o.repeats = 1;
    o.iterations = 2000;
  }
  o.max_block = parse_size(a.max_block);
  const system_info sys = probe_system();
  o.check(sys.memory_bytes);

  const auto backends = make_backends({});
  alloc_study::allocator_study study(std::move(o), backends);
  session s(make_context(sys, argv), {.json = a.json, .csv = {}, .progress = true});
  return s.finish(s.run(study));
}

command add_alloc_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("alloc", "host allocation strategies: alignment, cost, first touch, fragmentation");
  auto a = std::make_shared<alloc_args>();
  cmd->footer(
      "Strategies: pageable, pageable-unaligned, aligned, over-aligned, mmap, huge, numa, pinned, pinned-wc,\n"
      "registered, pinned-fast (huge pages faulted in by several threads, then registered: pinning a large\n"
      "buffer fast), mapped, alloc-host-ptr (device kinds come from whichever backend offers them), and\n"
      "pool:<any of these>. Kinds are spelled as in `xferbench sweep` (the old 'malloc' is 'pageable').\n"
      "Example: xferbench alloc --strategies aligned,pool:aligned --sizes 4K,256M --json alloc.json\n"
      "First-time pinning: xferbench alloc --strategies pinned,registered,pinned-fast --sizes 256M,1G");
  cmd->add_option("-s,--strategies", a->study.strategies, "strategies to compare (default: all that run here)")
      ->delimiter(',');
  add_sizes_option(*cmd, a->sizes, "sizes for the cost section (default 64,4K,64K,1M,16M,256M)");
  cmd->add_option("--runs", a->study.runs, "allocate+free timings per size (fewer once 1 s is spent)")
      ->capture_default_str();
  cmd->add_option("--repeat", a->study.repeats, "repeat cost and fragmentation this many times")->capture_default_str();
  cmd->add_option("--iterations", a->study.iterations, "fragmentation workload steps")->capture_default_str();
  cmd->add_option("--max-live", a->study.max_live, "live blocks the workload keeps at most")->capture_default_str();
  cmd->add_option("--max-block", a->max_block, "largest block of the workload")->capture_default_str();
  cmd->add_option("--seed", a->study.seed, "workload random seed")->capture_default_str();
  cmd->add_flag("--quick", a->quick, "5 runs, 1 repeat, 2000 steps, sizes 4K,1M");
  add_json_option(*cmd, a->json, "the study (schema xferbench/alloc/v1)");
  return {cmd, [a](const std::vector<std::string>& argv) { return run_alloc(*a, argv); }};
}

}  // namespace xfer::cli
