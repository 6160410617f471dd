#include <algorithm>
#include <fmt/format.h>
#include <map>
#include <set>
#include <xfer/core/errors.hpp>
#include <xfer/core/peer_matrix.hpp>
#include <xfer/core/plan.hpp>
#include <xfer/core/reporter.hpp>
#include <xfer/core/size.hpp>
#include <xfer/core/sweep.hpp>
#include <xfer/core/system_probe.hpp>

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

std::string peer_unfit_reason(const point_spec& p, const std::vector<device_info>& devices,
                              std::uint64_t available_host) {
  point_spec to = p;
  to.device = p.peer;
  for (const auto& side : {p, to})
    if (auto why = unavailable_reason(side, {}, devices); !why.empty()) return why;
  const auto is_host = [&](int index) { return find_device(devices, index).type == "cpu"; };
  // Two stand-ins of the host backend (or one, on the diagonal) draw both
  // buffers from the same memory: each alone may fit where the pair does not.
  if (available_host && is_host(p.device) && is_host(p.peer) && p.bytes > available_host / 2)
    return fmt::format("needs 2 buffers of {} ({} B each) in host memory; only {} B of memory is available",
                       format_size(p.bytes), p.bytes, available_host);
  return {};
}

sweep_outcome run_peer_matrix(backend& b, const std::vector<point_spec>& points, const measure_options& options,
                              reporter& out, const std::atomic<bool>& stop, std::vector<point_result>& results) {
  sweep_outcome outcome;
  const auto devices = b.devices();
  watched_points watched(options, stop);
  for (const auto& p : points) {
    if (stop.load()) {
      outcome.interrupted = true;
      break;
    }
    const device_info device = find_device(devices, p.device);
    if (auto why = peer_unfit_reason(p, devices, available_memory_bytes()); !why.empty()) {
      point_result r = unrun(p, device, point_status::skipped, std::move(why));
      outcome.count(r.status);
      out.report(r);
      results.push_back(std::move(r));
      continue;
    }
    // The pair's copy, prepared and measured on the watched thread: a copy
    // that never returns fails at the watchdog's bound, as a sweep's point does.
    // The job holds copies of what it reads (an abandoned thread outlives this call).
    auto ran = watched.run(p, device, watchdog_limit(options, {p}), [&b, p, device, options, &stop] {
      std::string path;
      point_result r;
      try {
        auto copy = b.prepare_peer(p);
        path = copy.path;
        r = measure(*copy.copy, p, device, options, stop);
      } catch (...) {
        r = result_of(p, device);
        record_exception(r);
      }
      r.peer_path = path;
      return r;
    });
    outcome.abandoned = watched.abandoned();
    if (!ran || (stop.load() && ran->status != point_status::ok)) {
      outcome.interrupted = true;
      break;
    }
    outcome.count(ran->status);
    out.report(*ran);
    results.push_back(std::move(*ran));
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

void check_device_indices(const std::vector<int>& devices) {
  for (const auto d : devices)
    if (d < 0) throw usage_error(fmt::format("--device {}: device indices are 0 or more", d));
}

std::vector<peer_run> select_peer_devices(const std::vector<backend*>& chosen, const std::vector<int>& named) {
  // Each index once: a repeated one was reported as one no backend has.
  const std::vector<int> devices = without_repeats(named);
  check_device_indices(devices);
  std::vector<peer_run> runs;
  std::vector<bool> seen(devices.size(), false);
  for (backend* b : chosen) {
    peer_run run{b, {}};
    for (const auto& d : b->devices()) {
      const auto at = std::find(devices.begin(), devices.end(), d.index);
      if (devices.empty() || at != devices.end()) run.devices.push_back(d.index);
      if (at != devices.end()) seen[static_cast<std::size_t>(at - devices.begin())] = true;
    }
    if (!run.devices.empty()) runs.push_back(std::move(run));
  }
  for (std::size_t i = 0; i < seen.size(); ++i)
    if (!seen[i]) throw usage_error(fmt::format("--device {}: no chosen backend has a device {}", devices[i], devices[i]));
  return runs;
}

sweep_outcome run_peer_matrices(const std::vector<peer_run>& runs, const std::vector<std::uint64_t>& sizes,
                                const measure_options& options, reporter& out, const std::atomic<bool>& stop,
                                std::vector<point_result>& results) {
  sweep_outcome all;
  for (const auto& r : runs) {
    const auto o = run_peer_matrix(*r.impl, peer_points(r.impl->name(), r.devices, sizes), options, out, stop, results);
    all.ok += o.ok;
    all.skipped += o.skipped;
    all.failed += o.failed;
    // A copy left hung inside a backend: the caller must leave without destroying it.
    all.abandoned = all.abandoned || o.abandoned;
    if (o.interrupted) {
      all.interrupted = true;
      break;
    }
  }
  return all;
}

}  // namespace xfer
