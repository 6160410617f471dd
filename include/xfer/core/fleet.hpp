#pragma once
// Fleet mode (`xferbench fleet`): one process ("rank") per device, on one
// node or many, each running a short fixed health set on its device, first
// one device of a node at a time ("alone"), then every rank at once
// ("together"); rank 0 gathers every rank's report into one result file and
// finds the outliers: the slow device, the slow node, the link that trained
// down. How ranks talk (MPI, or one file per rank) is a comm (fleet_comm.hpp
// in the CLI); this file is what the fleet measures and how it judges.
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

// Who this process is.
struct identity {
  int rank = 0, size = 1;
  int local_rank = 0, local_size = 1;  // among the ranks of its node
  std::string node;                    // host name
};

// The launcher's rank variables (Open MPI, Slurm, PMI/MPICH, torchrun's
// RANK/LOCAL_RANK), read through `get` (getenv in the CLI, a map in tests);
// nullopt where none is set. The node is the host name given.
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
  int exit_code = 0;
};

// Merges the reports of `size` ranks (nullopt: the rank sent nothing) and
// judges them; `missing_why` says why a rank is missing ("died or hung past
// --rank-timeout 300 s").
merged merge(std::vector<std::optional<rank_report>> reports, const thresholds& t,
             const std::vector<rank_report>* baseline, const std::string& missing_why);

// The result file: schema xferbench/result/v1 with every rank's points in
// "results" (node, rank and device on each), and a "fleet" object: ranks,
// missing, problems, findings (outliers first), healthy.
std::string fleet_json(const run_context& context, const merged& m);
// The ranks of a fleet result file (for --baseline). Throws std::runtime_error.
std::vector<rank_report> read_fleet_file(const std::string& path);

// A human summary: the problems and findings first, then a node x device
// table of the health set (each cell the median of the rank's repeats).
std::string fleet_text(const merged& m);

}  // namespace xfer::fleet
