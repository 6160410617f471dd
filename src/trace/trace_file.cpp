#include <xfer/trace/trace_file.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace xfer::trace {

namespace {

using ojson = nlohmann::ordered_json;

std::string amount_text(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) b /= 1024, ++u;
  return u == 0 ? fmt::format("{:.0f} B", b) : fmt::format("{:.3g} {}", b, units[u]);
}

std::string time_text(double s) {
  if (s >= 1) return fmt::format("{:.3g} s", s);
  if (s >= 1e-3) return fmt::format("{:.3g} ms", s * 1e3);
  return fmt::format("{:.3g} us", s * 1e6);
}

ojson optional_number(const std::optional<double>& v) { return v ? ojson(*v) : ojson(nullptr); }

ojson what_if_json(const what_if& w) {
  ojson j{{"fix", w.fix},         {"advice", w.advice},     {"call_to_use", w.call_to_use},
         {"route", w.route},     {"host_memory", w.host_memory},
         {"predicted_s", optional_number(w.predicted_s)}, {"saving_s", optional_number(w.saving_s)}};
  if (!w.not_priced.empty()) j["not_priced"] = w.not_priced;
  return j;
}

double share(double part, double whole) { return whole > 0 ? part / whole : 0.0; }

std::string group_words(const group& g) {
  return fmt::format("{} x {} {} {}{} ({}{})", g.count, amount_text(static_cast<double>(g.bytes) / static_cast<double>(g.count)),
                     g.direction, g.host_memory, g.op == "memset" ? " memset" : "", g.call.empty() ? "call not seen" : g.call,
                     g.async ? ", async" : "");
}

}  // namespace

std::string trace_json(const program_run& run, const std::vector<process_capture>& processes,
                       const machine_curves& machine, const bill& b, const std::string& system_json,
                       const std::string& tool_version) {
  ojson doc;
  doc["schema"] = trace_schema;
  doc["tool"] = {{"name", "xferbench"}, {"version", tool_version}};
  doc["system"] = ojson::parse(system_json);
  doc["started_at"] = run.started_at;
  doc["command"] = run.command;
  doc["outcome"] = {{"state", run.state},
                    {"exit_code", run.exit_code ? ojson(*run.exit_code) : ojson(nullptr)},
                    {"signal", run.signal ? ojson(*run.signal) : ojson(nullptr)},
                    {"text", run.text}};
  doc["wall_s"] = run.wall_s;
  ojson procs = ojson::array();
  for (const auto& p : processes) {
    ojson j{{"pid", p.pid}, {"ppid", p.ppid}, {"argv", p.argv}, {"complete", p.complete},
           {"dropped_records", p.dropped}, {"transfers", p.transfers.size()}};
    if (!p.error.empty()) j["error"] = p.error;
    procs.push_back(std::move(j));
  }
  doc["processes"] = std::move(procs);

  ojson transfers = ojson::array();
  std::uint64_t first = 0;
  for (const auto& p : processes)
    if (p.clock_ns && (!first || p.clock_ns < first)) first = p.clock_ns;
  for (std::size_t i = 0; i < b.transfers.size() && i < max_listed_transfers; ++i) {
    const transfer& t = b.transfers[i];
    transfers.push_back({{"pid", t.pid},
                         {"op", t.op},
                         {"call", t.call},
                         {"async", t.async},
                         {"direction", t.direction},
                         {"host_memory", t.host_memory},
                         {"bytes", t.bytes},
                         {"device", t.device},
                         {"stream", t.stream},
                         {"start_s", t.start_ns >= first ? static_cast<double>(t.start_ns - first) * 1e-9 : 0.0},
                         {"device_s", t.device_s()},
                         {"host_s", optional_number(t.host_s)},
                         {"cost_s", t.cost_s()},
                         {"overlap_s", t.overlap_s}});
  }
  doc["transfers"] = std::move(transfers);
  doc["transfers_left_out"] = b.transfers.size() > max_listed_transfers ? b.transfers.size() - max_listed_transfers : 0;

  ojson curves = ojson::array();
  for (const auto& c : machine.curves) {
    ojson pts = ojson::array();
    for (const auto& [bytes, s] : c.points) pts.push_back({bytes, s});
    ojson j{{"backend", c.backend}, {"route", c.route}, {"host_memory", c.host_memory}, {"direction", c.direction},
           {"label", c.label()}, {"points", std::move(pts)}};
    if (c.block_bytes) j["block_bytes"] = c.block_bytes;
    curves.push_back(std::move(j));
  }
  doc["machine"] = {{"source", machine.source},
                    {"path", machine.path.empty() ? ojson(nullptr) : ojson(machine.path)},
                    {"device", machine.device},
                    {"text", machine.text},
                    {"curves", std::move(curves)}};

  ojson groups = ojson::array();
  for (const auto& g : b.groups) {
    ojson w = ojson::array();
    for (const auto& x : g.what_ifs) w.push_back(what_if_json(x));
    groups.push_back({{"id", g.id},
                      {"op", g.op},
                      {"direction", g.direction},
                      {"host_memory", g.host_memory},
                      {"size_class", g.size_class},
                      {"size_class_text", amount_text(static_cast<double>(g.size_class))},
                      {"call", g.call},
                      {"async", g.async},
                      {"device", g.device},
                      {"stream", g.stream},
                      {"count", g.count},
                      {"bytes", g.bytes},
                      {"mean_bytes", g.count ? static_cast<double>(g.bytes) / static_cast<double>(g.count) : 0.0},
                      {"device_s", g.device_s},
                      {"host_s", g.host_s},
                      {"cost_s", g.cost_s},
                      {"gbps", g.cost_s > 0 ? static_cast<double>(g.bytes) / g.cost_s * 1e-9 : 0.0},
                      {"share_of_wall", share(g.cost_s, b.wall_s)},
                      {"overlap_share", share(g.overlap_s, g.device_s)},
                      {"what_if", std::move(w)}});
  }
  doc["groups"] = std::move(groups);

  ojson fixes = ojson::array();
  double saving = 0;
  for (const auto& f : b.fixes) {
    saving += *f.fix.saving_s;
    ojson j = what_if_json(f.fix);
    j["rank"] = f.rank;
    j["group"] = f.group;
    j["cost_s"] = f.cost_s;
    j["share_of_wall"] = share(*f.fix.saving_s, b.wall_s);
    fixes.push_back(std::move(j));
  }
  doc["fixes"] = std::move(fixes);
  doc["summary"] = {{"transfers", b.transfers.size()},
                    {"bytes", b.bytes},
                    {"cost_s", b.cost_s},
                    {"share_of_wall", share(b.cost_s, b.wall_s)},
                    {"saving_s", saving},
                    {"text", bill_text(run, machine, b)}};
  return doc.dump(1) + "\n";
}

