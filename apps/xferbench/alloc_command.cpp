#include <fmt/format.h>
#include <xfer/backends/registry.hpp>
#include <xfer/core/describe.hpp>
#include <xfer/core/session.hpp>
#include <xfer/core/size.hpp>
#include <xfer/core/system_probe.hpp>

#include "alloc_study.hpp"
#include "commands.hpp"

namespace xfer::cli {

void add_alloc_options(CLI::App& cmd, alloc_args& a) {
  cmd.footer(
      "Strategies: pageable, pageable-unaligned, aligned, over-aligned, mmap, huge, numa, pinned, pinned-wc,\n"
      "registered, pinned-fast (huge pages faulted in by several threads, then registered: pinning a large\n"
      "buffer fast), mapped, alloc-host-ptr (device kinds come from whichever backend offers them), and\n"
      "pool:<any of these>. Kinds are spelled as in `xferbench sweep` (the old 'malloc' is 'pageable').\n"
      "Example: xferbench alloc --strategies aligned,pool:aligned --sizes 4K,256M --json alloc.json\n"
      "First-time pinning: xferbench alloc --strategies pinned,registered,pinned-fast --sizes 256M,1G");
  cmd.add_option("-s,--strategies", a.strategies, "strategies to compare (default: all that run here)")->delimiter(',');
  add_sizes_option(cmd, a.sizes, "sizes for the cost section (default 64,4K,64K,1M,16M,256M)");
  cmd.add_option("--runs", a.runs, "allocate+free timings per size (fewer once 1 s is spent)")->capture_default_str();
  cmd.add_option("--repeat", a.repeat, "repeat cost and fragmentation this many times")->capture_default_str();
  cmd.add_option("--iterations", a.iterations, "fragmentation workload steps")->capture_default_str();
  cmd.add_option("--max-live", a.max_live, "live blocks the workload keeps at most")->capture_default_str();
  cmd.add_option("--max-block", a.max_block, "largest block of the workload")->capture_default_str();
  cmd.add_option("--seed", a.seed, "workload random seed")->capture_default_str();
  cmd.add_flag("--quick", a.quick, "5 runs, 1 repeat, 2000 steps, sizes 4K,1M");
  add_json_option(cmd, a.json, "the study (schema xferbench/alloc/v1)");
}

int run_alloc_command(const alloc_args& a, const std::vector<std::string>& argv) {
  alloc_study::options o;
  std::vector<std::string> notes;
  o.strategies = alloc_study::respell_strategies(a.strategies, notes);
  for (const auto& n : notes) fmt::print(stderr, "xferbench: note: {}\n", n);
  if (!a.sizes.empty()) o.sizes = parse_size_list(a.sizes);
  else if (a.quick) o.sizes = {4096, 1 << 20};
  o.runs = a.quick ? 5 : a.runs;
  o.repeats = a.quick ? 1 : a.repeat;
  o.iterations = a.quick ? 2000 : a.iterations;
  o.max_live = a.max_live;
  o.max_block = parse_size(a.max_block);
  o.seed = a.seed;
  const system_info sys = probe_system();
  o.check(sys.memory_bytes);

  const auto backends = make_backends({});
  alloc_study::allocator_study study(std::move(o), backends);
  session s(make_context(sys, argv), {.json = a.json, .csv = {}, .progress = true});
  return s.finish(s.run(study));
}

}  // namespace xfer::cli
