#include <algorithm>
#include <array>
#include <fmt/format.h>
#include <fmt/ostream.h>
#include <ostream>
#include <xfer/core/size.hpp>
#include <xfer/core/summary_reporter.hpp>

namespace xfer {

summary_reporter::summary_reporter(std::ostream& out, bool brief) : out_(out), brief_(brief) {}

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

namespace {

// "1.13-1.40 us"; "850.00 ns-1.40 us" where the two need different units.
std::string time_range(double from_s, double to_s) {
  const std::string a = format_duration(from_s), b = format_duration(to_s);
  const auto unit = [](const std::string& t) { return t.substr(t.find(' ')); };
  return unit(a) == unit(b) ? a.substr(0, a.find(' ')) + "-" + b : a + "-" + b;
}

}  // namespace

void summary_reporter::print_table(const table& t) {
  // Columns as wide as their widest cell, so that long route and kind names keep the table straight.
  using cells = std::array<std::string, 9>;
  constexpr std::array<bool, 9> left = {true, true, true, false, false, false, false, false, false};
  const auto print_row = [&](const cells& c, const std::array<std::size_t, 9>& width) {
    std::string line = " ";
    for (std::size_t i = 0; i < c.size(); ++i)
      line += left[i] ? fmt::format(" {:<{}}", c[i], width[i]) : fmt::format(" {:>{}}", c[i], width[i]);
    while (!line.empty() && line.back() == ' ') line.pop_back();
    fmt::print(out_, "{}\n", line);
  };
  {
    fmt::print(out_, "\n{}\n", t.title);
    const cells head = {"route", "host memory", "dir", "peak GB/s", "at size", "half from", "smallest", "% link",
                        "converged"};
    std::vector<std::pair<cells, row>> rows;
    for (const auto& key : t.order) {
      const row w = summarize_curve(t.curves.at(key));
      const auto& [route, kind, dir] = key;
      // A time in the unit that shows it: a 2 ns access is not "0.00 us".
      const std::string smallest = w.access_times
                                       ? time_range(w.smallest_us * 1e-6, w.slowest_us * 1e-6)
                                       : fmt::format("{} @ {}", format_duration(w.smallest_us * 1e-6),
                                                     format_size(w.smallest_bytes));
      rows.push_back({{route, kind, dir, w.peak_gbps > 0 ? fmt::format("{:.2f}", w.peak_gbps) : "-",
                       w.peak_gbps > 0 ? format_size(w.peak_bytes) : "-",
                       w.half_peak_bytes ? format_size(w.half_peak_bytes) : "-", smallest,
                       w.pct_of_ceiling >= 0 ? fmt::format("{:.0f}%", w.pct_of_ceiling) : "-",
                       fmt::format("{}/{}", w.converged, w.points)},
                      w});
    }
    std::array<std::size_t, 9> width{};
    for (std::size_t i = 0; i < width.size(); ++i) width[i] = head[i].size();
    for (const auto& [c, w] : rows)
      for (std::size_t i = 0; i < width.size(); ++i) width[i] = std::max(width[i], c[i].size());
    print_row(head, width);
    for (const auto& [c, w] : rows) {
      print_row(c, width);
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
}

void summary_reporter::print_brief(const table& t) {
  // Each direction's best curve: its peak, where, and the share of the link.
  std::map<std::string, std::pair<row, curve_key>> best;
  std::vector<std::string> dirs;  // in the order the run measured them
  std::size_t points = 0, converged = 0;
  for (const auto& key : t.order) {
    const row w = summarize_curve(t.curves.at(key));
    points += w.points;
    converged += w.converged;
    const auto& dir = std::get<2>(key);
    if (!best.contains(dir)) dirs.push_back(dir);
    auto& b = best[dir];
    if (w.peak_gbps > b.first.peak_gbps) b = {w, key};
  }
  std::string line = t.title + ":";
  bool first = true;
  for (const auto& dir : dirs) {
    const auto& [w, key] = best.at(dir);
    if (w.peak_gbps <= 0) continue;
    line += fmt::format("{} {} {:.2f} GB/s ({} {}, {}{})", first ? "" : ";", dir, w.peak_gbps, std::get<0>(key),
                        std::get<1>(key), format_size(w.peak_bytes),
                        w.pct_of_ceiling >= 0 ? fmt::format(", {:.0f}% of the link", w.pct_of_ceiling) : "");
    first = false;
  }
  fmt::print(out_, "{}{} {}/{} points converged\n", line, first ? "" : ";", converged, points);
}

void summary_reporter::finalize(bool) {
  if (brief_ && !order_.empty()) fmt::print(out_, "\nthe peak of each direction (every curve: the report's peak tables)\n");
  for (const auto& id : order_) brief_ ? print_brief(tables_.at(id)) : print_table(tables_.at(id));
  if (!order_.empty()) fmt::print(out_, "\n");
}

}  // namespace xfer
