// xferbench fleet: the health set on every device of a node or a cluster, one
// rank per device, with the slow one flagged. The protocol is xfer/fleet/run.hpp's.
#include <cstdlib>
#include <fmt/format.h>
#include <memory>
#include <optional>
#include <xfer/backends/registry.hpp>
#include <xfer/config.hpp>
#include <xfer/core/describe.hpp>
#include <xfer/core/system_probe.hpp>
#include <xfer/fleet/comm.hpp>
#include <xfer/fleet/run.hpp>

#include "commands.hpp"
#include "options.hpp"

namespace xfer::cli {

// What fleet mode's selection (xfer/fleet/run.hpp) does not hold as parsed.
struct fleet_args {
  fleet::selection sel;
  std::optional<double> max_time;
  bool no_alone = false;
  std::string merge;  // a directory of rank files to merge and judge instead of measuring
};

static int run_fleet(fleet_args a, const std::vector<std::string>& argv) {
  a.sel.measure.max_time_s = a.max_time.value_or(fleet::default_max_time_s);
  a.sel.alone = !a.no_alone;
  const auto backends = [&] {
    backend_options o;
    o.host_devices = a.sel.host_devices;
    return make_backends(o);
  };
  if (!a.merge.empty()) return fleet::merge_dir(a.merge, a.sel);
  return fleet::run(a.sel, backends, make_context(probe_system(), argv));
}

command add_fleet_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "fleet", "a short health set on every device of a node or cluster, one rank per device (MPI), outliers flagged");
  auto a = std::make_shared<fleet_args>();
  fleet::selection& s = a->sel;
  cmd->footer(
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
      std::string(fleet::mpi_built() ? "This build's MPI transport: built in." : "This build's MPI transport: not built (no MPI was found)."));
  add_backends_option(*cmd, s.backends, "the backend (default: the first with a GPU, else host)");
  cmd->add_option("--size", s.size, "bytes per bandwidth transfer (default 256M; at least 4K)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  add_max_time_option(*cmd, a->max_time, fleet::default_max_time_s,
                      fmt::format("; at most {:g} in fleet mode, docs/fleet.md", fleet::max_time_ceiling_s));
  cmd->add_option("--rank-timeout", s.rank_timeout_s,
                 "seconds a rank may take for one phase, and rank 0 waits for the reports, before a rank counts as "
                 "missing")
      ->check(number_in(0, 86400, true, false, "(0, 86400] seconds"))
      ->capture_default_str()
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  cmd->add_option("--baseline", s.baseline, "a known-good fleet result file to compare with")->check(CLI::ExistingFile);
  cmd->add_option("--mad-k", s.judge.mad_k, "an outlier is worse than the fleet median by more than k x 1.4826 x MAD...")
      ->check(number_in(0, 1e6, true, false, "(0, 1e6]"))
      ->capture_default_str();
  cmd->add_option("--tolerance", s.judge.tolerance, "... and by more than this fraction of the median (also the baseline's)")
      ->check(number_in(0, 1, false, true, "[0, 1): a fraction of the median"))
      ->capture_default_str();
  cmd->add_option("--min-ceiling", s.judge.min_ceiling_fraction,
                 "pinned bandwidth below this fraction of the link's ceiling is unhealthy")
      ->check(number_in(0, 1, false, false, "[0, 1]: a fraction of the link's ceiling"))
      ->capture_default_str();
  cmd->add_flag("--no-alone", a->no_alone, "skip the alone phase (only every rank at once)");
  cmd->add_option("--repeat", s.repeat,
                 fmt::format("runs of the health set per phase, interleaved; each rank is judged by its median (1 to {})",
                             fleet::max_repeat))
      ->capture_default_str()
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  add_host_devices_option(*cmd, s.host_devices);
  auto* out_dir = cmd->add_option("--out-dir", s.out_dir, "write this rank's file DIR/rank-N.json instead of gathering over MPI")
      ->check(not_empty());
  auto* merge = cmd->add_option("--merge", a->merge,
                                "merge and judge the rank files of --out-dir DIR into one fleet file (--json, default "
                                "DIR/fleet.json) instead of measuring")
      ->check(CLI::ExistingDirectory);
  add_json_option(*cmd, s.json, "rank 0's fleet result file");
  // Refused rather than ignored: with --out-dir no rank writes a fleet file
  // and each judges only itself (--merge writes it and compares the ranks,
  // later), and --merge measures nothing.
  for (const char* fleet_wide : {"--json", "--baseline", "--mad-k", "--tolerance"}) out_dir->excludes(fleet_wide);
  for (const char* measuring : {"--backend", "--size", "--max-time", "--rank-timeout", "--no-alone", "--repeat",
                                "--host-devices", "--out-dir"})
    merge->excludes(measuring);
  return {cmd, [a](const std::vector<std::string>& argv) { return run_fleet(*a, argv); }};
}

}  // namespace xfer::cli
