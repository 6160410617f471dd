#pragma once
// The plan: the user's selection (backends, devices, routes, host memory
// kinds, directions, sizes) checked once and turned into the points a run
// will measure. Bad input is one usage_error here, before anything runs; a
// point that is well-formed but cannot run on this machine (a kind the
// platform lacks, a size beyond the device) is planned as skipped with its
// reason, so the result shows it. Backends receive only points that passed
// these checks and do not repeat them.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>
#include <xfer/core/backend.hpp>
#include <xfer/mem/kinds.hpp>

namespace xfer {

struct measure_options;

// Empty = everything available.
struct selection {
  std::vector<std::string> backends;  // exact names, or a family ("opencl" selects every opencl:NAME)
  std::vector<int> devices;
  std::vector<std::string> routes;
  std::vector<std::string> host_memory;
  std::vector<direction> directions;
  std::vector<std::uint64_t> sizes;
  bool sizes_given = true;  // false: `sizes` is the default grid (sweep_spec::sizes_given)
  // False: the overview, what the default run measures where no kinds or
  // directions were named: each backend's overview kinds
  // (kind_support::overview) and the directions h2d and d2h. True: every
  // kind and direction (--full).
  bool full = true;
  // The many-blocks workload (core/block_route.hpp; sweep --blocks): empty,
  // a plain sweep; else only the block routes of the backends that have
  // them, `sizes` being the totals, at each of these block sizes.
  std::vector<std::uint64_t> block_sizes;
  std::shared_ptr<const std::vector<block_pair_spec>> block_list;  // the user's list; null: scattered
};

// The input checks every caller of the plan needs, not only the CLI; each
// throws usage_error naming the option and the value, before anything runs.

// Every size fits in this machine's memory (`memory_bytes` 0: unknown, no check).
void check_sizes_fit(const std::vector<std::uint64_t>& sizes, std::uint64_t memory_bytes);

// The host kinds' parameters (--alignment as written, --unaligned-offset),
// checked by the kinds themselves: a bad value is one usage error, not every
// point of the kind failing.
mem::kind_options parse_kind_options(std::string_view alignment, std::size_t unaligned_offset);

// The whole run's budget in seconds (measure_options::run_budget_s; 0: none,
// each point takes --max-time). The sampling time is set by one of --budget
// (the whole run), --max-time (per point) and --quick; a budget is in
// (0, 86400] seconds. The overview (no flag that widens or narrows the grid)
// runs on overview_budget_s unless --max-time is given.
double run_budget_for(std::optional<double> budget, bool max_time_given, bool quick, bool overview);

// The overview's directions (selection::full).
const std::vector<direction>& overview_directions();

// A name that selects backends: the exact name ("opencl:pocl") or its family
// before ':' ("opencl").
bool backend_matches(const std::string& selector, const std::string& name);

// The constructed backends the selection names (every constructed one when it
// names none), in registry order, each once. An unknown name is a
// usage_error; a name whose backends are all unavailable here is a
// std::runtime_error with the reason (a missing driver is not bad input).
std::vector<backend*> select_backends(std::vector<backend_entry>& entries, const std::vector<std::string>& names);

// Device `index` of `b`, for a command that measures one device of each
// backend (app vadd's --device); a usage_error naming --device when `b` has
// no such device (the host backend has one, device 0).
device_info find_device(const backend& b, int index);

// --host-devices shapes the host backend only: more than one where -b names
// no host backend is a usage_error, rather than an option without effect.
void check_host_devices(int host_devices, const std::vector<std::string>& backends);

struct planned_point {
  point_spec spec;
  std::string skip_reason;  // non-empty: recorded as skipped, never prepared
};

struct backend_plan {
  backend* impl = nullptr;
  std::vector<planned_point> points;
};

struct plan {
  std::vector<backend_plan> backends;
  // Compiled in but unable to run here (no driver, no platform): name, reason.
  std::vector<std::pair<std::string, std::string>> unavailable;
  // Found and able to run, but not in this run (the default run's policy on
  // stand-in CPU devices, make_plan): name, reason.
  std::vector<std::pair<std::string, std::string>> left_out;
  std::size_t size() const;
  std::size_t runnable() const;  // the points planned to run (no skip reason)
};

// Every chosen backend's points (sweep.hpp's expand), each checked against
// what the backend reports: its devices, routes and host memory kinds. A
// route or kind no chosen backend knows, or a direction no chosen route
// moves, is a usage_error; a backend that lacks a route or kind another
// chosen backend has simply runs what it has.
//
// With no backend named, a backend whose devices are all CPUs (OpenCL on
// PoCL, the host reference) is left out when another chosen backend has an
// accelerator: there it measures the host's memory through a second API, takes
// much of the default run's time and converges on few of its points
// (docs/decisions/0005-default-run.md), and nothing a CPU device shows is a
// headline beside an accelerator (docs/findings.md). Naming it measures it.
//
// A route never meets a host memory kind it cannot move (backend::pairing_gap)
// unless both were named; with selection::full false the kinds and
// directions not named are the overview's.
plan make_plan(std::vector<backend_entry>& entries, const selection& s);

// Why this well-formed point cannot run on this backend, or "" when it can:
// its host memory kind is unavailable here, or its size exceeds what the
// device can allocate.
std::string unavailable_reason(const point_spec& p, const std::vector<kind_support>& kinds,
                               const std::vector<device_info>& devices);
// Each point of `b` with its unavailable_reason, or else the backend's
// pairing_gap (a pairing that reaches here was named on both axes).
std::vector<planned_point> check_points(const backend& b, std::vector<point_spec> points);

// A run budget (options.run_budget_s > 0) gives each runnable point of `p`
// at least run_budget::min_point_s and its warm-up.
void check_budget_fits(const plan& p, const measure_options& options);

}  // namespace xfer
