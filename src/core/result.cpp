#include <cmath>
#include <fmt/format.h>
#include <xfer/core/result.hpp>

#include "result_json.hpp"

namespace xfer {

const char* to_string(point_status s) {
  switch (s) {
    case point_status::ok: return "ok";
    case point_status::skipped: return "skipped";
    case point_status::failed: return "failed";
  }
  return "?";
}

double point_result::gbps() const {
  return status == point_status::ok && stats.median > 0 ? bytes_per_rep / stats.median / 1e9 : 0.0;
}
bool point_result::clock_misses_work() const {
  constexpr std::uint64_t min_bytes = 1 << 20;
  constexpr double factor = 2.0;
  return status == point_status::ok && timer == clock_kind::event && spec.host_memory != "none" && spec.bytes >= min_bytes &&
         stats.median > 0 && wall_stats.median > factor * stats.median;
}
std::vector<std::string> point_result::distrust() const {
  std::vector<std::string> why;
  if (status != point_status::ok) return why;
  if (above_link_limit) why.emplace_back("above-link-limit");
  if (clock_misses_work()) why.emplace_back("clock-misses-host-work");
  if (!emulation.empty()) why.emplace_back("emulated");
  return why;
}
point_result::range point_result::rate_range(bool wall) const {
  const auto& s = wall ? wall_samples_s : samples_s;
  const double slow = quantile(s, 0.95), fast = quantile(s, 0.05);
  if (status != point_status::ok || slow <= 0 || fast <= 0) return {};
  return {bytes_per_rep / slow / 1e9, bytes_per_rep / fast / 1e9};
}

bool point_result::settled() const {
  if (status != point_status::ok || !converged || samples_s.empty() || stats.median <= 0) return false;
  return quantile(samples_s, 0.95) - quantile(samples_s, 0.05) <= settled_spread * stats.median;
}

double point_result::latency_us() const { return status == point_status::ok ? stats.median * 1e6 : 0.0; }

double pci_link::ceiling_for(direction d) const {
  const double reads = ceiling_h2d_gbps > 0 ? ceiling_h2d_gbps : theoretical_gbps;
  const double writes = ceiling_d2h_gbps > 0 ? ceiling_d2h_gbps : theoretical_gbps;
  if (reads <= 0 || writes <= 0) return 0;
  switch (d) {
    case direction::h2d: return reads;
    case direction::d2h: return writes;
    case direction::bidir: return reads + writes;  // full duplex: each direction has its own lanes
    case direction::rw: return 2 / (1 / reads + 1 / writes);  // a write then a read, one after the other
    case direction::d2d: return 0;
  }
  return 0;
}

std::string pci_link::degraded() const {
  std::string why;
  if (current_width > 0 && max_width > 0 && current_width < max_width)
    why = fmt::format("x{} of x{}", current_width, max_width);
  if (current_gen > 0 && max_gen > 0 && current_gen < max_gen)
    why += fmt::format("{}Gen{} of Gen{}", why.empty() ? "" : ", ", current_gen, max_gen);
  return why;
}

namespace {

void flag_above(point_result& r, double limit) {
  const double gbps = r.gbps();
  r.above_link_limit = gbps > limit;
  // A kernel reading or writing host memory faster than the link carries
  // never crossed it: the driver served it from device memory (NVIDIA's
  // OpenCL migrates such buffers, reaching 2 TB/s on a GPU with HBM). That is not a
  // figure of this route, so the point is skipped; its samples stay.
  if (r.above_link_limit && r.spec.route.family() == route_family::kernel_host) {
    r.status = point_status::skipped;
    r.reason = fmt::format("{} measured {:.1f} GB/s, above the link's {:.1f} GB/s: the kernel did not reach "
                           "host memory across the link (the driver moved the buffer into device memory)",
                           to_string(r.spec.route), gbps, limit);
  }
}

bool crosses_link(const point_result& r) {
  return r.status == point_status::ok && r.device_type != "cpu" && r.spec.host_memory != "none";
}

}  // namespace

void flag_link_limit(point_result& r, double link_gbps) {
  if (!crosses_link(r) || link_gbps <= 0) return;
  flag_above(r, r.spec.dir == direction::bidir ? 2 * link_gbps : link_gbps);
}

void flag_link_limit(point_result& r, const pci_link& link) {
  if (!crosses_link(r)) return;
  r.link_ceiling_gbps = link.ceiling_for(r.spec.dir);
  if (r.link_ceiling_gbps > 0) flag_above(r, r.link_ceiling_gbps);
}

void flag_aggregate_limit(point_result& r, double ceiling_gbps) {
  if (!crosses_link(r) || ceiling_gbps <= 0) return;
  r.link_ceiling_gbps = ceiling_gbps;
  flag_above(r, ceiling_gbps);
}

namespace {

// JSON has no infinity: an unbounded CI is written as null and read back as infinity.
nlohmann::json finite_or_null(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }
double number_or_inf(const nlohmann::json& j) {
  return j.is_null() ? std::numeric_limits<double>::infinity() : j.get<double>();
}

}  // namespace

void to_json(nlohmann::json& j, const point_result& r) {
  j = nlohmann::json{
      {"backend", r.spec.backend},
      {"device", r.device_name},
      {"device_index", r.spec.device},
      {"device_type", r.device_type},
      {"route", to_string(r.spec.route)},
      {"direction", to_string(r.spec.dir)},
      {"host_memory", r.spec.host_memory},
      {"bytes", r.spec.bytes},
      {"status", to_string(r.status)},
      {"reason", r.reason},
  };
  if (!r.device_pci.empty()) j["device_pci"] = r.device_pci;
  if (!r.emulation.empty()) j["emulation"] = r.emulation;
  if (!r.note.empty()) j["note"] = r.note;
  if (r.settings) j["settings"] = {{"component", r.settings->component}, {"scope", r.settings->scope}};
  if (r.spec.peer >= 0) j["peer_device_index"] = r.spec.peer;
  if (!r.peer_path.empty()) j["peer_path"] = r.peer_path;
  // A block point (core/block_route.hpp): its block size and how many blocks
  // one repetition moves (bytes_per_rep / block_bytes where it ran).
  if (r.spec.block_bytes) {
    j["block_bytes"] = r.spec.block_bytes;
    j["blocks"] = r.spec.block_list ? r.spec.block_list->size() : r.spec.bytes / r.spec.block_bytes;
  }
  if (r.together) {
    j["concurrent"] = {{"devices", r.together->devices}, {"role", r.together->aggregate ? "aggregate" : "device"}};
    if (r.together->aggregate) j["concurrent"]["sum_of_devices_gbps"] = r.together->sum_of_devices_gbps;
  }
  if (r.fleet)
    j["fleet"] = {{"node", r.fleet->node},
                  {"rank", r.fleet->rank},
                  {"local_rank", r.fleet->local_rank},
                  {"phase", r.fleet->phase},
                  {"test", r.fleet->test},
                  {"repeat", r.fleet->repeat}};
  if (r.status == point_status::skipped) return;
  j["timer"] = r.timer_name();
  j["bytes_per_rep"] = r.bytes_per_rep;
  j["reps_per_sample"] = r.reps_per_sample;
  j["samples_s"] = r.samples_s;
  j["wall_samples_s"] = r.wall_samples_s;
  j["median_s"] = r.stats.median;
  j["gbps"] = r.gbps();
  j["latency_us"] = r.latency_us();
  j["stats"] = r.stats;
  j["wall_stats"] = r.wall_stats;
  j["ci_rel"] = finite_or_null(r.ci_rel);
  j["converged"] = r.converged;
  j["stopped_by"] = r.stopped_by;
  if (r.budget_s > 0) j["budget_s"] = r.budget_s;
  j["verified"] = r.verified;
  j["samples_checked"] = r.samples_checked;
  // What core decided about the point (docs/result-schema.md, "verdict"):
  // the report shows it and decides nothing again.
  const auto why_not = r.distrust();
  j["verdict"] = {{"trusted", why_not.empty()},
                  {"why_not", why_not},
                  {"above_link_limit", r.above_link_limit},
                  {"clock_misses_host_work", r.clock_misses_work()},
                  {"settled", r.settled()}};
  // The rates the samples support (5th to 95th percentile), what a finding
  // quotes for a point that is not settled.
  for (const bool wall : {false, true}) {
    const auto range = r.rate_range(wall);
    if (range.high > 0) j["verdict"][wall ? "wall_gbps_range" : "gbps_range"] = {range.low, range.high};
  }
  if (r.placed) {
    j["placement"] = {{"near_device", r.placed->applied}, {"cpus", r.placed->cpus}, {"numa_node", r.placed->numa_node}};
    if (!r.placed->note.empty()) j["placement"]["note"] = r.placed->note;
  }
  if (r.link_ceiling_gbps > 0) {
    j["link_ceiling_gbps"] = r.link_ceiling_gbps;
    j["pct_of_link_ceiling"] = 100 * r.gbps() / r.link_ceiling_gbps;
  }
  if (!r.gate_fallback.empty()) j["gate_fallback"] = r.gate_fallback;
  if (r.spent.prepare_s >= 0)
    j["time_spent_s"] = {{"prepare", r.spent.prepare_s},
                         {"warmup", r.spent.warmup_s},
                         {"sampling", r.spent.sampling_s},
                         {"checking", r.spent.checking_s},
                         {"release", r.spent.release_s}};
  j["first_use"] = {{"alloc_s", r.first.alloc_s},
                    {"touch_s", r.first.touch_s},
                    {"first_transfer_s", r.first.first_transfer_s}};
  if (!r.part_samples_s.empty()) {
    j["part_samples_s"] = r.part_samples_s;
    auto& parts = j["parts"];
    for (const auto& [name, samples] : r.part_samples_s) {
      const summary s = summarize(samples);
      // Each direction moves half of bytes_per_rep.
      parts[name] = {{"median_s", s.median}, {"gbps", s.median > 0 ? r.spec.bytes / s.median / 1e9 : 0.0}};
    }
  }
}

void from_json(const nlohmann::json& j, point_result& r) {
  r.spec.backend = j.at("backend");
  r.device_name = j.at("device");
  r.spec.device = j.at("device_index");
  r.device_type = j.at("device_type");
  const std::string route = j.at("route");
  // Any name: the file may come from a build with other backends.
  r.spec.route = route_kind::named(route);
  r.spec.dir = parse_direction(j.at("direction"));
  r.spec.host_memory = j.at("host_memory");
  r.spec.bytes = j.at("bytes");
  const std::string status = j.at("status");
  r.status = status == "ok" ? point_status::ok : status == "skipped" ? point_status::skipped : point_status::failed;
  r.reason = j.at("reason");
  r.device_pci = j.value("device_pci", "");
  r.emulation = j.value("emulation", "");
  r.note = j.value("note", "");
  if (const auto s = j.find("settings"); s != j.end() && s->is_object())
    r.settings = settings_ref{s->value("component", ""), s->value("scope", "")};
  r.spec.peer = j.value("peer_device_index", -1);
  r.peer_path = j.value("peer_path", "");
  r.spec.block_bytes = j.value("block_bytes", std::uint64_t{0});
  if (const auto c = j.find("concurrent"); c != j.end()) {
    point_result::concurrency t;
    t.devices = c->at("devices").get<std::vector<int>>();
    t.aggregate = c->at("role") == "aggregate";
    t.sum_of_devices_gbps = c->value("sum_of_devices_gbps", 0.0);
    r.together = t;
  }
  if (const auto f = j.find("fleet"); f != j.end())
    r.fleet = point_result::fleet_tag{f->at("node"), f->at("rank"),          f->at("local_rank"),
                                      f->at("phase"), f->value("repeat", 0), f->value("test", "")};
  if (r.status == point_status::skipped) return;
  if (const std::string t = j.at("timer"); !t.empty()) r.timer = parse_clock_kind(t);
  r.bytes_per_rep = j.at("bytes_per_rep");
  r.reps_per_sample = j.at("reps_per_sample");
  r.samples_s = j.at("samples_s").get<std::vector<double>>();
  r.wall_samples_s = j.at("wall_samples_s").get<std::vector<double>>();
  r.stats = j.at("stats");
  r.wall_stats = j.at("wall_stats");
  r.ci_rel = number_or_inf(j.at("ci_rel"));
  r.converged = j.at("converged");
  r.stopped_by = j.value("stopped_by", "");
  r.budget_s = j.value("budget_s", 0.0);
  r.verified = j.at("verified");
  r.samples_checked = j.value("samples_checked", std::size_t{0});
  // v2 files say it in the verdict, v1 files at the top level.
  r.above_link_limit = j.contains("verdict") ? j.at("verdict").value("above_link_limit", false)
                                             : j.value("above_link_limit", false);
  r.link_ceiling_gbps = j.value("link_ceiling_gbps", 0.0);
  if (j.contains("placement")) {
    const auto& p = j.at("placement");
    r.placed = placement{p.value("near_device", false), p.value("numa_node", -1), p.value("cpus", ""), p.value("note", "")};
  }
  r.gate_fallback = j.value("gate_fallback", "");
  if (j.contains("time_spent_s")) {
    const auto& t = j.at("time_spent_s");
    r.spent = {t.value("prepare", -1.0), t.value("warmup", -1.0), t.value("sampling", -1.0), t.value("checking", -1.0), t.value("release", -1.0)};
  }
  const auto& f = j.at("first_use");
  r.first = {f.at("alloc_s"), f.at("touch_s"), f.at("first_transfer_s")};
  if (j.contains("part_samples_s"))
    r.part_samples_s = j.at("part_samples_s").get<std::map<std::string, std::vector<double>>>();
}

void to_json(nlohmann::json& j, const system_info& s) {
  nlohmann::json acc = nlohmann::json::array();
  for (const auto& a : s.accelerators) {
    acc.push_back({{"pci_address", a.address},
                   {"vendor", a.vendor},
                   {"vendor_name", a.vendor_name},
                   {"device_id", a.device_id},
                   {"class", a.class_code},
                   {"link_current", {{"gts", a.current_gts}, {"gen", a.current_gen}, {"width", a.current_width}}},
                   {"link_max", {{"gts", a.max_gts}, {"gen", a.max_gen}, {"width", a.max_width}}},
                   {"link_gbps_per_direction", a.theoretical_gbps},
                   {"link_gbps_current", a.current_gbps},
                   {"numa_node", a.numa_node},
                   {"config_space", a.config_read},
                   {"max_payload_bytes", a.max_payload},
                   {"max_read_request_bytes", a.max_read_request},
                   {"read_completion_boundary_bytes", a.read_completion_boundary},
                   {"relaxed_ordering", a.relaxed_ordering},
                   // What transfers can reach after TLP overhead (core/pcie_link.hpp); 0: unknown.
                   {"ceiling_gbps", {{"h2d", a.ceiling_h2d_gbps},
                                     {"h2d_rcb_completions", a.ceiling_h2d_rcb_gbps},
                                     {"d2h", a.ceiling_d2h_gbps}}},
                   {"degraded", a.degraded()}});
  }
  j = {{"hostname", s.hostname},
       {"cpu_model", s.cpu_model},
       {"logical_cpus", s.logical_cpus},
       {"physical_cores", s.physical_cores},
       {"os", s.os},
       {"kernel", s.kernel},
       {"memory_bytes", s.memory_bytes},
       {"memory_available_bytes", s.memory_available_bytes},
       {"numa_nodes", s.numa_nodes},
       {"transparent_hugepages", s.thp},
       {"accelerators", acc},
       {"backends", s.backend_versions}};
}

void from_json(const nlohmann::json& j, system_info& s) {
  s.hostname = j.at("hostname");
  s.cpu_model = j.at("cpu_model");
  s.logical_cpus = j.at("logical_cpus");
  s.physical_cores = j.value("physical_cores", 0u);
  s.os = j.at("os");
  s.kernel = j.at("kernel");
  s.memory_bytes = j.at("memory_bytes");
  s.memory_available_bytes = j.at("memory_available_bytes");
  s.numa_nodes = j.at("numa_nodes");
  s.thp = j.at("transparent_hugepages");
  s.accelerators.clear();
  for (const auto& a : j.at("accelerators")) {
    pci_link l;
    l.address = a.at("pci_address");
    l.vendor = a.at("vendor");
    l.vendor_name = a.at("vendor_name");
    l.device_id = a.at("device_id");
    l.class_code = a.at("class");
    l.current_gts = a.at("link_current").at("gts");
    l.current_gen = a.at("link_current").at("gen");
    l.current_width = a.at("link_current").at("width");
    l.max_gts = a.at("link_max").at("gts");
    l.max_gen = a.at("link_max").at("gen");
    l.max_width = a.at("link_max").at("width");
    l.theoretical_gbps = a.at("link_gbps_per_direction");
    l.current_gbps = a.at("link_gbps_current");
    // Files from before the ceilings were read lack these: unknown.
    l.numa_node = a.value("numa_node", -1);
    l.config_read = a.value("config_space", "");
    l.max_payload = a.value("max_payload_bytes", 0);
    l.max_read_request = a.value("max_read_request_bytes", 0);
    l.read_completion_boundary = a.value("read_completion_boundary_bytes", 0);
    l.relaxed_ordering = a.value("relaxed_ordering", false);
    if (a.contains("ceiling_gbps")) {
      const auto& c = a.at("ceiling_gbps");
      l.ceiling_h2d_gbps = c.value("h2d", 0.0);
      l.ceiling_h2d_rcb_gbps = c.value("h2d_rcb_completions", 0.0);
      l.ceiling_d2h_gbps = c.value("d2h", 0.0);
    }
    s.accelerators.push_back(l);
  }
  s.backend_versions = j.at("backends").get<std::map<std::string, std::map<std::string, std::string>>>();
}

std::string system_json(const system_info& s, int indent) { return nlohmann::json(s).dump(indent); }

}  // namespace xfer
