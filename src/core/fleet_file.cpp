// The fleet's files: what a rank sends rank 0, the fleet result file, and
// reading them back (the baseline, the rank files of --out-dir); fleet.cpp is
// what the fleet measures and how it judges.
#include <filesystem>
#include <fmt/format.h>
#include <map>
#include <xfer/core/fleet.hpp>
#include <xfer/mem/files.hpp>

#include "result_json.hpp"
#include "value_json.hpp"

namespace xfer::fleet {
namespace {

using json = nlohmann::json;

json link_json(const pci_link& l) {
  system_info s;
  s.accelerators = {l};
  json j = s;
  return j.at("accelerators").at(0);
}

pci_link link_from_json(const json& a) {
  // Through system_info's own parser, the one place a link is read: an
  // empty system (every key it requires, from its writer) around this link.
  json s = system_info{};
  s["accelerators"] = json::array({a});
  return s.get<system_info>().accelerators.at(0);
}

json rank_json(const rank_report& r, bool with_points) {
  json j = {{"rank", r.who.rank},
            {"size", r.who.size},
            {"local_rank", r.who.local_rank},
            {"local_size", r.who.local_size},
            {"node", r.who.node},
            {"device", r.device},
            {"device_name", r.device_name},
            {"device_pci", r.device_pci},
            {"version", r.version},
            {"options", r.options},
            {"transport", r.transport},
            {"status", r.status},
            {"reason", r.reason}};
  if (r.interrupted_by) j["interrupted_by"] = r.interrupted_by;
  if (r.link) j["link"] = link_json(*r.link);
  if (with_points) j["points"] = r.points;
  return j;
}

rank_report rank_from_json(const json& j) {
  rank_report r;
  r.who.rank = j.at("rank");
  r.who.size = j.at("size");
  r.who.local_rank = j.at("local_rank");
  r.who.local_size = j.at("local_size");
  r.who.node = j.at("node");
  r.device = j.at("device");
  r.device_name = j.value("device_name", "");
  r.device_pci = j.value("device_pci", "");
  r.version = j.at("version");
  r.options = j.at("options");
  r.transport = j.value("transport", "");
  r.status = j.at("status");
  r.reason = j.value("reason", "");
  r.interrupted_by = j.value("interrupted_by", 0);
  if (j.contains("link")) r.link = link_from_json(j.at("link"));
  if (j.contains("points")) r.points = j.at("points").get<std::vector<point_result>>();
  return r;
}

}  // namespace

std::string to_json_text(const rank_report& r) { return rank_json(r, true).dump(); }

rank_report rank_report_from_json(const std::string& text) {
  try {
    return rank_from_json(json::parse(text));
  } catch (const json::exception& e) {
    throw std::runtime_error(fmt::format("not a fleet rank report: {}", e.what()));
  }
}

namespace {

json fleet_doc(const run_context& c, const merged& m) {
  json results = json::array();
  for (const auto& r : m.ranks)
    for (const auto& p : r.points) results.push_back(p);
  json ranks = json::array();
  for (const auto& r : m.ranks) {
    // Each rank's verdict and why, as judged here: the report reads them
    // instead of judging again (one definition of an outlier).
    json j = rank_json(r, false);
    json why = json::array();
    if ((r.status != "ok" && r.status != "error") || r.interrupted_by) why.push_back(r.reason);  // "too many ranks"
    for (const auto& f : m.findings)
      if (f.rank == r.who.rank) why.push_back(f.why);
    j["verdict"] = r.interrupted_by ? "interrupted" : why.empty() ? "healthy" : "unhealthy";
    j["why"] = why;
    ranks.push_back(j);
  }
  json findings = json::array();
  for (const auto& f : m.findings)
    findings.push_back({{"rank", f.rank},
                        {"node", f.node},
                        {"device", f.device},
                        {"phase", f.phase},
                        {"test", f.test},
                        {"value", f.value},
                        {"reference", f.reference},
                        {"why", f.why}});
  json doc = {{"schema", result_schema},
              {"tool", {{"name", "xferbench"}, {"version", c.tool_version}}},
              {"started_at", c.started_at},
              {"system", c.system},
              {"config", detail::to_nlohmann(c.config)},
              {"catalogue", detail::to_nlohmann(c.catalogue)},
              {"fleet",
               {{"tests", health_test_names()},
                {"findings", findings},
                {"problems", m.problems},
                {"missing_ranks", m.missing},
                {"healthy", m.exit_code == 0},
                {"interrupted", m.interrupted_by != 0},
                {"exit_code", m.exit_code},
                {"ranks", ranks}}},
              {"results", results},
              // As a sweep's file says it: what is here is partial.
              {"interrupted", m.interrupted_by != 0}};
  return doc;
}

// A fleet file's ranks, each with its points.
std::vector<rank_report> ranks_of(const json& doc) {
  std::map<int, rank_report> by_rank;
  for (const auto& r : doc.at("fleet").at("ranks")) {
    rank_report rr = rank_from_json(r);
    by_rank[rr.who.rank] = std::move(rr);
  }
  for (const auto& p : doc.at("results")) {
    point_result pr = p.get<point_result>();
    if (pr.fleet && by_rank.count(pr.fleet->rank)) by_rank[pr.fleet->rank].points.push_back(std::move(pr));
  }
  std::vector<rank_report> out;
  for (auto& [rank, r] : by_rank) out.push_back(std::move(r));
  return out;
}

// The largest result file read: a fleet's file holds a few points per rank.
constexpr std::size_t max_fleet_file_bytes = std::size_t(1) << 30;

json read_json(const std::string& path) {
  std::string text;
  try {
    text = mem::read_regular_file(path, max_fleet_file_bytes);
  } catch (const mem::file_problem& e) {
    throw std::runtime_error(fmt::format("cannot read {}: {}", path, e.what()));
  }
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    throw std::runtime_error(fmt::format("{} is not a fleet result file: {}", path, e.what()));
  }
}

}  // namespace

