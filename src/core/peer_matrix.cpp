#include <algorithm>
#include <fmt/format.h>
#include <map>
#include <set>
#include <xfer/core/errors.hpp>
#include <xfer/core/peer_matrix.hpp>
#include <xfer/core/reporter.hpp>
#include <xfer/core/size.hpp>

namespace xfer {

std::vector<point_spec> peer_points(const std::string& backend, const std::vector<int>& devices,
                                    const std::vector<std::uint64_t>& sizes) {
  std::vector<point_spec> out;
  for (const auto bytes : sizes)
    for (const int src : devices)
      for (const int dst : devices) {
        point_spec p;
        p.backend = backend;
        p.device = src;
        p.peer = dst;
        p.route = route_kind::peer;
        p.dir = direction::d2d;
        p.host_memory = "none";
        p.bytes = bytes;
        out.push_back(p);
      }
  return out;
}

sweep_outcome run_peer_matrix(backend& b, const std::vector<point_spec>& points, const measure_options& options,
                              reporter& out, const std::atomic<bool>& stop, std::vector<point_result>& results) {
  sweep_outcome outcome;
  const auto devices = b.devices();
  const auto find = [&](int index) {
    for (const auto& d : devices)
      if (d.index == index) return d;
    return device_info{.index = index, .name = "?", .type = "?", .details = {}, .unavailable_kinds = {}};
  };
  for (const auto& p : points) {
    if (stop.load()) {
      outcome.interrupted = true;
      break;
    }
    const device_info device = find(p.device);
    point_result r;
    std::string path;
    try {
      auto copy = b.prepare_peer(p);
      path = copy.path;
      r = measure(*copy.copy, p, device, options, stop);
    } catch (const skip_point& e) {
      r.spec = p;
      r.device_name = device.name;
      r.device_type = device.type;
      r.status = point_status::skipped;
      r.reason = e.what();
    } catch (const std::exception& e) {
      r.spec = p;
      r.device_name = device.name;
      r.device_type = device.type;
      r.status = point_status::failed;
      r.reason = e.what();
    }
    r.peer_path = path;
    if (stop.load() && r.status != point_status::ok) {
      outcome.interrupted = true;
      break;
    }
    switch (r.status) {
      case point_status::ok: ++outcome.ok; break;
      case point_status::skipped: ++outcome.skipped; break;
      case point_status::failed: ++outcome.failed; break;
    }
    out.report(r);
    results.push_back(std::move(r));
  }
  return outcome;
}

std::string peer_matrix_text(const std::vector<point_result>& results) {
  // backend -> bytes -> (src, dst) -> result
  std::map<std::string, std::map<std::uint64_t, std::map<std::pair<int, int>, const point_result*>>> by;
  for (const auto& r : results)
    if (r.spec.route == route_kind::peer) by[r.spec.backend][r.spec.bytes][{r.spec.device, r.spec.peer}] = &r;
  std::string text;
  for (const auto& [backend, sizes] : by)
    for (const auto& [bytes, cells] : sizes) {
      std::set<int> idx;
      for (const auto& [pair, r] : cells) {
        idx.insert(pair.first);
        idx.insert(pair.second);
      }
      text += fmt::format("{} peer matrix, {} per copy, GB/s (row: from device, column: to device)\n", backend,
                          format_size(bytes));
      text += fmt::format("{:>8}", "from\\to");
      for (int d : idx) text += fmt::format(" {:>9}", d);
      text += "\n";
      std::map<std::string, std::vector<std::string>> paths;
      for (int s : idx) {
        text += fmt::format("{:>8}", s);
        for (int d : idx) {
          const auto it = cells.find({s, d});
          if (it == cells.end()) {
            text += fmt::format(" {:>9}", "");
            continue;
          }
          const point_result& r = *it->second;
          text += r.status == point_status::ok ? fmt::format(" {:>9.2f}", r.gbps())
                                               : fmt::format(" {:>9}", r.status == point_status::skipped ? "skip" : "FAIL");
          const std::string why = r.status == point_status::ok ? r.peer_path : fmt::format("{}: {}", to_string(r.status), r.reason);
          paths[why.empty() ? "?" : why].push_back(fmt::format("{}->{}", s, d));
        }
        text += "\n";
      }
      for (const auto& [path, pairs] : paths) {
        std::string list;
        for (const auto& p : pairs) list += (list.empty() ? "" : " ") + p;
        text += fmt::format("  {}: {}\n", path, list);
      }
      text += "\n";
    }
  return text;
}

}  // namespace xfer
