#include <cmath>
#include <cstdio>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fmt/ostream.h>
#include <ostream>
#include <xfer/core/reporter.hpp>
#include <xfer/core/size.hpp>
#include <xfer/mem/settings.hpp>

#include "result_json.hpp"
#include "value_json.hpp"

namespace xfer {

// ---- console ----------------------------------------------------------------

namespace {

// A block point's size is its array and its block ("64M/16K").
std::string size_text(const point_spec& s) {
  return s.block_bytes ? fmt::format("{}/{}", format_size(s.bytes), format_size(s.block_bytes)) : format_size(s.bytes);
}

constexpr const char* row_format = "{:<10} {:<12} {:<6} {:<19} {:>6} {:>12} {:>9} {:>8} {:>5}  {}\n";

std::string ci_text(const point_result& r) {
  if (!std::isfinite(r.ci_rel)) return "-";
  return fmt::format("{}{:.1f}%", r.converged ? "" : "~", 100 * r.ci_rel);
}

// One line per accelerator link: what it can carry and where that comes
// from; a link below its best state is shouted, since every figure behind it
// is capped (the classic "one GPU of four at 14 GB/s").
void print_link(std::ostream& out, const pci_link& a) {
  fmt::print(out, "link {} ({}): Gen{} x{}, raw {:.1f} GB/s per direction", a.address, a.vendor_name, a.current_gen,
             a.current_width, a.theoretical_gbps);
  if (a.ceiling_h2d_gbps > 0)
    fmt::print(out, "; ceilings h2d {:.1f}, d2h {:.1f} GB/s (MPS {} B, MRRS {} B, TLP overhead)", a.ceiling_h2d_gbps,
               a.ceiling_d2h_gbps, a.max_payload, a.max_read_request);
  else if (!a.config_read.empty())
    fmt::print(out, "; {}", a.config_read);
  if (a.numa_node >= 0) fmt::print(out, "; NUMA node {}", a.numa_node);
  fmt::print(out, "\n");
  if (const auto why = a.degraded(); !why.empty())
    fmt::print(out,
               "WARNING: link {} runs at {}: transfers to this device are capped below what it can do (a GPU may "
               "lower its link speed while idle; a width below the maximum is a slot, riser or seating problem)\n",
               a.address, why);
}

}  // namespace

console_reporter::console_reporter(std::ostream& out, bool rows) : out_(out), rows_(rows) {}

void console_reporter::report_context(const run_context& c) {
  fmt::print(out_, "xferbench {} | {} ({} CPUs) | {} | {}\n", c.tool_version, c.system.cpu_model,
             c.system.logical_cpus, c.system.os, c.started_at);
  for (const auto& a : c.system.accelerators) print_link(out_, a);
}

void console_reporter::report(const point_result& r) {
  // The column heads wait for the first row: a study's table has its own,
  // and without rows_ only a failure gets a row.
  const auto heads = [&] {
    if (columns_printed_) return;
    columns_printed_ = true;
    fmt::print(out_, row_format, "backend", "route", "dir", "host memory", "size", "median us", "GB/s", "ci95",
               "n", "");
  };
  const auto& s = r.spec;
  if (r.status == point_status::skipped) {
    ++skipped_;
    if (!rows_) return;
    const std::string key = fmt::format("{}|{}|{}|{}|{}", s.backend, to_string(s.route), s.host_memory, to_string(s.dir), r.reason);
    if (key == last_skip_key_) return;
    last_skip_key_ = key;
    heads();
    fmt::print(out_, row_format, s.backend, to_string(s.route), to_string(s.dir), s.host_memory, size_text(s), "", "", "",
               "", fmt::format("skipped: {}", r.reason));
    out_.flush();  // a row is for whoever watches the run, pipe or not
    return;
  }
  last_skip_key_.clear();
  if (r.status == point_status::failed) {
    ++failed_;
    heads();
    fmt::print(out_, row_format, s.backend, to_string(s.route), to_string(s.dir), s.host_memory, size_text(s), "", "", "",
               "", fmt::format("FAILED: {}", r.reason));
    out_.flush();
    return;
  }
  ++ok_;
  converged_ += r.converged;
  if (!rows_) return;
  heads();
  fmt::print(out_, row_format, s.backend, to_string(s.route), to_string(s.dir), s.host_memory, size_text(s),
             fmt::format("{:.3f}", r.latency_us()), fmt::format("{:.2f}", r.gbps()), ci_text(r), r.stats.count,
             fmt::format("{}{}{}{}", r.verified ? "" : "unverified ", r.above_link_limit ? "! above the link's limit" : "",
                         r.emulation.empty() ? "" : fmt::format("emulated ({}): no link", r.emulation),
                         r.clock_misses_work()
                             ? fmt::format("! wall clock {:.2f} GB/s: the events miss host work",
                                           r.bytes_per_rep / r.wall_stats.median / 1e9)
                             : ""));
  out_.flush();
}

void console_reporter::report_study(const study_info&) { study_ = true; }

void console_reporter::report(const record& r) {
  if (r.text.empty()) return;
  out_ << r.text;
  if (r.text.back() != '\n') out_ << '\n';
}

void console_reporter::finalize(bool interrupted) {
  if (study_) {
    out_.flush();
    return;
  }
  fmt::print(out_, "points: {} ok ({} converged to the CI target), {} skipped, {} failed{}\n", ok_, converged_,
             skipped_, failed_, interrupted ? " (interrupted: partial run)" : "");
  out_.flush();
}

// ---- JSON -------------------------------------------------------------------

struct json_reporter::document {
  nlohmann::json json;
};

json_reporter::json_reporter(std::filesystem::path path)
    : path_(std::move(path)), doc_(std::make_unique<document>()) {}

json_reporter::~json_reporter() = default;

void json_reporter::report_context(const run_context& c) {
  doc_->json = {{"schema", result_schema},
                {"tool", {{"name", "xferbench"}, {"version", c.tool_version}}},
                {"started_at", c.started_at},
                {"system", c.system},
                {"config", detail::to_nlohmann(c.config)},
                {"catalogue", detail::to_nlohmann(c.catalogue)},
                {"results", nlohmann::json::array()}};
}

void json_reporter::report(const point_result& r) { doc_->json["results"].push_back(r); }

void json_reporter::report_study(const study_info& info) {
  doc_->json["schema"] = info.schema;
  doc_->json.erase("results");
  for (const auto& s : info.sections) doc_->json[s] = nlohmann::json::array();
  if (const auto* c = std::get_if<value::object>(&info.config.data()))
    for (const auto& [k, v] : *c) doc_->json["config"][k] = detail::to_nlohmann(v);
  if (const auto* f = std::get_if<value::object>(&info.fields.data()))
    for (const auto& [k, v] : *f) doc_->json[k] = detail::to_nlohmann(v);
}

void json_reporter::report(const record& r) {
  if (r.section.empty()) return;
  doc_->json[r.section].push_back(detail::to_nlohmann(r.fields));
}

void json_reporter::finalize(bool interrupted) {
  doc_->json["interrupted"] = interrupted;
  // What shaped the run besides its command line, as the library resolved it
  // (xfer/mem/settings.hpp): written last, when every point has resolved its own.
  auto& settings = doc_->json["config"]["settings"] = nlohmann::json::array();
  for (const auto& s : mem::recorded_settings())
    settings.push_back({{"component", s.component},
                        {"scope", s.scope},
                        {"name", s.name},
                        {"value", s.value},
                        {"source", mem::to_string(s.source)},
                        {"origin", s.origin}});
  doc_->json["config"]["settings_notices"] = mem::recorded_notices();
  write_output(path_, doc_->json.dump(1) + "\n");
}

// ---- CSV --------------------------------------------------------------------

namespace {

std::string csv_quote(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

}  // namespace

csv_reporter::csv_reporter(std::filesystem::path path) : path_(std::move(path)) {}

std::string csv_reporter::header() {
  return "backend,device,device_index,route,direction,host_memory,bytes,status,timer,count,median_s,min_s,mean_s,"
         "p95_s,max_s,stddev_s,gbps,latency_us,wall_median_s,ci_rel,converged,verified,alloc_s,touch_s,"
         "first_transfer_s,link_ceiling_gbps,above_link_limit,concurrent_role,concurrent_devices,peer_device_index,"
         "peer_path,fleet_rank,fleet_phase,fleet_repeat,block_bytes,blocks,reason\n";
}

std::string csv_reporter::row(const point_result& r) {
  const auto& s = r.spec;
  const auto& t = r.stats;
  const bool ok = r.status == point_status::ok;
  const auto num = [&](double v) { return ok ? fmt::format("{:.6g}", v) : std::string(); };
  // Devices at once, route peer and fleet mode: empty where the point has none of them.
  std::string role, devices, rank, phase, repeat;
  if (r.together) {
    role = r.together->aggregate ? "aggregate" : "device";
    devices = fmt::format("{}", fmt::join(r.together->devices, ";"));
  }
  if (r.fleet) {
    rank = std::to_string(r.fleet->rank);
    phase = r.fleet->phase;
    repeat = std::to_string(r.fleet->repeat);
  }
  // A block point (sweep --blocks): its block size and blocks per repetition.
  std::string block, blocks;
  if (s.block_bytes) {
    block = std::to_string(s.block_bytes);
    blocks = std::to_string(s.block_list ? s.block_list->size() : s.bytes / s.block_bytes);
  }
  return fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n",
                     csv_quote(s.backend), csv_quote(r.device_name), s.device, csv_quote(to_string(s.route)), to_string(s.dir),
                     csv_quote(s.host_memory), s.bytes, to_string(r.status), r.timer_name(), t.count, num(t.median),
                     num(t.min), num(t.mean), num(t.p95), num(t.max), num(t.stddev), num(r.gbps()),
                     num(r.latency_us()), num(r.wall_stats.median), ok && std::isfinite(r.ci_rel) ? num(r.ci_rel) : "",
                     ok ? (r.converged ? "1" : "0") : "", ok ? (r.verified ? "1" : "0") : "", num(r.first.alloc_s),
                     num(r.first.touch_s), num(r.first.first_transfer_s),
                     r.link_ceiling_gbps > 0 ? fmt::format("{:.6g}", r.link_ceiling_gbps) : std::string(),
                     ok ? (r.above_link_limit ? "1" : "0") : "", role, devices,
                     s.peer >= 0 ? std::to_string(s.peer) : std::string(), csv_quote(r.peer_path), rank,
                     csv_quote(phase), repeat, block, blocks, csv_quote(r.reason));
}

void csv_reporter::report_context(const run_context&) { body_ = header(); }
void csv_reporter::report(const point_result& r) { body_ += row(r); }
void csv_reporter::finalize(bool) { write_output(path_, body_); }

// ---- multiplexer --------------------------------------------------------------

void multi_reporter::report_context(const run_context& c) {
  for (auto& r : reporters_) r->report_context(c);
}
void multi_reporter::report(const point_result& p) {
  for (auto& r : reporters_) r->report(p);
}
void multi_reporter::report_study(const study_info& info) {
  for (auto& r : reporters_) r->report_study(info);
}
void multi_reporter::report(const record& rec) {
  for (auto& r : reporters_) r->report(rec);
}
// Every reporter gets to finish even if one fails (a full disk for the CSV
// must not cost the JSON); the first failure is rethrown after.
void multi_reporter::finalize(bool interrupted) {
  std::exception_ptr first;
  for (auto& r : reporters_) {
    try {
      r->finalize(interrupted);
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
}

}  // namespace xfer