std::string bill_text(const program_run& run, const machine_curves& machine, const bill& b) {
  std::string out = fmt::format("trace: {}\n", run.text);
  if (b.transfers.empty()) return out + "trace: no transfer was captured\n";
  out += fmt::format("trace: {} transfers, {} in {} ({:.1f}% of the program's {})\n", b.transfers.size(),
                     amount_text(static_cast<double>(b.bytes)), time_text(b.cost_s), 100 * share(b.cost_s, b.wall_s),
                     time_text(b.wall_s));
  const std::size_t shown = std::min<std::size_t>(b.groups.size(), 5);
  for (std::size_t i = 0; i < shown; ++i) {
    const group& g = b.groups[i];
    out += fmt::format("  {:>9}  {:5.1f}%  {:8.2f} GB/s  {}\n", time_text(g.cost_s), 100 * share(g.cost_s, b.wall_s),
                       g.cost_s > 0 ? static_cast<double>(g.bytes) / g.cost_s * 1e-9 : 0.0, group_words(g));
  }
  if (b.groups.size() > shown) out += fmt::format("  ... {} more groups in the file\n", b.groups.size() - shown);
  if (machine.source == "none") return out + fmt::format("trace: not priced: {}\n", machine.text);
  out += fmt::format("trace: priced with {}\n", machine.text);
  if (b.fixes.empty()) return out + "trace: no fix saves more than 5% of a group's time on this machine\n";
  for (std::size_t i = 0; i < b.fixes.size() && i < 3; ++i) {
    const ranked_fix& f = b.fixes[i];
    out += fmt::format("fix {}: {} saves {} ({:.1f}% of the program): {} -> {}; {}: {}\n", f.rank,
                       group_words(b.groups[f.group]), time_text(*f.fix.saving_s),
                       100 * share(*f.fix.saving_s, b.wall_s), time_text(f.cost_s), time_text(*f.fix.predicted_s),
                       f.fix.advice, f.fix.call_to_use);
  }
  return out;
}

}  // namespace xfer::trace
