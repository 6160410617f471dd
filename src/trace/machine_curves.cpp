#include <xfer/trace/machine_curves.hpp>

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <tuple>
#include <xfer/mem/files.hpp>

namespace xfer::trace {

namespace {
// A sweep of every route at every size is tens of MiB at most.
constexpr std::size_t max_sweep_bytes = std::size_t{1} << 30;
}  // namespace

std::string curve::label() const {
  return block_bytes ? fmt::format("{}, {} in blocks of {} B", host_memory, route, block_bytes)
                     : fmt::format("{}, {}", host_memory, route);
}

const curve* machine_curves::find(const std::string& route, const std::string& host_memory, const std::string& direction,
                                  std::uint64_t block_bytes) const {
  for (const auto& c : curves)
    if (c.route == route && c.host_memory == host_memory && c.direction == direction && c.block_bytes == block_bytes)
      return &c;
  return nullptr;
}

std::optional<double> machine_curves::seconds(const std::string& route, const std::string& host_memory,
                                              const std::string& direction, std::uint64_t bytes,
                                              std::uint64_t block_bytes) const {
  const curve* c = find(route, host_memory, direction, block_bytes);
  if (!c || c->points.empty() || bytes < c->points.front().first || bytes > c->points.back().first) return std::nullopt;
  const auto hi = std::lower_bound(c->points.begin(), c->points.end(), bytes,
                                   [](const auto& p, std::uint64_t b) { return p.first < b; });
  if (hi->first == bytes) return hi->second;
  const auto lo = std::prev(hi);
  const double f = std::log(static_cast<double>(bytes) / static_cast<double>(lo->first)) /
                   std::log(static_cast<double>(hi->first) / static_cast<double>(lo->first));
  return std::exp(std::log(lo->second) + f * (std::log(hi->second) - std::log(lo->second)));
}

machine_curves curves_from_sweep(const std::filesystem::path& file, unsigned device_index) {
  using json = nlohmann::json;
  json doc;
  try {
    doc = json::parse(mem::read_regular_file(file, max_sweep_bytes));
  } catch (const json::exception&) {
    throw std::invalid_argument(fmt::format("{}: not JSON (give a sweep's result file, uncompressed)", file.string()));
  } catch (const mem::file_problem& e) {
    throw std::invalid_argument(fmt::format("{}: cannot read it: {}", file.string(), e.what()));
  }
  if (!doc.is_object() || !doc.contains("results") || !doc["results"].is_array())
    throw std::invalid_argument(fmt::format("{}: not a sweep's result file (no results)", file.string()));

  machine_curves m;
  m.source = "file";
  m.path = file.string();
  using key = std::tuple<std::string, std::string, std::string, std::string, std::uint64_t>;
  std::map<key, std::map<std::uint64_t, double>> points;
  std::set<std::string> backends;
  for (const auto& r : doc["results"]) {
    if (!r.is_object() || r.value("status", "") != "ok" || !r.contains("median_s") || !r["median_s"].is_number())
      continue;
    const std::string backend = r.value("backend", "");
    if (!backend.starts_with("cuda") || r.value("device_index", -1) != static_cast<int>(device_index)) continue;
    const double s = r["median_s"].get<double>();
    if (!(s > 0)) continue;
    backends.insert(backend);
    m.device = r.value("device", "");
    points[{backend, r.value("route", ""), r.value("host_memory", ""), r.value("direction", ""),
            r.value("block_bytes", std::uint64_t{0})}][r.value("bytes", std::uint64_t{0})] = s;
  }
  // One backend's curves: the runtime's, which most programs call, where it ran.
  const std::string backend = backends.count("cuda-rt") ? "cuda-rt" : backends.empty() ? "" : *backends.begin();
  for (auto& [k, pts] : points) {
    if (std::get<0>(k) != backend) continue;
    curve c{std::get<0>(k), std::get<1>(k), std::get<2>(k), std::get<3>(k), std::get<4>(k), {}};
    for (const auto& [b, s] : pts)
      if (b > 0) c.points.emplace_back(b, s);
    if (!c.points.empty()) m.curves.push_back(std::move(c));
  }
  m.text = m.curves.empty() ? fmt::format("{} has no ok CUDA point of device {}", file.string(), device_index)
                            : fmt::format("{}: {} curves of {} on {}", file.string(), m.curves.size(), backend, m.device);
  return m;
}

}  // namespace xfer::trace
