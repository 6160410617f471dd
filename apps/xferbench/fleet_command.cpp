// xferbench fleet: the health set on every device of a node or a cluster, one
// rank per device, with the slow one flagged (core/fleet.hpp).
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <thread>
#include <unistd.h>
#include <xfer/backends/registry.hpp>
#include <xfer/config.hpp>
#include <xfer/core/errors.hpp>
#include <xfer/core/fleet.hpp>
#include <xfer/core/interrupt.hpp>
#include <xfer/core/output_file.hpp>
#include <xfer/core/reporter.hpp>
#include <xfer/core/runner.hpp>
#include <xfer/core/size.hpp>
#include <xfer/core/system_probe.hpp>

#include "commands.hpp"
#include "fleet_comm.hpp"
#include "run_info.hpp"

namespace xfer::cli {
namespace {

struct collect final : reporter {
  std::vector<point_result> points;
  void report_context(const run_context&) override {}
  void report(const point_result& r) override { points.push_back(r); }
  void finalize(bool) override {}
};

std::string host_name() {
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  return host;
}

// For tests of the fault paths only (docs/fleet.md): XFER_FLEET_FAULT=die:R
// ends rank R at the start of the together phase, hang:R makes it sleep there.
void injected_fault(int rank) {
  const char* f = std::getenv("XFER_FLEET_FAULT");
  if (!f) return;
  const std::string s = f;
  const auto colon = s.find(':');
  if (colon == std::string::npos || std::to_string(rank) != s.substr(colon + 1)) return;
  if (s.substr(0, colon) == "die") std::_Exit(9);
  if (s.substr(0, colon) == "hang")
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
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

// Runs of the health set a phase may take: enough for a median that one or
// two transients cannot move, few enough that a mistyped count cannot hold
// a node for an hour (each run is 5 points per rank, alone and together).
constexpr int max_repeat = 20;

}  // namespace

void add_fleet_options(CLI::App& cmd, fleet_args& a) {
  cmd.footer(
      "Start one rank per device: mpirun -np 4 --bind-to none xferbench fleet --json fleet.json (or srun).\n"
      "Without MPI: a launcher that sets rank variables (SLURM_PROCID, OMPI_COMM_WORLD_RANK, RANK...) and\n"
      "--out-dir DIR: each rank writes DIR/rank-N.json; merge them with `xferbench-report fleet DIR`.\n"
      "Each rank runs the health set (pinned h2d, d2h, both at once at --size, a 4-byte latency, pageable h2d)\n"
      "first one device of each node at a time, then every rank at once, --repeat times each (interleaved);\n"
      "rank 0 writes one file and lists the outliers, each rank judged by the median of its repeats\n"
      "(fleet median +- MAD, the link's ceiling, --baseline) and named only when its best repeat is slow too.\n"
      "docs/fleet.md.\n"
      "Exit codes: 0 healthy, 1 runtime failure, 2 bad input, 3 unhealthy (an outlier, a failed point, a link\n"
      "below its best), 4 a rank missing (died, or hung past --rank-timeout; for a dying rank Open MPI needs\n"
      "--mca orte_enable_recovery 1, and then exits 0: `xferbench-report fleet FILE` exits with the verdict),\n"
      "5 ranks disagree (versions or options), 6 more ranks on a node than devices, 7 several ranks but no MPI\n"
      "in this build and no --out-dir. Give mpirun --bind-to none: xferbench places each rank near its GPU.\n" +
      std::string(mpi_built() ? "This build's MPI transport: built in." : "This build's MPI transport: not built (no MPI was found)."));
  cmd.add_option("-b,--backend", a.backend, "the backend (default: the first with a GPU, else host)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  cmd.add_option("--size", a.size, "bytes per bandwidth transfer (default 256M; at least 4K)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  cmd.add_option("--max-time", a.max_time, "sampling budget per point, seconds")->capture_default_str()
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  cmd.add_option("--rank-timeout", a.rank_timeout,
                 "seconds a rank may take for one phase, and rank 0 waits for the reports, before a rank counts as "
                 "missing")
      ->capture_default_str()
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  cmd.add_option("--baseline", a.baseline, "a known-good fleet result file to compare with")->check(CLI::ExistingFile);
  cmd.add_option("--mad-k", a.mad_k, "an outlier is worse than the fleet median by more than k x 1.4826 x MAD...")
      ->capture_default_str();
  cmd.add_option("--tolerance", a.tolerance, "... and by more than this fraction of the median (also the baseline's)")
      ->capture_default_str();
  cmd.add_option("--min-ceiling", a.min_ceiling, "pinned bandwidth below this fraction of the link's ceiling is unhealthy")
      ->capture_default_str();
  cmd.add_flag("--no-alone", a.no_alone, "skip the alone phase (only every rank at once)");
  cmd.add_option("--repeat", a.repeat,
                 "runs of the health set per phase, interleaved; each rank is judged by its median (1 to 20)")
      ->capture_default_str()
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  add_host_devices_option(cmd, a.host_devices);
  cmd.add_option("--out-dir", a.out_dir, "write this rank's file DIR/rank-N.json instead of gathering over MPI")
      ->check(not_empty());
  cmd.add_option("--json", a.json, "rank 0 writes the fleet's result file here (- for stdout)")->check(not_empty());
}

int run_fleet_command(const fleet_args& a, const std::vector<std::string>& argv) {
  // ---- who am I, and how do the ranks meet ----
  const std::string node = host_name();
  const auto env_id = fleet::identity_from_env([](const char* n) { return std::getenv(n); }, node);
  std::unique_ptr<fleet_comm> comm;
  if (!a.out_dir.empty())
    comm = make_files_comm(env_id.value_or(fleet::identity{0, 1, 0, 1, node}));
  else if (mpi_built() && mpi_launched())
    comm = make_mpi_comm();
  else if (env_id && env_id->size > 1) {
    if (env_id->rank == 0)
      fmt::print(stderr,
                 "xferbench: error: started as {} ranks by a launcher, but this xferbench was built without MPI: give "
                 "--out-dir DIR (one file per rank, merged by `xferbench-report fleet DIR`), or rebuild with MPI "
                 "(Debian: libopenmpi-dev)\n",
                 env_id->size);
    return fleet::exit_no_mpi;
  } else
    comm = make_single_comm(node);
  const fleet::identity me = comm->who();
  const bool root = me.rank == 0;

  // ---- check the input (every rank the same; rank 0 says it) ----
  const auto usage = [&](const std::string& what) -> int {
    if (root) fmt::print(stderr, "xferbench: error: {}\n", what);
    comm->finish();
    return exit_usage;
  };
  std::uint64_t bytes = 0;
  try {
    bytes = parse_size(a.size);
  } catch (const usage_error& e) {
    return usage(fmt::format("--size: {}", e.what()));
  }
  if (bytes < 4096) return usage(fmt::format("--size {} is below 4K: the health set's bandwidth needs large transfers", a.size));
  if (!(a.max_time > 0 && a.max_time <= 60)) return usage(fmt::format("--max-time {} is out of range (0, 60]", a.max_time));
  if (!(a.rank_timeout > 0)) return usage(fmt::format("--rank-timeout {} must be above 0", a.rank_timeout));
  if (!(a.mad_k > 0) || !(a.tolerance >= 0 && a.tolerance < 1) || !(a.min_ceiling >= 0 && a.min_ceiling <= 1))
    return usage("--mad-k must be above 0, --tolerance and --min-ceiling fractions in [0, 1)");
  if (a.repeat < 1 || a.repeat > max_repeat)
    return usage(fmt::format("--repeat {} is out of range [1, {}]", a.repeat, max_repeat));
  std::vector<fleet::rank_report> baseline;
  if (!a.baseline.empty()) {
    try {
      baseline = fleet::read_fleet_file(a.baseline);
    } catch (const std::exception& e) {
      return usage(fmt::format("--baseline: {}", e.what()));
    }
  }
  if (root && !a.json.empty()) {
    try {
      check_writable(a.json);
    } catch (const std::exception& e) {
      return usage(fmt::format("--json: {}", e.what()));
    }
  }
  if (!a.out_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(a.out_dir, ec);
    if (ec) return usage(fmt::format("--out-dir {}: {}", a.out_dir, ec.message()));
  }

  backend_options bopts;
  bopts.host_devices = a.host_devices;
  auto entries = make_backends(bopts);
  backend* b = nullptr;
  try {
    if (a.backend.empty()) {
      b = default_backend(entries);
    } else {
      const auto chosen = select_backends(entries, {a.backend});
      if (chosen.size() != 1)
        return usage(fmt::format("-b {} names {} backends; fleet mode measures one", a.backend, chosen.size()));
      b = chosen.front();
    }
  } catch (const usage_error& e) {
    return usage(e.what());
  }
  if (!b) throw std::runtime_error("no backend can run here");

  measure_options opts;
  opts.max_time_s = a.max_time;
  opts.target_ci = 0.02;
  const system_info sys = probe_system();

  fleet::rank_report report;
  report.who = me;
  report.version = XFER_VERSION;
  report.transport = comm->name();
  // What every rank must share for the fleet to be one measurement.
  report.options = fmt::format("backend={} size={} max_time={} alone={} repeat={} host_devices={}", b->name(), bytes,
                               a.max_time, !a.no_alone, a.repeat, a.host_devices);
  const auto devices = b->devices();
  if (me.local_rank >= static_cast<int>(devices.size())) {
    report.status = "too many ranks";
    report.reason = fmt::format("local rank {} on {}, but backend {} has {} device{} there: start at most {} rank{} "
                                "per node",
                                me.local_rank, me.node, b->name(), devices.size(), devices.size() == 1 ? "" : "s",
                                devices.size(), devices.size() == 1 ? "" : "s");
  } else {
    const device_info& d = devices[static_cast<std::size_t>(me.local_rank)];
    report.device = d.index;
    report.device_name = d.name;
    if (auto it = d.details.find("pci_bus_id"); it != d.details.end()) report.device_pci = it->second;
    for (const auto& l : sys.accelerators)
      if (!report.device_pci.empty() && l.address == report.device_pci) report.link = l;
  }

  // ---- measure: alone (one device of each node at a time), then together ----
  const auto& stop = install_interrupt_flag();
  std::vector<fleet::health_test> tests;
  if (report.device >= 0) tests = fleet::health_set(*b, report.device, bytes);
  bool abandoned = false;  // a point's thread is stuck in the backend (the watchdog left it)
  const auto run_point = [&](const fleet::health_test& t, const char* phase, int repeat) {
    collect out;
    if (abandoned) {
      // The backend still has a thread inside it: measuring on would only hang again.
      point_result r;
      r.spec = t.spec;
      r.device_name = report.device_name;
      r.status = point_status::skipped;
      r.reason = "not run: an earlier health point of this rank never returned (the watchdog left it)";
      out.points.push_back(r);
    } else {
      abandoned = run_sweep(*b, std::vector<point_spec>{t.spec}, opts, out, stop).abandoned;
    }
    for (auto& r : out.points) {
      if (report.link) flag_link_limit(r, *report.link);
      r.fleet = point_result::fleet_tag{me.node, me.rank, me.local_rank, phase, repeat};
      report.points.push_back(std::move(r));
    }
  };
  bool in_step = true;
  const auto lost = [&](const char* phase) {
    report.status = "error";
    report.reason = fmt::format("the ranks did not all meet within --rank-timeout {} s in the {} phase (a rank died "
                                "or hung); stopped there",
                                a.rank_timeout, phase);
    in_step = false;
  };
  const int steps = comm->max_local_size();
  const auto order = fleet::health_order(tests.size(), a.repeat);
  if (!a.no_alone && comm->coordinated()) {
    for (int step = 0; step < steps && in_step && !stop.load(); ++step) {
      if (step == me.local_rank)
        for (const auto& [rep, i] : order) run_point(tests[i], "alone", rep);
      if (!comm->barrier(a.rank_timeout)) lost("alone");
    }
  }
  if (in_step && !stop.load()) {
    injected_fault(me.rank);
    for (const auto& [rep, i] : order) {
      // Each test starts on every rank at once, so the ranks' points overlap.
      if (!comm->barrier(a.rank_timeout)) {
        lost("together");
        break;
      }
      run_point(tests[i], "together", rep);
    }
    // A rank with no device meets the others at as many barriers as they pass.
    if (tests.empty() && in_step) {
      const std::size_t barriers = fleet::health_order(fleet::health_set(*b, 0, bytes).size(), a.repeat).size();
      for (std::size_t i = 0; i < barriers && in_step; ++i)
        if (!comm->barrier(a.rank_timeout)) lost("together");
    }
  }
  // The link as it reads right after the rank's own transfers: idle, a GPU
  // lowers its link's generation to save power.
  if (report.link)
    for (const auto& l : probe_system().accelerators)
      if (l.address == report.link->address) report.link = l;
  if (stop.load() && report.status == "ok") {
    report.status = "error";
    report.reason = fmt::format("interrupted by signal {}", interrupt_signal());
  }

  // ---- report ----
  run_context ctx = make_context(sys, argv);
  ctx.system.backend_versions[b->name()] = b->versions();
  ctx.config["command"] = "fleet";
  ctx.config["backend"] = b->name();
  ctx.config["size"] = bytes;
  ctx.config["max_time_s"] = a.max_time;
  ctx.config["repeat"] = a.repeat;
  ctx.config["rank_timeout_s"] = a.rank_timeout;
  ctx.config["transport"] = comm->name();
  ctx.config["ranks"] = me.size;
  const fleet::thresholds th{a.mad_k, a.tolerance, a.min_ceiling};
  const std::string missing_why = fmt::format("died, or hung past --rank-timeout {} s", a.rank_timeout);

  if (!a.out_dir.empty()) {
    // One file per rank; the merge judges the fleet (xferbench-report fleet DIR).
    const fleet::merged one = fleet::merge({report}, th, nullptr, missing_why);
    const auto path = std::filesystem::path(a.out_dir) / fmt::format("rank-{:05}.json", me.rank);
    write_output(path, fleet::fleet_json(ctx, one));
    comm->finish();
    const int code = report.status == "too many ranks" ? fleet::exit_too_many_ranks : one.exit_code;
    if (abandoned) std::_Exit(code);
    return code;
  }

  const auto texts = comm->gather(fleet::to_json_text(report), a.rank_timeout);
  if (!root) {
    comm->finish();
    if (abandoned) std::_Exit(exit_ok);
    return exit_ok;
  }
  std::vector<std::optional<fleet::rank_report>> reports;
  for (std::size_t i = 0; i < texts.size(); ++i) {
    if (!texts[i]) {
      reports.emplace_back();
      continue;
    }
    try {
      reports.push_back(fleet::rank_report_from_json(*texts[i]));
    } catch (const std::exception& e) {
      // Garbled: counted missing, and said why (else it reads as a rank that died).
      fmt::print(stderr, "xferbench: rank {}'s report could not be read: {}\n", i, e.what());
      reports.emplace_back();
    }
  }
  const fleet::merged m = fleet::merge(std::move(reports), th, baseline.empty() ? nullptr : &baseline, missing_why);
  if (!a.json.empty()) {
    write_output(a.json, fleet::fleet_json(ctx, m));
    fmt::print(stderr, "wrote {}\n", a.json);
  }
  // The first line says it all, for a scheduler's log.
  const std::string verdict =
      m.exit_code == 0 ? fmt::format("fleet healthy: {} rank{} on {}", me.size, me.size == 1 ? "" : "s", b->name())
                       : fmt::format("fleet unhealthy (exit {}): {}", m.exit_code,
                                     !m.problems.empty() ? m.problems.front() : m.findings.front().why);
  auto& console = writes_to_stdout(a.json) ? stderr : stdout;
  fmt::print(console, "{}\n{}", verdict, fleet::fleet_text(m));
  if (m.exit_code != 0) fmt::print(stderr, "xferbench: {}\n", verdict);
  std::fflush(nullptr);
  if (!m.missing.empty()) comm->abort_all(m.exit_code);
  comm->finish();
  const int code = stop.load() ? interrupted_exit_code() : m.exit_code;
  // A backend with a thread stuck inside it cannot be destroyed (it would wait for it).
  if (abandoned) {
    std::fflush(nullptr);
    std::_Exit(code);
  }
  return code;
}

}  // namespace xfer::cli
