// Fleet mode's protocol (run.hpp): who this rank is, its checks, its device,
// the alone and together phases with their barriers, and the merge on rank 0.
#include <xfer/fleet/run.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <xfer/config.hpp>
#include <xfer/core/describe.hpp>
#include <xfer/core/errors.hpp>
#include <xfer/core/interrupt.hpp>
#include <xfer/core/output_file.hpp>
#include <xfer/core/plan.hpp>
#include <xfer/core/reporter.hpp>
#include <xfer/core/session.hpp>
#include <xfer/core/size.hpp>
#include <xfer/core/system_probe.hpp>
#include <xfer/fleet/comm.hpp>

namespace xfer::fleet {
namespace {

fault_hook& the_fault_hook() {
  static fault_hook hook;
  return hook;
}

// The backend fleet mode measures when none is named: the first whose
// devices are not CPUs (a GPU), else the host reference.
backend* default_backend(std::vector<backend_entry>& entries) {
  for (auto& e : entries)
    if (e.impl && e.name != "host")
      for (const auto& d : e.impl->devices())
        if (d.type != "cpu") return e.impl.get();
  for (auto& e : entries)
    if (e.impl && e.name == "host") return e.impl.get();
  return nullptr;
}

// The judge's thresholds and the baseline, for a run and a merge alike: what
// is wrong, or empty. Fills the baseline.
std::string check_judge(const selection& s, std::vector<rank_report>& baseline) {
  // Finite: an infinite --mad-k flags no outlier however slow.
  const thresholds& t = s.judge;
  if (!(t.mad_k > 0 && std::isfinite(t.mad_k))) return fmt::format("--mad-k {} must be above 0 and finite", t.mad_k);
  if (!(t.tolerance >= 0 && t.tolerance < 1))
    return fmt::format("--tolerance {} is out of range [0, 1): a fraction of the median", t.tolerance);
  if (!(t.min_ceiling_fraction >= 0 && t.min_ceiling_fraction <= 1))
    return fmt::format("--min-ceiling {} is out of range [0, 1]: a fraction of the link's ceiling",
                       t.min_ceiling_fraction);
  if (!s.baseline.empty()) {
    try {
      baseline = read_fleet_file(s.baseline);
    } catch (const std::exception& e) {
      return fmt::format("--baseline: {}", e.what());
    }
  }
  return {};
}

// Bad input, checked on every rank alike (rank 0 says it): what is wrong, or
// empty. Fills the parsed size and the baseline. A size beyond this node's
// memory (`memory_bytes`, 0: unknown) is refused before anything is
// allocated, as sweep refuses it: its health points could only be skipped.
std::string check_input(const selection& s, bool root, std::uint64_t memory_bytes, std::uint64_t& bytes,
                        std::vector<rank_report>& baseline) {
  try {
    bytes = parse_size(s.size);
    check_sizes_fit({bytes}, memory_bytes);
  } catch (const usage_error& e) {
    return fmt::format("--size: {}", e.what());
  }
  if (bytes < 4096) return fmt::format("--size {} is below 4K: the health set's bandwidth needs large transfers", s.size);
  if (!(s.measure.max_time_s > 0 && s.measure.max_time_s <= max_time_ceiling_s))
    return fmt::format("--max-time {} is out of range (0, {}] for fleet mode", s.measure.max_time_s, max_time_ceiling_s);
  // Finite: an endless wait leaves a hung rank hanging the fleet.
  if (!(s.rank_timeout_s > 0 && std::isfinite(s.rank_timeout_s)))
    return fmt::format("--rank-timeout {} must be above 0 and finite", s.rank_timeout_s);
  try {
    check_host_devices(s.host_devices, s.backends);
  } catch (const usage_error& e) {
    return e.what();
  }
  if (s.repeat < 1 || s.repeat > max_repeat)
    return fmt::format("--repeat {} is out of range [1, {}]", s.repeat, max_repeat);
  if (auto bad = check_judge(s, baseline); !bad.empty()) return bad;
  if (root && !s.json.empty()) {
    try {
      check_writable(s.json);
    } catch (const std::exception& e) {
      return fmt::format("--json: {}", e.what());
    }
  }
  if (!s.out_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(s.out_dir, ec);
    if (ec) return fmt::format("--out-dir {}: {}", s.out_dir, ec.message());
  }
  return {};
}

// This rank's device: the local rank's, with its PCIe link where sysfs knows it.
void take_device(rank_report& report, const backend& b, const system_info& sys) {
  const auto devices = b.devices();
  const identity& me = report.who;
  if (me.local_rank >= static_cast<int>(devices.size())) {
    report.status = "too many ranks";
    report.reason = fmt::format("local rank {} on {}, but backend {} has {} device{} there: start at most {} rank{} "
                                "per node",
                                me.local_rank, me.node, b.name(), devices.size(), devices.size() == 1 ? "" : "s",
                                devices.size(), devices.size() == 1 ? "" : "s");
    return;
  }
  const device_info& d = devices[static_cast<std::size_t>(me.local_rank)];
  report.device = d.index;
  report.device_name = d.name;
  if (auto it = d.details.find("pci_bus_id"); it != d.details.end()) report.device_pci = it->second;
  for (const auto& l : sys.accelerators)
    if (!report.device_pci.empty() && l.address == report.device_pci) report.link = l;
}

// The two phases on this rank, into report.points; true when a point's
// thread was left stuck in the backend (the watchdog's), which then must not
// be destroyed.
bool measure_phases(const selection& s, comm& c, backend& b, std::uint64_t bytes, rank_report& report,
                    const std::atomic<bool>& stop) {
  const identity& me = report.who;
  std::vector<health_test> tests;
  if (report.device >= 0) tests = health_set(b, report.device, bytes);
  bool abandoned = false;
  const auto run_point = [&](const health_test& t, const char* phase, int repeat) {
    collecting_reporter out;
    if (abandoned) {
      // The backend still has a thread inside it: measuring on would only hang again.
      point_result r;
      r.spec = t.spec;
      r.device_name = report.device_name;
      r.status = point_status::skipped;
      r.reason = "not run: an earlier health point of this rank never returned (the watchdog left it)";
      out.points.push_back(r);
    } else {
      abandoned = run_sweep(b, std::vector<point_spec>{t.spec}, s.measure, out, stop).abandoned;
    }
    for (auto& r : out.points) {
      if (report.link) flag_link_limit(r, *report.link);
      r.fleet = point_result::fleet_tag{me.node, me.rank, me.local_rank, phase, repeat, t.name};
      report.points.push_back(std::move(r));
    }
  };
  bool in_step = true;
  const auto lost = [&](const char* phase) {
    report.status = "error";
    report.reason = fmt::format("the ranks did not all meet within --rank-timeout {} s in the {} phase (a rank died "
                                "or hung); stopped there",
                                s.rank_timeout_s, phase);
    in_step = false;
  };
  const int steps = c.max_local_size();
  const auto order = health_order(tests.size(), s.repeat);
  if (s.alone && c.coordinated()) {
    for (int step = 0; step < steps && in_step && !stop.load(); ++step) {
      if (step == me.local_rank)
        for (const auto& [rep, i] : order) run_point(tests[i], "alone", rep);
      if (!c.barrier(s.rank_timeout_s)) lost("alone");
    }
  }
  if (in_step && !stop.load()) {
    if (const auto& hook = the_fault_hook()) hook(me.rank, s.rank_timeout_s, stop);
    for (const auto& [rep, i] : order) {
      // Each test starts on every rank at once, so the ranks' points overlap.
      if (!c.barrier(s.rank_timeout_s)) {
        lost("together");
        break;
      }
      run_point(tests[i], "together", rep);
    }
    // A rank with no device meets the others at as many barriers as they pass.
    if (tests.empty() && in_step) {
      const std::size_t barriers = health_order(health_set(b, 0, bytes).size(), s.repeat).size();
      for (std::size_t i = 0; i < barriers && in_step; ++i)
        if (!c.barrier(s.rank_timeout_s)) lost("together");
    }
  }
  return abandoned;
}

// Rank 0's merge of the gathered reports; a garbled one counts missing, said why.
std::vector<std::optional<rank_report>> read_reports(const std::vector<std::optional<std::string>>& texts) {
  std::vector<std::optional<rank_report>> reports;
  for (std::size_t i = 0; i < texts.size(); ++i) {
    if (!texts[i]) {
      reports.emplace_back();
      continue;
    }
    try {
      reports.push_back(rank_report_from_json(*texts[i]));
    } catch (const std::exception& e) {
      fmt::print(stderr, "xferbench: rank {}'s report could not be read: {}\n", i, e.what());
      reports.emplace_back();
    }
  }
  return reports;
}

// Rank 0's (or the merge's) last word: the fleet file, and the verdict on
// the console, its first line saying it all for a scheduler's log.
void conclude(const merged& m, const std::string& json_path, const std::string& file, const std::string& healthy) {
  if (!json_path.empty()) {
    write_output(json_path, file);
    fmt::print(stderr, "wrote {}\n", json_path);
  }
  const std::string verdict =
      m.exit_code == 0 ? healthy
                       : fmt::format("fleet {} (exit {}): {}",
                                     m.exit_code == 128 + m.interrupted_by ? "run interrupted" : "unhealthy", m.exit_code,
                                     !m.problems.empty() ? m.problems.front() : m.findings.front().why);
  auto& console = writes_to_stdout(json_path) ? stderr : stdout;
  fmt::print(console, "{}\n{}", verdict, fleet_text(m));
  if (m.exit_code != 0) fmt::print(stderr, "xferbench: {}\n", verdict);
  std::fflush(nullptr);
}

// A backend with a thread stuck inside it cannot be destroyed (it would wait
// for it): such a process leaves without running destructors.
int leave(int code, bool abandoned) {
  if (abandoned) {
    std::fflush(nullptr);
    std::_Exit(code);
  }
  return code;
}

}  // namespace

void set_fault_hook(fault_hook hook) { the_fault_hook() = std::move(hook); }

int run(const selection& s, const std::function<std::vector<backend_entry>()>& make_entries, run_context ctx) {
  std::unique_ptr<comm> c;
  try {
    c = choose_comm(!s.out_dir.empty());
  } catch (const usage_error& e) {
    // Every rank's own environment is wrong: each says so.
    fmt::print(stderr, "xferbench: error: {}\n", e.what());
    return exit_usage;
  }
  if (!c) return exit_no_mpi;
  return run(s, *c, make_entries, std::move(ctx));
}

int run(const selection& s, comm& c, const std::function<std::vector<backend_entry>()>& make_entries, run_context ctx) {
  const identity me = c.who();
  const bool root = me.rank == 0;
  const auto usage = [&](const std::string& what) -> int {
    if (root) fmt::print(stderr, "xferbench: error: {}\n", what);
    c.finish();
    return exit_usage;
  };
  std::uint64_t bytes = 0;
  std::vector<rank_report> baseline;
  if (const auto bad = check_input(s, root, ctx.system.memory_bytes, bytes, baseline); !bad.empty()) return usage(bad);

  auto entries = make_entries();
  backend* b = nullptr;
  try {
    if (s.backends.empty()) {
      b = default_backend(entries);
    } else {
      const auto chosen = select_backends(entries, s.backends);
      if (chosen.size() != 1)
        return usage(fmt::format("-b {} names {} backends; fleet mode measures one", fmt::join(s.backends, ","),
                                 chosen.size()));
      b = chosen.front();
    }
  } catch (const usage_error& e) {
    return usage(e.what());
  }
  if (!b) throw std::runtime_error("no backend can run here");

  rank_report report;
  report.who = me;
  report.version = XFER_VERSION;
  report.transport = c.name();
  // What every rank must share for the fleet to be one measurement.
  report.options = fmt::format("backend={} size={} max_time={} alone={} repeat={} host_devices={}", b->name(), bytes,
                               s.measure.max_time_s, s.alone, s.repeat, s.host_devices);
  take_device(report, *b, ctx.system);
  const auto& stop = install_interrupt_flag();
  const bool abandoned = measure_phases(s, c, *b, bytes, report, stop);
  // The link as it reads right after the rank's own transfers: idle, a GPU
  // lowers its link's generation to save power.
  if (report.link)
    for (const auto& l : probe_system().accelerators)
      if (l.address == report.link->address) report.link = l;
  if (stop.load() && report.status == "ok") {
    report.status = "error";
    report.reason = fmt::format("interrupted by signal {}", interrupt_signal());
    report.interrupted_by = interrupted_exit_code() - 128;
  }

  add_backend(ctx, *b);
  ctx.config["command"] = "fleet";
  ctx.config["backend"] = b->name();
  ctx.config["size"] = bytes;
  ctx.config["max_time_s"] = s.measure.max_time_s;
  ctx.config["repeat"] = s.repeat;
  ctx.config["rank_timeout_s"] = s.rank_timeout_s;
  ctx.config["transport"] = c.name();
  ctx.config["ranks"] = me.size;
  const std::string missing_why = fmt::format("died, or hung past --rank-timeout {} s", s.rank_timeout_s);

  if (!s.out_dir.empty()) {
    // One file per rank; the merge judges the fleet (xferbench fleet --merge DIR).
    const merged one = merge({report}, s.judge, nullptr, missing_why);
    write_output(std::filesystem::path(s.out_dir) / fmt::format("rank-{:05}.json", me.rank), fleet_json(ctx, one));
    // No rank 0 speaks for this one: it says itself why it ran nothing.
    if (report.status == "too many ranks") fmt::print(stderr, "xferbench: error: rank {}: {}\n", me.rank, report.reason);
    c.finish();
    return leave(report.status == "too many ranks" ? exit_too_many_ranks : one.exit_code, abandoned);
  }

  const auto texts = c.gather(to_json_text(report), s.rank_timeout_s);
  if (!root) {
    c.finish();
    return leave(exit_ok, abandoned);
  }
  const merged m = merge(read_reports(texts), s.judge, baseline.empty() ? nullptr : &baseline, missing_why);
  conclude(m, s.json, fleet_json(ctx, m),
           fmt::format("fleet healthy: {} rank{} on {}", me.size, me.size == 1 ? "" : "s", b->name()));
  if (!m.missing.empty()) c.abort_all(m.exit_code);
  c.finish();
  return leave(stop.load() ? interrupted_exit_code() : m.exit_code, abandoned);
}

int merge_dir(const std::string& dir, const selection& s) {
  // Signals reach a handler: a wait on a FIFO (a rank file's reader) ends at the next one.
  install_interrupt_flag();
  std::vector<std::string> paths;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("rank-", 0) == 0 && e.path().extension() == ".json") paths.push_back(e.path().string());
  }
  std::sort(paths.begin(), paths.end());
  const auto usage = [](const std::string& what) {
    fmt::print(stderr, "xferbench: error: {}\n", what);
    return exit_usage;
  };
  if (ec) return usage(fmt::format("--merge {}: {}", dir, ec.message()));
  if (paths.empty()) return usage(fmt::format("{}: no rank-*.json files (written by `xferbench fleet --out-dir {}`)", dir, dir));
  std::vector<rank_report> baseline;
  if (auto bad = check_judge(s, baseline); !bad.empty()) return usage(bad);
  merged_files f;
  try {
    f = merge_rank_files(paths, s.judge, s.baseline.empty() ? nullptr : &baseline, fmt::format("no file in {}", dir));
  } catch (const std::exception& e) {
    return usage(e.what());
  }
  const std::string out = s.json.empty() ? (std::filesystem::path(dir) / "fleet.json").string() : s.json;
  conclude(f.m, out, f.json, fmt::format("fleet healthy: {} ranks", f.m.ranks.size()));
  return f.m.exit_code;
}

}  // namespace xfer::fleet
