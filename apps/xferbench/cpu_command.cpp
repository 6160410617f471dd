#include "cpu_command.hpp"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <iostream>
#include <unistd.h>
#include <xfer/backends/registry.hpp>
#include <xfer/config.hpp>
#include <xfer/core/errors.hpp>
#include <xfer/core/interrupt.hpp>
#include <xfer/core/output_file.hpp>
#include <xfer/core/reporter.hpp>
#include <xfer/core/size.hpp>
#include <xfer/core/system_probe.hpp>
#include <xfer/cpu/cpu_report.hpp>
#include <xfer/cpu/cpu_study.hpp>

#include "commands.hpp"
#include "run_info.hpp"

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
      "Kinds: pageable (alias regular), pageable-unaligned, aligned, huge, pinned, pinned-wc, uncached,\n"
      "and any other kind a backend offers (see `xferbench list`); pageable is always measured, as the\n"
      "baseline for break-even. Exit codes: 0 ok or skipped, 1 a point failed, 2 bad input, 128 + signal when\n"
      "stopped by SIGINT (130), SIGTERM (143) or SIGHUP (129); the completed points are still written.");
  cmd.add_option("-k,--kinds", a.kinds, "memory kinds (default: pageable,aligned,huge,pinned,pinned-wc,uncached)")
      ->delimiter(',');
  cmd.add_option("--ops", a.ops, "write (regular -> kind), read (kind -> regular), fill (default: all)")
      ->delimiter(',');
  cmd.add_option("--methods", a.methods,
                 "memcpy, nontemporal (streaming stores), ntload (streaming loads, reads only) (default: all)")
      ->delimiter(',');
  cmd.add_option("--sizes", a.sizes, "comma-separated sizes (4K,1M,1.5G)")->capture_default_str()->check(not_empty())
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  cmd.add_option("--runs", a.runs, "steady runs after the first")->capture_default_str()
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  cmd.add_option("--threads", a.threads, "threads sharing each op, a list (1..1024)")->capture_default_str()
      ->delimiter(',');
  cmd.add_option("--json", a.json, "write the result file (schema xferbench/cpu/v1; - for stdout)")
      ->check(not_empty())
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  cmd.add_flag("-q,--quiet", a.quiet, "no progress line on stderr");
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

  // Every backend, present or not: each kind comes from the first that offers
  // it, and a kind none offers is reported with each one's reason. The
  // resources may refer to their backend, so `backends` outlives `slots`.
  auto backends = make_backends(backend_options{});
  const auto known = cpu::known_kind_names(backends);
  std::vector<std::string> kinds;
  add_unique<std::string>(kinds, cpu::baseline_kind);  // break-even and the WC check compare with it
  if (a.kinds.empty()) {
    for (const auto& k : cpu::default_kind_names()) add_unique(kinds, k);
  } else {
    for (const auto& raw : a.kinds) {
      const std::string k = cpu::canonical_kind_name(raw);
      if (std::find(known.begin(), known.end(), k) == known.end())
        throw usage_error(fmt::format("unknown memory kind '{}' (known: regular, {})", raw, fmt::join(known, ", ")));
      add_unique(kinds, k);
    }
  }

  check_outputs({{"--json", a.json}});

  // ---- run ----
  auto slots = cpu::resolve_kinds(kinds, backends);

  run_context ctx;
  ctx.tool_version = XFER_VERSION;
  ctx.started_at = utc_now();
  ctx.system = sys;
  for (const auto& s : slots)
    if (s.info.available)
      for (const auto& e : backends)
        if (e.impl && e.name == s.info.provider) ctx.system.backend_versions[e.name] = e.impl->versions();
  std::vector<std::string> size_text, op_text, method_text;
  for (auto s : config.sizes) size_text.push_back(format_size(s));
  for (auto o : config.ops) op_text.emplace_back(cpu::to_string(o));
  for (auto m : config.methods) method_text.emplace_back(cpu::to_string(m));
  ctx.config = {{"argv", argv},           {"kinds", kinds},        {"ops", op_text},
                {"methods", method_text}, {"sizes", config.sizes}, {"sizes_text", size_text},
                {"runs", config.runs},    {"threads", config.threads},
                {"min_sample_s", config.min_sample_s},
                {"wc_probe_bytes", config.wc_probe_bytes}};

  // A result written to stdout has it to itself; the table goes to stderr.
  std::ostream& console = writes_to_stdout(a.json) ? std::cerr : std::cout;
  cpu::cpu_table table(console);
  table.header(ctx, [&] {
    std::vector<cpu::kind_info> v;
    for (const auto& s : slots) v.push_back(s.info);
    return v;
  }());

  const bool progress = !a.quiet && ::isatty(STDERR_FILENO);
  cpu::study_hooks hooks;
  hooks.stop = &install_interrupt_flag();
  hooks.on_point = [&](const cpu::cpu_point& p) {
    if (progress) fmt::print(stderr, "\r\033[K");
    table.row(p);
    console.flush();
  };
  if (progress)
    hooks.on_progress = [](std::size_t done, std::size_t total, const cpu::cpu_point& p) {
      fmt::print(stderr, "\r\033[K[{}/{}] {} {} {} {} threads {}", done + 1, total, p.kind, cpu::to_string(p.operation),
                 cpu::to_string(p.how), p.threads, format_size(p.bytes));
      std::fflush(stderr);
    };

  const cpu::study_result result = cpu::run_study(config, slots, hooks);
  if (progress) fmt::print(stderr, "\r\033[K");
  table.footer(result);
  console.flush();

  if (!a.json.empty()) {
    write_output(a.json, cpu::study_to_json(result, ctx).dump(2) + "\n");
    fmt::print(stderr, "wrote {}\n", a.json);
  }
  if (result.interrupted) return interrupted_exit_code();
  const bool failed = std::any_of(result.points.begin(), result.points.end(),
                                  [](const cpu::cpu_point& p) { return p.status == point_status::failed; });
  return failed ? exit_failure : exit_ok;
}

}  // namespace xfer::cli
