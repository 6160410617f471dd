#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <iostream>
#include <map>
#include <set>
#include <unistd.h>
#include <xfer/backends/registry.hpp>
#include <xfer/config.hpp>
#include <xfer/core/errors.hpp>
#include <xfer/core/interrupt.hpp>
#include <xfer/core/output_file.hpp>
#include <xfer/core/reporter.hpp>
#include <xfer/core/runner.hpp>
#include <xfer/core/size.hpp>
#include <xfer/core/sweep.hpp>
#include <xfer/core/system_probe.hpp>

#include "commands.hpp"
#include "run_info.hpp"

namespace xfer::cli {

// Scalar options take the last value given, so scripts can set defaults that a
// user's own arguments override.
void add_sweep_options(CLI::App& cmd, sweep_args& a) {
  cmd.footer(
      "Examples:\n"
      "  xferbench sweep                                   every backend, 1 B to 256 MiB\n"
      "  xferbench sweep --quick --json r.json             a coarse run in seconds\n"
      "  xferbench sweep -b host -m pageable,aligned -d h2d --sizes 4K,1M,1.5G\n"
      "Sizes take binary suffixes: 4K = 4096, 1.5G = 1610612736.\n"
      "Exit codes: 0 all points ok or skipped, 1 a point failed or a backend is unavailable,\n"
      "2 bad input, 128 + signal when stopped by SIGINT (130), SIGTERM (143) or SIGHUP (129)\n"
      "(the completed points are still written).");
  cmd.add_option("-b,--backend", a.backends, "backends: host, cuda-rt, cuda-drv, opencl, opencl:NAME (default: every available one)")
      ->delimiter(',');
  cmd.add_option("--device", a.devices, "device indices (default: all)")->delimiter(',');
  cmd.add_option("-r,--route", a.routes, "routes (see `xferbench list`; default: all)")->delimiter(',');
  cmd.add_option("-m,--memory", a.memory, "host memory kinds (default: all the backend offers)")->delimiter(',');
  cmd.add_option("-d,--direction", a.directions, "h2d, d2h, bidir, rw (write then read back), d2d (default: all)")
      ->delimiter(',');
  cmd.add_option("--min", a.min, "smallest size of the power-of-two range")->capture_default_str()
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  cmd.add_option("--max", a.max, "largest size of the power-of-two range")->capture_default_str()
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  cmd.add_option("--sizes", a.sizes, "explicit comma-separated sizes instead of the range (4,4K,1M,1.5G)")
      ->check(not_empty())
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  cmd.add_flag("--quick", a.quick, "coarse and fast: sizes x16 apart up to 16M, 10 ms a point, 5% CI target");
  cmd.add_option("--target-ci", a.target_ci, "stop sampling when the median's 95% CI is within this fraction")
      ->capture_default_str()
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  cmd.add_option("--max-time", a.max_time, "sampling budget per point, seconds")->capture_default_str()
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  cmd.add_option("--warmup", a.warmup, "warm-up per point, seconds")->capture_default_str()
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  cmd.add_option("--watchdog", a.watchdog,
                 "seconds a point may take before it is recorded as failed and its backend left behind (0: off; "
                 "default: 30 + 40 x --max-time + size / 20 MB/s)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  cmd.add_option("--threads", a.threads, "threads for the memcpy-mt route (0 = all CPUs)")->capture_default_str()
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  cmd.add_option("--alignment", a.alignment, "alignment of the 'aligned' kind: a power of two from 8 to 1G (4K, 2M)")
      ->capture_default_str()
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  cmd.add_option("--unaligned-offset", a.unaligned_offset, "offset past a page of 'pageable-unaligned', bytes")
      ->capture_default_str()
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  cmd.add_flag("--no-verify", a.no_verify, "skip checking the data each route moves");
  cmd.add_option("--json", a.json, "write the result file (schema xferbench/result/v1; - for stdout)")
      ->check(not_empty());
  cmd.add_option("--csv", a.csv, "write one CSV row per point (- for stdout)")->check(not_empty());
  cmd.add_flag("-q,--quiet", a.quiet, "no progress line on stderr");
}

namespace {


// Keeps a one-line progress display on stderr out of the way of table rows.
class progress_line final : public reporter {
 public:
  progress_line(reporter& inner, std::ostream& table) : inner_(inner), table_(table) {}
  void show(std::size_t done, std::size_t total, const point_spec& p) {
    if (done >= total) {
      clear();
      return;
    }
    fmt::print(stderr, "\r\033[K[{}/{}] {} {} {} {} {}", done + 1, total, p.backend, p.route, p.host_memory,
               to_string(p.dir), format_size(p.bytes));
    std::fflush(stderr);
  }
  void report_context(const run_context& c) override { inner_.report_context(c); }
  void report(const point_result& r) override {
    clear();
    inner_.report(r);
    table_.flush();
  }
  void finalize(bool interrupted) override {
    clear();
    inner_.finalize(interrupted);
  }

 private:
  static void clear() { fmt::print(stderr, "\r\033[K"); }
  reporter& inner_;
  std::ostream& table_;
};

// Flags points that beat their device's link (the fastest accelerator link
// this machine reports where the point's PCI address is unknown).
class link_limit_check final : public reporter {
 public:
  link_limit_check(reporter& inner, const system_info& sys) : inner_(inner) {
    for (const auto& a : sys.accelerators) {
      fastest_gbps_ = std::max(fastest_gbps_, a.theoretical_gbps);
      by_address_[lowercase(a.address)] = a.theoretical_gbps;
    }
  }
  void report_context(const run_context& c) override { inner_.report_context(c); }
  void report(const point_result& r) override {
    point_result flagged = r;
    const auto link = by_address_.find(lowercase(r.device_pci));
    flag_link_limit(flagged, link != by_address_.end() && link->second > 0 ? link->second : fastest_gbps_);
    inner_.report(flagged);
  }
  void finalize(bool interrupted) override { inner_.finalize(interrupted); }

 private:
  static std::string lowercase(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  }
  reporter& inner_;
  double fastest_gbps_ = 0;
  std::map<std::string, double> by_address_;
};

// Keeps the names of `wanted` that `known` has. An empty `wanted` means all.
std::vector<std::string> keep_known(const std::vector<std::string>& wanted, const std::set<std::string>& known) {
  std::vector<std::string> out;
  for (const auto& w : wanted)
    if (known.count(w)) out.push_back(w);
  return out;
}

struct selected_backend {
  backend* impl;
  std::vector<point_spec> points;
};

}  // namespace

int run_sweep_command(const sweep_args& a, const std::vector<std::string>& argv) {
  // ---- validate everything before measuring anything ----
  measure_options opts;
  opts.target_ci = a.quick && a.target_ci == 0.01 ? 0.05 : a.target_ci;
  opts.max_time_s = a.quick && a.max_time == 0.25 ? 0.01 : a.max_time;
  opts.warmup_s = a.quick && a.warmup == 0.005 ? 0.0005 : a.warmup;
  opts.verify = !a.no_verify;
  opts.watchdog_s = a.watchdog;
  if (!(a.watchdog == -1 || (a.watchdog >= 0 && a.watchdog <= 86400)))
    throw usage_error(fmt::format("--watchdog {} is out of range [0, 86400] seconds (0 turns it off)", a.watchdog));
  if (!(opts.target_ci > 0 && opts.target_ci < 1))
    throw usage_error(fmt::format("--target-ci {} is out of range: give a fraction above 0 and below 1 (0.01 = 1%)", a.target_ci));
  if (!(opts.max_time_s > 0 && opts.max_time_s <= 3600))
    throw usage_error(fmt::format("--max-time {} is out of range (0, 3600] seconds", a.max_time));
  if (!(opts.warmup_s >= 0 && opts.warmup_s <= 60))
    throw usage_error(fmt::format("--warmup {} is out of range [0, 60] seconds", a.warmup));
  if (a.threads > 1024) throw usage_error(fmt::format("--threads {} is absurd (at most 1024)", a.threads));

  std::vector<std::uint64_t> sizes;
  if (!a.sizes.empty()) {
    sizes = parse_size_list(a.sizes);
  } else if (a.quick && a.min == "1" && a.max == "256M") {
    for (std::uint64_t s = 1; s <= (16ull << 20); s *= 16) sizes.push_back(s);
  } else {
    sizes = pow2_range(parse_size(a.min), parse_size(a.max));
  }
  const system_info sys = probe_system();
  for (auto s : sizes)
    if (sys.memory_bytes && s > sys.memory_bytes)
      throw usage_error(fmt::format("size {} ({} B) is larger than this machine's memory ({} B)", format_size(s), s,
                                    sys.memory_bytes));

  std::vector<direction> dirs;
  for (const auto& d : a.directions) dirs.push_back(parse_direction(d));

  check_outputs({{"--json", a.json}, {"--csv", a.csv}});

  backend_options bopts;
  bopts.threads = a.threads;
  bopts.kinds.alignment = parse_size(a.alignment);
  bopts.kinds.unaligned_offset = a.unaligned_offset;
  // The kinds check their own parameters; checked here, a bad value is one
  // usage error instead of every point failing.
  try {
    mem::make_host_kind("aligned", bopts.kinds);
  } catch (const std::invalid_argument& e) {
    throw usage_error(fmt::format("--alignment {}: {}", a.alignment, e.what()));
  }
  try {
    mem::make_host_kind("pageable-unaligned", bopts.kinds);
  } catch (const std::invalid_argument& e) {
    throw usage_error(fmt::format("--unaligned-offset {}: {}", a.unaligned_offset, e.what()));
  }
  auto entries = make_backends(bopts);

  std::vector<backend_entry*> chosen;
  if (a.backends.empty()) {
    for (auto& e : entries)
      if (e.impl) chosen.push_back(&e);
  } else {
    std::vector<std::string> known;
    for (auto& e : entries) known.push_back(e.name);
    for (const auto& sel : a.backends) {
      std::vector<backend_entry*> matches;
      for (auto& e : entries)
        if (backend_matches(sel, e.name)) matches.push_back(&e);
      if (matches.empty())
        throw usage_error(fmt::format("unknown backend '{}' (known: {})", sel, fmt::join(known, ", ")));
      bool any = false;
      for (auto* e : matches)
        if (e->impl && std::find(chosen.begin(), chosen.end(), e) == chosen.end()) chosen.push_back(e), any = true;
      if (!any && std::none_of(matches.begin(), matches.end(), [](auto* e) { return e->impl != nullptr; }))
        throw std::runtime_error(fmt::format("backend {} is unavailable: {}", matches[0]->name, matches[0]->reason));
    }
  }

  // Names must be known to at least one chosen backend; each backend then
  // runs the ones it knows.
  std::set<std::string> all_routes, all_kinds;
  for (auto* e : chosen) {
    for (const auto& r : e->impl->routes()) all_routes.insert(r.name);
    for (const auto& k : e->impl->host_memory_kinds()) all_kinds.insert(k.name);
  }
  for (const auto& r : a.routes)
    if (!all_routes.count(r))
      throw usage_error(fmt::format("unknown route '{}' (known: {})", r, fmt::join(all_routes, ", ")));
  for (const auto& k : a.memory)
    if (!all_kinds.count(k))
      throw usage_error(fmt::format("unknown host memory kind '{}' (known: {})", k, fmt::join(all_kinds, ", ")));

  std::vector<selected_backend> plan;
  std::size_t total = 0;
  std::set<direction> dirs_covered;
  for (auto* e : chosen) {
    std::set<std::string> routes, kinds;
    for (const auto& r : e->impl->routes()) routes.insert(r.name);
    for (const auto& k : e->impl->host_memory_kinds()) kinds.insert(k.name);
    sweep_spec spec;
    spec.devices = a.devices;
    spec.routes = keep_known(a.routes, routes);
    spec.host_memory = keep_known(a.memory, kinds);
    spec.sizes = sizes;
    if ((!a.routes.empty() && spec.routes.empty()) || (!a.memory.empty() && spec.host_memory.empty())) continue;
    // Directions: only those some selected route of this backend moves.
    for (direction d : dirs) {
      for (const auto& r : e->impl->routes()) {
        const bool route_selected = spec.routes.empty() || std::count(spec.routes.begin(), spec.routes.end(), r.name);
        if (route_selected && std::count(r.directions.begin(), r.directions.end(), d)) {
          spec.directions.push_back(d);
          dirs_covered.insert(d);
          break;
        }
      }
    }
    if (!dirs.empty() && spec.directions.empty()) continue;
    if (dirs.empty())
      for (direction d : all_directions()) dirs_covered.insert(d);
    auto points = expand(*e->impl, spec);
    total += points.size();
    plan.push_back({e->impl.get(), std::move(points)});
  }
  for (direction d : dirs)
    if (!dirs_covered.count(d))
      throw usage_error(fmt::format("no selected backend and route moves data {}", to_string(d)));
  if (total == 0) throw usage_error("the selection leaves no point to measure");

  // ---- run ----
  run_context ctx;
  ctx.tool_version = XFER_VERSION;
  ctx.started_at = utc_now();
  ctx.system = sys;
  for (auto& p : plan) ctx.system.backend_versions[p.impl->name()] = p.impl->versions();
  std::vector<std::string> sizes_text;
  for (auto s : sizes) sizes_text.push_back(format_size(s));
  ctx.config = {{"argv", argv},
                {"backends", [&] {
                   std::vector<std::string> n;
                   for (auto& p : plan) n.push_back(p.impl->name());
                   return n;
                 }()},
                {"sizes", sizes},
                {"target_ci", opts.target_ci},
                {"max_time_s", opts.max_time_s},
                {"warmup_s", opts.warmup_s},
                {"verify", opts.verify},
                {"quick", a.quick},
                {"alignment", bopts.kinds.alignment},
                {"unaligned_offset", a.unaligned_offset}};

  // A result written to stdout has it to itself; the table goes to stderr.
  std::ostream& table = writes_to_stdout(a.json) || writes_to_stdout(a.csv) ? std::cerr : std::cout;
  multi_reporter out;
  out.add(std::make_unique<console_reporter>(table));
  if (!a.json.empty()) out.add(std::make_unique<json_reporter>(a.json));
  if (!a.csv.empty()) out.add(std::make_unique<csv_reporter>(a.csv));
  progress_line progress(out, table);
  const bool show_progress = !a.quiet && ::isatty(STDERR_FILENO);
  link_limit_check sink(show_progress ? static_cast<reporter&>(progress) : out, sys);

  auto& stop = install_interrupt_flag();
  sink.report_context(ctx);
  sweep_outcome all;
  std::size_t done_before = 0;
  for (auto& p : plan) {
    progress_fn on_progress;
    if (show_progress)
      on_progress = [&](std::size_t done, std::size_t, const point_spec& spec) {
        if (done < p.points.size()) progress.show(done_before + done, total, spec);
      };
    const auto o = run_sweep(*p.impl, p.points, opts, sink, stop, on_progress);
    all.ok += o.ok;
    all.skipped += o.skipped;
    all.failed += o.failed;
    all.abandoned = all.abandoned || o.abandoned;
    done_before += p.points.size();
    if (o.interrupted) {
      all.interrupted = true;
      break;
    }
  }
  sink.finalize(all.interrupted);
  if (!a.json.empty()) fmt::print(stderr, "wrote {}\n", a.json);
  if (!a.csv.empty()) fmt::print(stderr, "wrote {}\n", a.csv);
  const int rc = all.interrupted ? interrupted_exit_code() : all.failed ? exit_failure : exit_ok;
  if (all.abandoned) {
    // A thread is stuck inside a backend: destroying the backends would wait
    // on it (or free what it uses). The results are written; leave now.
    std::cout.flush();
    std::fflush(stdout);
    std::fflush(stderr);
    std::_Exit(rc);
  }
  return rc;
}

}  // namespace xfer::cli