std::string fleet_json(const run_context& c, const merged& m) { return fleet_doc(c, m).dump(2) + "\n"; }

merged_files merge_rank_files(const std::vector<std::string>& paths, const thresholds& t,
                              const std::vector<rank_report>* baseline, const std::string& missing_why) {
  if (paths.empty()) throw std::invalid_argument("no rank files to merge");
  std::vector<std::optional<rank_report>> by_rank;
  std::map<int, std::string> seen;
  std::vector<std::string> twice, names;
  json first;
  for (const auto& path : paths) {
    json doc = read_json(path);
    std::vector<rank_report> ranks;
    try {
      ranks = ranks_of(doc);
    } catch (const json::exception& e) {
      throw std::runtime_error(fmt::format("{} is not a fleet rank file: {}", path, e.what()));
    }
    if (ranks.empty()) throw std::runtime_error(fmt::format("{} is not a fleet rank file: it has no ranks", path));
    if (first.is_null()) first = std::move(doc);
    names.push_back(std::filesystem::path(path).filename().string());
    for (auto& r : ranks) {
      // A rank outside its job (rank 7 of 2) would be merged as a fleet of 8 with
      // ranks missing: refused, as a launcher's rank variables are (fleet.cpp).
      if (r.who.size > max_ranks)
        throw std::runtime_error(fmt::format("{}: rank {} claims a job of {} ranks, more than the {} a fleet may have",
                                             path, r.who.rank, r.who.size, max_ranks));
      if (r.who.size <= 0 || r.who.rank < 0 || r.who.rank >= r.who.size)
        throw std::runtime_error(fmt::format("{}: rank {} of {} is outside the job (ranks 0 to {})", path, r.who.rank,
                                             r.who.size, r.who.size - 1));
      if (auto [at, fresh] = seen.emplace(r.who.rank, path); !fresh) {
        twice.push_back(fmt::format("rank {} reported twice ({} and {})", r.who.rank, at->second, path));
        continue;
      }
      const auto size = static_cast<std::size_t>(std::max(r.who.size, r.who.rank + 1));
      if (by_rank.size() < size) by_rank.resize(size);
      by_rank[static_cast<std::size_t>(r.who.rank)] = std::move(r);
    }
  }
  merged_files out;
  out.m = merge(std::move(by_rank), t, baseline, missing_why);
  out.m.problems.insert(out.m.problems.begin(), twice.begin(), twice.end());
  // The merged file keeps the ranks' own header: their system, their command line.
  json doc = fleet_doc(run_context{}, out.m);
  for (const char* key : {"tool", "started_at", "system", "catalogue"})
    if (first.contains(key)) doc[key] = first[key];
  doc["config"] = first.value("config", json::object());
  doc["config"]["merged_from"] = names;
  out.json = doc.dump(2) + "\n";
  return out;
}

std::vector<rank_report> read_fleet_file(const std::string& path) {
  const json doc = read_json(path);
  try {
    return ranks_of(doc);
  } catch (const json::exception& e) {
    throw std::runtime_error(fmt::format("{} is not a fleet result file: {}", path, e.what()));
  }
}

}  // namespace xfer::fleet
