#include "cpu_command.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <xfer/backends/registry.hpp>
#include <xfer/core/describe.hpp>
#include <xfer/core/errors.hpp>
#include <xfer/core/session.hpp>
#include <xfer/core/size.hpp>
#include <xfer/core/system_probe.hpp>
#include <xfer/cpu/study.hpp>
#include <xfer/mem/kinds.hpp>

#include "options.hpp"

namespace xfer::cli {
namespace {

constexpr long long max_threads = 1024;
constexpr long long max_runs = 1000000;

template <class T>
void add_unique(std::vector<T>& v, const T& x) {
  if (std::find(v.begin(), v.end(), x) == v.end()) v.push_back(x);
}

}  // namespace

void add_cpu_options(CLI::App& cmd, cpu_args& a) {
  cmd.footer(
      "Examples:\n"
      "  xferbench cpu                                  every kind, op and method at 32M\n"
      "  xferbench cpu --kinds pageable,pinned-wc --ops write --sizes 4K,1M,32M --json cpu.json\n"
      "  xferbench cpu --threads 1,4 --methods nontemporal\n"
      "Kinds: pageable, pageable-unaligned, aligned, huge, pinned, pinned-wc, uncached, and any other kind\n"
      "a backend offers (see `xferbench list`), spelled as in `xferbench sweep` (the seed's 'regular' is\n"
      "'pageable'); pageable is always measured, as the\n"
      "baseline for break-even. Exit codes: 0 ok or skipped, 1 a point failed, 2 bad input, 128 + signal when\n"
      "stopped by SIGINT (130), SIGTERM (143) or SIGHUP (129); the completed points are still written.");
  cmd.add_option("-k,--kinds", a.kinds, "memory kinds (default: pageable,aligned,huge,pinned,pinned-wc,uncached)")
      ->delimiter(',');
  cmd.add_option("--ops", a.ops, "write (regular -> kind), read (kind -> regular), fill (default: all)")
      ->delimiter(',');
  cmd.add_option("--methods", a.methods,
                 "memcpy, nontemporal (streaming stores), ntload (streaming loads, reads only) (default: all)")
      ->delimiter(',');
  add_sizes_option(cmd, a.sizes, "comma-separated sizes (4K,1M,1.5G; default: 32M)");
  cmd.add_option("--runs", a.runs, "steady runs after the first")->capture_default_str()
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  cmd.add_option("--threads", a.threads, "threads sharing each op, a list (1..1024)")->capture_default_str()
      ->delimiter(',');
  add_json_option(cmd, a.json, "the result file (schema xferbench/cpu/v1)");
  add_quiet_flag(cmd, a.quiet);
}

int run_cpu_command(const cpu_args& a, const std::vector<std::string>& argv) {
  // ---- validate everything before measuring anything ----
  cpu::study_config config;
  if (a.runs < 1 || a.runs > max_runs)
    throw usage_error(fmt::format("--runs {} is out of range: give 1 to {}", a.runs, max_runs));
  config.runs = static_cast<std::size_t>(a.runs);

  if (a.threads.empty()) throw usage_error("--threads needs at least one thread count");
  config.threads.clear();
  for (long long t : a.threads) {
    if (t < 1 || t > max_threads)
      throw usage_error(fmt::format("--threads {} is out of range: give 1 to {}", t, max_threads));
    add_unique(config.threads, static_cast<unsigned>(t));
  }

  if (!a.ops.empty()) {
    config.ops.clear();
    for (const auto& o : a.ops) add_unique(config.ops, cpu::parse_op(o));
  }
  if (!a.methods.empty()) {
    config.methods.clear();
    for (const auto& m : a.methods) add_unique(config.methods, cpu::parse_method(m));
  }
  bool any_pair = false;
  for (auto o : config.ops)
    for (auto m : config.methods) any_pair = any_pair || cpu::applies(o, m);
  if (!any_pair)
    throw usage_error("the selected methods apply to none of the selected ops (ntload applies only to read)");

  config.sizes = parse_size_list(a.sizes);
  const system_info sys = probe_system();
  for (auto s : config.sizes)
    if (sys.memory_bytes && s > sys.memory_bytes)
      throw usage_error(fmt::format("size {} ({} B) is larger than this machine's memory ({} B)", format_size(s), s,
                                    sys.memory_bytes));
  std::sort(config.sizes.begin(), config.sizes.end());
  config.sizes.erase(std::unique(config.sizes.begin(), config.sizes.end()), config.sizes.end());

  std::vector<std::string> kinds;
  for (const auto& k : a.kinds) {
    const std::string spelled = mem::canonical_kind_name(k);
    if (spelled != k) fmt::print(stderr, "xferbench: note: memory kind '{}' is spelled '{}'\n", k, spelled);
    add_unique(kinds, spelled);
  }
  // Every backend, present or not: each kind comes from the first that offers
  // it, and a kind none offers is reported with each one's reason. The
  // resources may refer to their backend, so `backends` outlives the study.
  const auto backends = make_backends(backend_options{});
  cpu::cpu_study study(std::move(config), kinds, backends);
  run_context context = make_context(sys, argv);
  for (const auto& name : study.providers())
    for (const auto& e : backends)
      if (e.impl && e.name == name) context.system.backend_versions[name] = e.impl->versions();
  session s(std::move(context), {.json = a.json, .csv = {}, .progress = !a.quiet});
  return s.finish(s.run(study));
}

}  // namespace xfer::cli
