#include <algorithm>
#include <fmt/format.h>
#include <fmt/ostream.h>
#include <ostream>
#include <xfer/core/size.hpp>
#include <xfer/core/summary_reporter.hpp>

namespace xfer {

summary_reporter::summary_reporter(std::ostream& out) : out_(out) {}

void summary_reporter::report(const point_result& r) {
  if (r.status != point_status::ok) return;
  const auto& s = r.spec;
  const std::string id = fmt::format("{} dev{}", s.backend, s.device);
  auto [it, fresh] = tables_.try_emplace(id);
  if (fresh) {
    order_.push_back(id);
    it->second.title = fmt::format("{} device {} ({})", s.backend, s.device, r.device_name);
    if (r.placed)
      it->second.title += r.placed->applied ? fmt::format(", measured from CPUs {}{}", r.placed->cpus,
                                                          r.placed->numa_node >= 0
                                                              ? fmt::format(" and NUMA node {}", r.placed->numa_node)
                                                              : std::string())
                                            : fmt::format(", not placed near it: {}", r.placed->note);
  }
  auto& t = it->second;
  // A block point's curve is one block size of one way (sweep --blocks): its
  // row names the block, as one row across block sizes would mix ways of moving.
  const bool one_block = s.block_bytes && s.block_bytes != s.bytes;
  const std::string route = one_block ? fmt::format("{} {}", to_string(s.route), format_size(s.block_bytes))
                                      : std::string(to_string(s.route));
  const curve_key key{route, s.host_memory, to_string(s.dir)};
  auto& c = t.curves[key];
  if (c.empty()) t.order.push_back(key);
  c.push_back(r);
}

summary_reporter::row summary_reporter::summarize_curve(const std::vector<point_result>& points) {
  row w;
  std::vector<const point_result*> sorted;
  for (const auto& p : points) sorted.push_back(&p);
  std::sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) { return a->spec.bytes < b->spec.bytes; });
  w.points = sorted.size();
  const point_result* peak = nullptr;
  const auto trusted = [](const point_result* p) { return p->trusted(); };
  for (const auto* p : sorted) {
    w.converged += p->converged;
    w.above_limit += p->above_link_limit;
    w.clock_misses_work += p->clock_misses_work();
    if (!p->emulation.empty()) w.emulation = p->emulation, ++w.emulated;
    if (trusted(p) && (!peak || p->gbps() > peak->gbps())) peak = p;
  }
  if (!sorted.empty()) {
    w.smallest_bytes = sorted.front()->spec.bytes;
    w.smallest_us = sorted.front()->latency_us();
    w.access_times = std::all_of(sorted.begin(), sorted.end(), [](auto* p) { return p->times_access(); });
  }
  if (w.access_times) {
    // Fastest and slowest access: the peak columns stay empty.
    for (const auto* p : sorted) {
      w.smallest_us = std::min(w.smallest_us, p->latency_us());
      w.slowest_us = std::max(w.slowest_us, p->latency_us());
    }
    return w;
  }
  if (!peak) return w;
  w.peak_gbps = peak->gbps();
  w.peak_bytes = peak->spec.bytes;
  if (peak->link_ceiling_gbps > 0) w.pct_of_ceiling = 100 * w.peak_gbps / peak->link_ceiling_gbps;
  for (const auto* p : sorted)
    if (trusted(p) && p->gbps() >= w.peak_gbps / 2) {
      w.half_peak_bytes = p->spec.bytes;
      break;
    }
  return w;
}

void summary_reporter::finalize(bool) {
  constexpr const char* fmt_row = "  {:<13} {:<19} {:<6} {:>10} {:>8} {:>10} {:>16} {:>9} {:>9}\n";
  for (const auto& id : order_) {
    const auto& t = tables_.at(id);
    fmt::print(out_, "\n{}\n", t.title);
    fmt::print(out_, fmt_row, "route", "host memory", "dir", "peak GB/s", "at size", "half from", "smallest",
               "% link", "converged");
    for (const auto& key : t.order) {
      const row w = summarize_curve(t.curves.at(key));
      const auto& [route, kind, dir] = key;
      const std::string smallest = w.access_times
                                       ? fmt::format("{:.2f}-{:.2f} us", w.smallest_us, w.slowest_us)
                                       : fmt::format("{:.2f} us @ {}", w.smallest_us, format_size(w.smallest_bytes));
      fmt::print(out_, fmt_row, route, kind, dir, w.peak_gbps > 0 ? fmt::format("{:.2f}", w.peak_gbps) : "-",
                 w.peak_gbps > 0 ? format_size(w.peak_bytes) : "-",
                 w.half_peak_bytes ? format_size(w.half_peak_bytes) : "-", smallest,
                 w.pct_of_ceiling >= 0 ? fmt::format("{:.0f}%", w.pct_of_ceiling) : "-",
                 fmt::format("{}/{}", w.converged, w.points));
      if (w.above_limit)
        fmt::print(out_, "    {} size(s) above the link's ceiling: left out of the peak\n", w.above_limit);
      if (w.clock_misses_work)
        fmt::print(out_,
                   "    {} size(s) where the wall clock took over twice the device events' time (host work the "
                   "events miss): left out of the peak\n",
                   w.clock_misses_work);
      if (w.emulated)
        fmt::print(out_,
                   "    {} size(s) emulated ({}): no data crossed a link, the times are the API's own cost per call; "
                   "no peak\n",
                   w.emulated, w.emulation);
    }
  }
  if (!order_.empty()) fmt::print(out_, "\n");
}

}  // namespace xfer
