#pragma once
// Fleet mode (`xferbench fleet`): one process ("rank") per device, on one
// node or many, each running a short fixed health set on its device, first
// one device of a node at a time ("alone"), then every rank at once
// ("together"); rank 0 gathers every rank's report into one result file and
// finds the outliers: the slow device, the slow node, the link that trained
// down. How ranks talk (MPI, or one file per rank) is a comm, and the phases
// and barriers are the protocol (src/fleet: xfer/fleet/comm.hpp, run.hpp);
// this file is what the fleet measures and how it judges, the one definition
// of an outlier (the report reads the verdicts from the file).
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>
#include <xfer/core/backend.hpp>
#include <xfer/core/result.hpp>

namespace xfer::fleet {

// Exit codes of `xferbench fleet`, beyond every command's 0, 1 and 2
// (session.hpp), so a batch scheduler's prolog can tell them apart. When
// several apply, the first in this order wins: disagree, too many ranks,
// no MPI, missing, unhealthy.
inline constexpr int exit_unhealthy = 3;       // an outlier, a failed health point, a link below its best
inline constexpr int exit_rank_missing = 4;    // a rank died, hung past --rank-timeout, or never reported
inline constexpr int exit_disagree = 5;        // ranks run different versions or options
inline constexpr int exit_too_many_ranks = 6;  // more ranks on a node than devices of the backend
inline constexpr int exit_no_mpi = 7;          // started as several ranks, but this build has no MPI and no --out-dir

// Sampling of a health point. Fleet mode's defaults differ from the sweep's
// (measure_options) on purpose, and only here:
// - max_time: a health point moves --size (256 MiB) per transfer, 5 ms at
//   55 GB/s and 20 ms on a link trained down: the sweep's 0.05 s would give a
//   point 2 to 10 samples, too few for a median that one transient cannot
//   move, so a health point samples for 0.1 s.
// - its ceiling: a phase runs 5 tests x --repeat points per rank, each up to
//   4 x max_time (measure()), and the alone phase runs a node's devices one
//   after another: 60 s a point already holds a node for hours, far past
//   --rank-timeout's 300 s; above it is a mistyped value, not a health check
//   (every command's own bound, (0, 3600], still applies first).
// - target_ci: ranks are compared with a 10% tolerance (thresholds), so a
//   median within 2% is precise enough, and quicker to reach than 1%.
inline constexpr double default_max_time_s = 0.1;
inline constexpr double max_time_ceiling_s = 60;
inline constexpr double target_ci = 0.02;
// Runs of the health set a phase may take (--repeat): enough for a median
// that one or two transients cannot move, few enough that a mistyped count
// cannot hold a node for an hour (each run is 5 points per rank, alone and
// together).
inline constexpr int max_repeat = 20;
// The most ranks a merged fleet may have: a rank file claiming more is refused
// before anything is sized by its claim (a million GPUs is beyond any job).
inline constexpr int max_ranks = 1 << 20;

// Who this process is.
struct identity {
  int rank = 0, size = 1;
  int local_rank = 0, local_size = 1;  // among the ranks of its node
  std::string node;                    // host name
};

// The launcher's rank variables (Open MPI, Slurm, PMI/MPICH, torchrun's
// RANK/LOCAL_RANK), read through `get` (getenv in the CLI, a map in tests);
// nullopt where none is set. The node is the host name given.
// Throws usage_error where a launcher's rank lies outside its job (rank >= size,
// or negative): running on as rank 0 would write rank 0's file.
std::optional<identity> identity_from_env(const std::function<const char*(const char*)>& get, const std::string& node);

// One test of the health set.
struct health_test {
  std::string name;  // "h2d-pinned", "d2h-pinned", "bidir-pinned", "latency-4B", "h2d-pageable"
  point_spec spec;
  bool latency = false;  // judged by latency (lower is better) instead of GB/s
};

// The fixed set for device `device` of `b`, `bytes` per transfer (256 MiB by
// default): pinned h2d, d2h and both at once, a 4-byte h2d copy for latency,
// and pageable h2d, on the backend's copy route (copy-async where it has one,
// else copy-sync, else memcpy). "Pinned" is the backend's page-locked kind
// (pinned; on the host backend, which has none, page-aligned memory).
std::vector<health_test> health_set(const backend& b, int device, std::uint64_t bytes);
// The health set's test names in its order: the one list (the fleet file
// carries it as fleet.tests, each point its own as fleet.test).
const std::vector<std::string>& health_test_names();

// The order a phase measures `repeats` runs of a set of `tests` tests in, as
// (repeat, test index): the whole set, then the whole set again, so that a
// transient (a few seconds of a slow host) lands on different tests rather
// than on every repeat of one.
std::vector<std::pair<int, std::size_t>> health_order(std::size_t tests, int repeats);

// What one rank sends rank 0.
struct rank_report {
  identity who;
  int device = -1;
  std::string device_name, device_pci;
  std::string version;  // the tool's version
  std::string options;  // the options every rank must share, as one string
  std::string transport;
  std::string status = "ok";  // "ok", or "error" with reason (the rank ran nothing, or stopped early)
  std::string reason;
  // The signal that stopped this rank early (SIGINT, SIGTERM); 0: none. Its
  // points so far are kept; the fleet is then interrupted, not unhealthy.
  int interrupted_by = 0;
  std::optional<pci_link> link;       // the device's PCIe link where sysfs knows it
  std::vector<point_result> points;   // each tagged with fleet (node, rank, phase, repeat)
};

std::string to_json_text(const rank_report& r);
// Throws std::runtime_error naming what is malformed.
rank_report rank_report_from_json(const std::string& text);

// Outlier rules (docs/fleet.md).
struct thresholds {
  double mad_k = 3;              // worse than the median by more than k robust sigmas (1.4826 x MAD)...
  double tolerance = 0.10;       // ... and by more than this fraction of it
  double min_ceiling_fraction = 0.5;  // pinned bandwidth below this share of the link's ceiling
};

struct finding {
  int rank = -1;
  std::string node;
  int device = -1;
  std::string phase, test;
  double value = 0, reference = 0;  // the point's figure and what it was judged against
  std::string why;
};

// The unhealthy points, ranks and links: against the fleet's median per
// (phase, test) with the MAD, against each link's ceiling, a link trained
// below its best, a failed health point, a rank that reported an error; and,
// with a baseline, against the baseline's median per (phase, test). A rank's
// figure for a (phase, test) is the median of its ok repeats (--repeat); the
// fleet's and the baseline's medians are over those per-rank medians. A rank
// is named only when its best repeat is past the mark too. Every failed
// repeat is a finding.
std::vector<finding> find_outliers(const std::vector<rank_report>& ranks, const thresholds& t,
                                   const std::vector<rank_report>* baseline = nullptr);

// The merged fleet: every rank's report, who is missing, what disagrees.
struct merged {
  std::vector<rank_report> ranks;     // by rank
  std::vector<int> missing;           // ranks that never reported
  std::vector<std::string> problems;  // one line each: disagreement, too many ranks, missing ranks
  std::vector<finding> findings;
  // A rank's interrupted_by: the run was stopped by this signal, and its exit
  // code is the session's for it (128 + the signal) unless a rank disagreed,
  // had too many ranks or went missing. 0: not interrupted.
  int interrupted_by = 0;
  int exit_code = 0;
};

// Merges the reports of `size` ranks (nullopt: the rank sent nothing) and
// judges them; `missing_why` says why a rank is missing ("died or hung past
// --rank-timeout 300 s").
merged merge(std::vector<std::optional<rank_report>> reports, const thresholds& t,
             const std::vector<rank_report>* baseline, const std::string& missing_why);

// The result file: schema xferbench/result/v2 with every rank's points in
// "results" (node, rank and device on each), and a "fleet" object: ranks
// (each with its verdict, "healthy" or "unhealthy", and why: its findings),
// missing, problems, findings (outliers first), healthy, exit_code.
std::string fleet_json(const run_context& context, const merged& m);
// The ranks of a fleet result file (for --baseline). Throws std::runtime_error.
std::vector<rank_report> read_fleet_file(const std::string& path);

// The rank files of `xferbench fleet --out-dir` (rank-N.json, one rank each)
// merged and judged as rank 0 judges the ranks over MPI: `json` is the fleet
// file, with the first file's header (tool, system, config, config.merged_from
// naming the files); a rank in two files is a problem. Throws
// std::runtime_error naming an unreadable file.
struct merged_files {
  merged m;
  std::string json;
};
merged_files merge_rank_files(const std::vector<std::string>& paths, const thresholds& t,
                              const std::vector<rank_report>* baseline, const std::string& missing_why);

// A human summary: the problems and findings first, then a node x device
// table of the health set (each cell the median of the rank's repeats).
std::string fleet_text(const merged& m);

}  // namespace xfer::fleet
