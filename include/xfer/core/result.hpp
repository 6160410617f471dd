#pragma once
// The result model (its JSON form, schema "xferbench/result/v2", see
// docs/result-schema.md, is in src/core/result_json.hpp). The field names are
// a contract with the report tool.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>
#include <xfer/core/affinity.hpp>
#include <xfer/core/backend.hpp>
#include <xfer/core/stats.hpp>
#include <xfer/core/value.hpp>

namespace xfer {

// v2 added the catalogue and each point's verdict (docs/result-schema.md).
inline constexpr const char* result_schema = "xferbench/result/v2";

enum class point_status { ok, skipped, failed };
const char* to_string(point_status s);

struct point_result {
  point_spec spec;
  std::string device_name;
  std::string device_type;
  std::string device_pci;  // PCI address where the backend knows it (matches system.accelerators)
  // The emulation the device ran under (XRT's "noop"; the device's
  // details["emulation"]), empty on hardware. An emulated point moved no
  // data across a link: its time is the API's own cost per call, and it
  // never enters a peak, a bandwidth plot or a fitted model.
  std::string emulation;
  // What the backend says about how this point ran, where that is not
  // obvious from the route (XRT copying an unaligned user pointer, say).
  std::string note;
  std::optional<settings_ref> settings;
  point_status status = point_status::ok;
  std::string reason;
  std::optional<clock_kind> timer;    // none for a point never measured
  std::string timer_name() const { return timer ? to_string(*timer) : ""; }
  std::uint64_t bytes_per_rep = 0;    // bytes moved by one repetition
  std::size_t reps_per_sample = 0;
  std::vector<double> samples_s;      // per repetition, one per sample
  std::vector<double> wall_samples_s; // the wall clock's view of the same samples
  std::map<std::string, std::vector<double>> part_samples_s;  // bidir: per direction
  summary stats;
  summary wall_stats;
  double ci_rel = 0;                  // relative half-width of the median's 95% CI
  bool converged = false;
  // Why sampling stopped: "converged" (the CI target was met), "budget"
  // (--max-time spent and the interval not on course to meet the target
  // within four times it), "budget x4" (four times the budget spent: a
  // point on course that still missed, or a huge transfer's few samples),
  // "max samples"; "converged (measured again)" or "budget (measured
  // again)" where the run's budget measured it a second time with fresh
  // buffers (core/runner.hpp, revisit) and its samples are both measurements'.
  std::string stopped_by;
  // The sampling budget the point had: --max-time plus what the sweep lent
  // it from time earlier points left unused (measure_options::lend_cap_x).
  double budget_s = 0;
  bool verified = false;
  std::size_t samples_checked = 0;    // timed samples whose last transfer was checked
  // Faster than the PCIe link can carry: the data did not all cross it
  // (managed memory that migrated, a cache): flagged, never silently reported.
  bool above_link_limit = false;
  // The most the point's link can carry in its direction (pci_link's
  // ceilings; the raw rate where the configuration space was unreadable); 0
  // where no link applies (the host backend, device-to-device).
  double link_ceiling_gbps = 0;
  // Where the measuring thread ran (core/affinity.hpp); recorded for device
  // points only (a CPU "device" has no slot to be near).
  std::optional<placement> placed;
  // Why samples of this point ran ungated although its route gates: the gate
  // could not hold (core/timing.hpp, timed_batches). Empty: no fallback.
  std::string gate_fallback;
  first_use first;
  // Measured with other devices at once (core/concurrent.hpp): how many,
  // which, and whether this is one device's view or the aggregate (all the
  // devices' bytes over the wall time of the windows they shared).
  struct concurrency {
    std::vector<int> devices;
    bool aggregate = false;
    // Aggregate: the sum of the devices' own rates in the same windows (what
    // they would add up to with perfect overlap); the ratio to gbps() shows
    // how much of the window the slowest device held the others up.
    double sum_of_devices_gbps = 0;
  };
  std::optional<concurrency> together;
  // Route peer: how the copy travelled ("peer", "staged via host").
  std::string peer_path;
  // Fleet mode (core/fleet.hpp): who measured the point, in which phase,
  // and which of the rank's repeats of the health set it belongs to.
  struct fleet_tag {
    std::string node;
    int rank = -1, local_rank = -1;
    std::string phase;  // "alone" or "together"
    int repeat = 0;     // 0 .. --repeat - 1; 0 in files from before --repeat
    std::string test = {};  // the health test it measured (fleet::health_test_names); "" in files before v2
  };
  std::optional<fleet_tag> fleet;
  // Where the point's own wall time went (seconds; -1 not measured), so a
  // slow run can be read back to its cause: preparing the buffers (allocate,
  // pin, fill; first transfer and verify included), warming up, the timed
  // samples, checking each sample outside its timed region, and releasing
  // the buffers.
  struct time_spent {
    double prepare_s = -1, warmup_s = -1, sampling_s = -1, checking_s = -1, release_s = -1;
  } spent;
  // Headline numbers derived from stats.median.
  double gbps() const;
  double latency_us() const;
  // The device clock left out host work: through host memory, at 1 MiB and
  // more, the wall clock took over twice the device events' time (NVIDIA's
  // OpenCL stages pageable memory outside the profiled command). Its events'
  // GB/s overstates the route, so it is not trusted (below).
  bool clock_misses_work() const;
  // Why an ok point may not enter a peak, a headline or a fitted model, as
  // the result file's verdict says it ("above-link-limit",
  // "clock-misses-host-work", "emulated"); empty for a trusted point. The one
  // definition: the console's summary and the report both read it.
  std::vector<std::string> distrust() const;
  bool trusted() const { return status == point_status::ok && distrust().empty(); }
  // Whether a finding may quote the point as one figure: its sampling
  // converged and the middle 90% of its samples (5th to 95th percentile) lie
  // within settled_spread of their median. Otherwise (unconverged, or samples
  // in two modes, as pageable points often are) it is quoted as the range of
  // rates those samples support (rate_range).
  static constexpr double settled_spread = 0.10;
  bool settled() const;
  // GB/s at the 95th and 5th percentile sample time, by the primary clock or
  // the wall clock; {0, 0} where there are no samples.
  struct range {
    double low = 0, high = 0;
  };
  range rate_range(bool wall) const;
  // A point that times one access or round trip, not a stream of bytes: a
  // route of the latency family (cpu-store-latency stores 8 B and times the
  // answer), or one that moves a few bytes a repetition whatever the size.
  // Its GB/s means nothing.
  bool times_access() const {
    return spec.route.family() == route_family::latency ||
           (bytes_per_rep > 0 && bytes_per_rep <= 64 && spec.bytes > bytes_per_rep);
  }
};

struct pci_link {
  std::string address, vendor, vendor_name, device_id, class_code;
  double current_gts = 0, max_gts = 0;  // GT/s per lane
  int current_width = 0, max_width = 0;
  int current_gen = 0, max_gen = 0;
  // Per direction after line encoding, at the link's max and at its current
  // state (GPUs train the link down when idle, so current can read low).
  double theoretical_gbps = 0;
  double current_gbps = 0;
  // From the PCI Express capability in the configuration space
  // (core/pcie_link.hpp); config_read says why not where it could not be read.
  std::string config_read;  // "ok", or the reason (unprivileged read, no capability)
  int max_payload = 0, max_read_request = 0, read_completion_boundary = 0;
  bool relaxed_ordering = false;
  // Ceilings per direction with TLP overhead, at the link's max state; 0 unknown.
  double ceiling_h2d_gbps = 0;      // device reads host memory, whole-MPS completions
  double ceiling_h2d_rcb_gbps = 0;  // ... completions split at the RCB
  double ceiling_d2h_gbps = 0;      // device writes host memory
  int numa_node = -1;               // the node the device hangs off; -1 unknown
  // What a transfer in direction d can reach on this link (the raw rate
  // where the ceilings are unknown; 0 for d2d).
  double ceiling_for(direction d) const;
  // Empty, or why the link is below its best: "x8 of x16", "Gen3 of Gen5".
  std::string degraded() const;
};

struct system_info {
  std::string hostname, cpu_model, os, kernel;
  unsigned logical_cpus = 0;
  // Of the CPUs this process may use (hyperthreads of one core counted once):
  // what the staged copier's shared team is bounded by (mem::physical_cores).
  // 0 in a file written before it was recorded.
  unsigned physical_cores = 0;
  std::uint64_t memory_bytes = 0, memory_available_bytes = 0;
  int numa_nodes = 0;
  std::string thp;  // transparent huge pages setting
  std::vector<pci_link> accelerators;
  std::map<std::string, std::map<std::string, std::string>> backend_versions;
};

struct run_context {
  std::string tool_version;
  std::string started_at;  // ISO 8601, UTC
  system_info system;
  value config;  // the command line and the options it resolved to (an object)
  // The routes and host memory kinds the run knows, with their families,
  // roles and traits (core/catalogue.hpp): what the file's points mean.
  value catalogue;
};

// Sets above_link_limit on an ok point of a device (not CPU) whose route
// crosses the link (it uses host memory) when its rate beats link_gbps per
// direction (2x for bidir, which uses both directions at once). Such a
// kernel-host point is skipped with the reason: its kernel never crossed the link.
void flag_link_limit(point_result& r, double link_gbps);
// The same against the ceiling of the point's direction on `link`, which it
// records in r.link_ceiling_gbps.
void flag_link_limit(point_result& r, const pci_link& link);
// Devices at once: the aggregate crosses each device's link, so its ceiling is
// the sum of theirs (`ceiling_gbps`); records it and flags a rate above it.
void flag_aggregate_limit(point_result& r, double ceiling_gbps);

// The system as the result file's "system" object, as JSON text (indent < 0:
// one line). The JSON conversions themselves are in src/core/result_json.hpp.
std::string system_json(const system_info& s, int indent = 2);

}  // namespace xfer
