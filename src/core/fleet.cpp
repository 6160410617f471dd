#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <xfer/core/errors.hpp>
#include <xfer/core/fleet.hpp>
#include <xfer/core/size.hpp>

#include "result_json.hpp"
#include "value_json.hpp"

namespace xfer::fleet {
namespace {

using json = nlohmann::json;

int to_int(const char* s, int fallback) {
  if (!s || !*s) return fallback;
  try {
    std::size_t used = 0;
    const int v = std::stoi(s, &used);
    return used == std::char_traits<char>::length(s) && v >= 0 ? v : fallback;
  } catch (const std::exception&) {
    return fallback;
  }
}

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// The figure a test is judged by: GB/s, or latency in microseconds.
double figure(const point_result& r, bool latency) { return latency ? r.latency_us() : r.gbps(); }
// A figure a measurement gives: finite and above 0 (gbps() reads a NaN or 0 s
// median as 0 GB/s, latency_us() gives NaN or 0 us).
bool a_measurement(double x) { return std::isfinite(x) && x > 0; }
bool is_latency_test(const std::string& test) { return test.rfind("latency", 0) == 0; }

// The best of a rank's repeats (highest GB/s, lowest latency). Interference
// only ever slows a transfer: a healthy card that met a busy moment still has
// a good repeat, a slow card has none. So a rank is called slow only when its
// best repeat is slow too (docs/fleet.md, "Finding the slow one").
double best_of(const std::vector<double>& v, bool latency) {
  return latency ? *std::min_element(v.begin(), v.end()) : *std::max_element(v.begin(), v.end());
}

// The test name of a point (fleet points carry it in their host memory and
// direction; the name is rebuilt the way health_set names it).
std::string test_of(const point_result& r) {
  if (r.fleet && !r.fleet->test.empty()) return r.fleet->test;
  // A file from before points carried their test.
  if (r.spec.bytes <= 64) return "latency-4B";
  const std::string kind = r.spec.host_memory == "pageable" ? "pageable" : "pinned";
  return fmt::format("{}-{}", to_string(r.spec.dir), kind);
}

// (phase, test) -> the figures of a rank's ok points, one per repeat.
std::map<std::pair<std::string, std::string>, std::vector<double>> repeat_figures(const rank_report& r) {
  std::map<std::pair<std::string, std::string>, std::vector<double>> by;
  for (const auto& p : r.points)
    if (p.status == point_status::ok && p.fleet) {
      const std::string test = test_of(p);
      by[{p.fleet->phase, test}].push_back(figure(p, is_latency_test(test)));
    }
  return by;
}

std::string route_for(const backend& b) {
  bool async = false, sync = false, memcpy = false;
  for (const auto& r : b.routes()) {
    async = async || r.name == route_kind::copy_async;
    sync = sync || r.name == route_kind::copy_sync;
    memcpy = memcpy || r.name == route_kind::memcpy;
  }
  return async ? "copy-async" : sync ? "copy-sync" : memcpy ? "memcpy" : "";
}

}  // namespace

std::optional<identity> identity_from_env(const std::function<const char*(const char*)>& get, const std::string& node) {
  // Each launcher's (rank, size, local rank, local size), most specific first.
  struct names {
    const char *rank, *size, *local_rank, *local_size;
  };
  static const names known[] = {
      {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"},
      {"PMIX_RANK", "PMIX_SIZE", "PMIX_LOCAL_RANK", "PMIX_LOCAL_SIZE"},
      {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE"},
      {"PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"},
      {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"},
  };
  for (const auto& n : known) {
    const int rank = to_int(get(n.rank), -1);
    const int size = to_int(get(n.size), -1);
    if (!get(n.rank) || size <= 0) continue;
    if (rank < 0 || rank >= size)
      throw usage_error(fmt::format("{}={} is outside the job ({}={}): this rank would run as another's", n.rank,
                                    get(n.rank), n.size, size));
    identity id;
    id.rank = rank;
    id.size = size;
    id.local_rank = to_int(get(n.local_rank), rank);
    id.local_size = to_int(get(n.local_size), size);
    id.node = node;
    return id;
  }
  return std::nullopt;
}

const std::vector<std::string>& health_test_names() {
  static const std::vector<std::string> names{"h2d-pinned", "d2h-pinned", "bidir-pinned", "latency-4B",
                                              "h2d-pageable"};
  return names;
}

std::vector<health_test> health_set(const backend& b, int device, std::uint64_t bytes) {
  const std::string route_name = route_for(b);
  const auto route = parse_route_kind(route_name);
  if (!route) throw std::runtime_error(fmt::format("backend {} has no copy route for the health set", b.name()));
  std::set<std::string> kinds;
  for (const auto& k : b.host_memory_kinds())
    if (k.available) kinds.insert(k.name);
  const std::string pinned = kinds.count("pinned") ? "pinned" : "aligned";
  const std::string pageable = "pageable";
  const auto spec = [&](direction d, const std::string& kind, std::uint64_t n) {
    return point_spec{b.name(), device, *route, d, kind, n, -1};
  };
  const auto& n = health_test_names();
  return {
      {n[0], spec(direction::h2d, pinned, bytes), false},  {n[1], spec(direction::d2h, pinned, bytes), false},
      {n[2], spec(direction::bidir, pinned, bytes), false}, {n[3], spec(direction::h2d, pinned, 4), true},
      {n[4], spec(direction::h2d, pageable, bytes), false},
  };
}

std::vector<std::pair<int, std::size_t>> health_order(std::size_t tests, int repeats) {
  std::vector<std::pair<int, std::size_t>> order;
  for (int rep = 0; rep < repeats; ++rep)
    for (std::size_t t = 0; t < tests; ++t) order.emplace_back(rep, t);
  return order;
}

std::vector<finding> find_outliers(const std::vector<rank_report>& ranks, const thresholds& t,
                                   const std::vector<rank_report>* baseline) {
  std::vector<finding> out;
  const auto where = [](const rank_report& r, const point_result* p) {
    finding f;
    f.rank = r.who.rank;
    f.node = r.who.node;
    f.device = r.device;
    if (p && p->fleet) f.phase = p->fleet->phase;
    if (p) f.test = test_of(*p);
    return f;
  };
  // (phase, test) -> each rank's figure: the median of its ok repeats, so a
  // transient in one repeat neither makes the rank an outlier nor shifts the
  // fleet's median (docs/fleet.md, --repeat).
  using key = std::pair<std::string, std::string>;
  std::map<key, std::vector<double>> fleet_figures, base_figures;
  const auto collect = [](const std::vector<rank_report>& rs, auto& into) {
    for (const auto& r : rs)
      for (const auto& [k, v] : repeat_figures(r))
        // A figure that is no measurement is a finding of its rank, never part of the fleet's median.
        if (std::all_of(v.begin(), v.end(), a_measurement)) into[k].push_back(median_of(v));
  };
  collect(ranks, fleet_figures);
  if (baseline) collect(*baseline, base_figures);

  for (const auto& r : ranks) {
    // An interrupted rank is no fault of the fleet: merge says it once.
    if (r.status != "ok" && !r.interrupted_by) {
      finding f = where(r, nullptr);
      f.why = fmt::format("rank {} reported an error: {}", r.who.rank, r.reason);
      out.push_back(f);
    }
    // Width only: a GPU lowers its link's speed (generation) when idle to
    // save power, so a Gen1 reading is no fault, while a link trained to
    // fewer lanes stays so. A link stuck at a lower generation shows in the
    // bandwidth against the ceiling (Gen4 gives half of Gen5's).
    if (r.link && r.link->current_width > 0 && r.link->max_width > 0 && r.link->current_width < r.link->max_width) {
      finding f = where(r, nullptr);
      f.test = "link";
      f.why = fmt::format("PCIe link {} trained to fewer lanes than it has: x{} of x{}", r.link->address,
                          r.link->current_width, r.link->max_width);
      out.push_back(f);
    }
    const auto mine = repeat_figures(r);
    // Healthy needs evidence: a rank that ran but measured no bandwidth
    // (`fleet --size 40G`: every bandwidth point skipped, the latency alone
    // measured) is not healthy.
    const auto bandwidth = [](const point_result& p) { return !is_latency_test(test_of(p)); };
    const bool measured = std::any_of(r.points.begin(), r.points.end(), [&](const point_result& p) {
      return p.status == point_status::ok && bandwidth(p);
    });
    if (r.status == "ok" && !r.interrupted_by && !measured) {
      finding f = where(r, nullptr);
      const auto skip = std::find_if(r.points.begin(), r.points.end(), [&](const point_result& p) {
        return p.status == point_status::skipped && bandwidth(p);
      });
      f.why = fmt::format("rank {} measured no bandwidth{}", r.who.rank,
                          skip != r.points.end() ? fmt::format(": every bandwidth point skipped ({})", skip->reason)
                          : r.points.empty()     ? std::string(": it ran no health point")
                                                 : std::string());
      out.push_back(f);
    }
    std::set<key> judged;
    for (const auto& p : r.points) {
      finding f = where(r, &p);
      // Every failed repeat is a finding of its own: a failure is no noise.
      if (p.status == point_status::failed) {
        f.why = fmt::format("health point failed: {}", p.reason);
        out.push_back(f);
        continue;
      }
      if (p.status != point_status::ok || !p.fleet) continue;
      // The rest is judged once per (phase, test), on the median of the rank's repeats.
      if (!judged.insert({f.phase, f.test}).second) continue;
      const auto& repeats = mine.at({f.phase, f.test});
      const bool latency = is_latency_test(f.test);
      // NaN, infinite or 0 (a damaged file, a median that is NaN or 0 s): no measurement.
      if (!std::all_of(repeats.begin(), repeats.end(), a_measurement)) {
        f.why = fmt::format("{} is not a measurement (NaN, infinite or 0): {}", f.test, fmt::join(repeats, ", "));
        out.push_back(f);
        continue;
      }
      const double v = median_of(repeats);
      const double best = best_of(repeats, latency);
      f.value = v;
      // By how much x is worse than a reference r (lower GB/s, higher latency).
      const auto worse_than = [latency](double x, double r) { return latency ? x - r : r - x; };
      // "h2d-pinned 48.8 GB/s (median of 3; best 49.1)": what the figure stands for.
      const std::string figure_text =
          fmt::format("{} {:.3g} {}{}", f.test, v, latency ? "us" : "GB/s",
                      repeats.size() > 1 ? fmt::format(" (median of {}; best {:.3g})", repeats.size(), best)
                                         : std::string());
      // Against the fleet: worse than the median by more than k robust
      // sigmas and by more than the tolerance (identical devices give a MAD
      // near zero: the tolerance keeps noise from being called an outlier),
      // and the best repeat too is worse by the tolerance (pageable and
      // at-once figures of healthy cards move 20% and more between repeats).
      const auto& all = fleet_figures[{f.phase, f.test}];
      if (all.size() >= 3) {
        const double m = median_of(all);
        std::vector<double> dev;
        for (double x : all) dev.push_back(std::fabs(x - m));
        const double sigma = 1.4826 * median_of(dev);
        const double worse = worse_than(v, m);
        if (worse > t.mad_k * sigma && worse > t.tolerance * m && worse_than(best, m) > t.tolerance * m) {
          finding o = f;
          o.reference = m;
          o.why = fmt::format("{} is {:.0f}% {} the fleet median {:.3g} (MAD {:.3g}, {} ranks)", figure_text,
                              100 * worse / m, latency ? "above" : "below", m, sigma / 1.4826, all.size());
          out.push_back(o);
        }
      }
      // Against the link: pinned bandwidth far below what the link carries, in every repeat.
      if (!latency && p.spec.host_memory != "pageable" && p.link_ceiling_gbps > 0 &&
          best < t.min_ceiling_fraction * p.link_ceiling_gbps) {
        finding o = f;
        o.reference = p.link_ceiling_gbps;
        o.why = fmt::format("{} is {:.0f}% of the link's ceiling {:.3g} GB/s (below {:.0f}%)", figure_text,
                            100 * v / p.link_ceiling_gbps, p.link_ceiling_gbps, 100 * t.min_ceiling_fraction);
        out.push_back(o);
      }
      // Against the known-good fleet, in every repeat.
      if (baseline) {
        const auto it = base_figures.find({f.phase, f.test});
        if (it != base_figures.end() && !it->second.empty()) {
          const double m = median_of(it->second);
          const double worse = worse_than(v, m);
          if (worse > t.tolerance * m && worse_than(best, m) > t.tolerance * m) {
            finding o = f;
            o.reference = m;
            o.why = fmt::format("{} is {:.0f}% {} the baseline's median {:.3g}", figure_text, 100 * worse / m,
                                latency ? "above" : "below", m);
            out.push_back(o);
          }
        }
      }
    }
  }
  return out;
}

merged merge(std::vector<std::optional<rank_report>> reports, const thresholds& t,
             const std::vector<rank_report>* baseline, const std::string& missing_why) {
  merged m;
  bool disagree = false, too_many = false;
  const rank_report* first = nullptr;
  for (std::size_t i = 0; i < reports.size(); ++i) {
    if (!reports[i]) {
      m.missing.push_back(static_cast<int>(i));
      continue;
    }
    const rank_report& r = *reports[i];
    if (!first) first = &r;
    if (r.version != first->version) {
      disagree = true;
      m.problems.push_back(fmt::format("rank {} on {} runs xferbench {}, rank {} runs {}", r.who.rank, r.who.node,
                                       r.version, first->who.rank, first->version));
    } else if (r.options != first->options) {
      disagree = true;
      m.problems.push_back(fmt::format("rank {} on {} was given other options than rank {}: '{}' against '{}'",
                                       r.who.rank, r.who.node, first->who.rank, r.options, first->options));
    }
    if (r.interrupted_by && !m.interrupted_by) {
      m.interrupted_by = r.interrupted_by;
      m.problems.push_back(fmt::format("rank {} on {} was interrupted by signal {}: the results are partial",
                                       r.who.rank, r.who.node, r.interrupted_by));
    }
    if (r.status == "too many ranks") {
      too_many = true;
      m.problems.push_back(fmt::format("rank {} on {}: {}", r.who.rank, r.who.node, r.reason));
    }
    m.ranks.push_back(r);
  }
  if (!m.missing.empty()) {
    std::string list;
    for (int r : m.missing) list += (list.empty() ? "" : ", ") + std::to_string(r);
    m.problems.push_back(fmt::format("{} of {} rank{} missing ({}): {}; the other ranks' results are kept",
                                     m.missing.size(), reports.size(), m.missing.size() == 1 ? "" : "s", list,
                                     missing_why));
  }
  m.findings = find_outliers(m.ranks, t, baseline);
  if (disagree) m.exit_code = exit_disagree;
  else if (too_many) m.exit_code = exit_too_many_ranks;
  else if (!m.missing.empty()) m.exit_code = exit_rank_missing;
  else if (m.interrupted_by) m.exit_code = 128 + m.interrupted_by;
  else if (!m.findings.empty()) m.exit_code = exit_unhealthy;
  return m;
}

std::string fleet_text(const merged& m) {
  std::string s;
  for (const auto& p : m.problems) s += "problem: " + p + "\n";
  // "outlier" for a figure judged against a reference (the fleet, the link's
  // ceiling, the baseline); "unhealthy" for the rest (errors, links, failures).
  for (const auto& f : m.findings)
    s += fmt::format("{}: rank {} node {} device {}{}: {}\n", f.reference > 0 ? "outlier" : "unhealthy", f.rank,
                     f.node, f.device, f.phase.empty() ? "" : " (" + f.phase + ")", f.why);
  if (m.problems.empty() && m.findings.empty()) s += "healthy: no outliers, every rank reported\n";
  // node x device table: one row per rank and phase, a column per test.
  const auto& tests = health_test_names();
  s += fmt::format("{:<20} {:>4} {:>6} {:<9}", "node", "rank", "device", "phase");
  for (const auto& t : tests) s += fmt::format(" {:>13}", t == "latency-4B" ? "latency-4B us" : t);
  s += "\n";
  for (const auto& r : m.ranks)
    for (const char* phase : {"alone", "together"}) {
      // Each cell the median of the rank's repeats, as judged; a repeat that
      // did not measure shows its status instead (a failure is not averaged away).
      std::map<std::string, std::string> cells;
      std::map<std::string, std::vector<double>> ok;
      for (const auto& p : r.points) {
        if (!p.fleet || p.fleet->phase != phase) continue;
        const std::string t = test_of(p);
        if (p.status == point_status::ok) ok[t].push_back(figure(p, is_latency_test(t)));
        else if (!cells.count(t)) cells[t] = std::string(to_string(p.status));
      }
      for (const auto& [t, v] : ok)
        if (!cells.count(t)) cells[t] = fmt::format("{:.3g}", median_of(v));
      if (cells.empty()) continue;
      s += fmt::format("{:<20} {:>4} {:>6} {:<9}", r.who.node, r.who.rank, r.device, phase);
      // latency in microseconds with three significant digits (a host's is nanoseconds)
      for (const auto& t : tests) s += fmt::format(" {:>13}", cells.count(t) ? cells[t] : "-");
      s += "\n";
    }
  return s;
}

}  // namespace xfer::fleet
