#include <xfer/trace/bill.hpp>

#include <algorithm>
#include <bit>
#include <fmt/format.h>
#include <map>
#include <tuple>

namespace xfer::trace {

namespace {

// Copies this small or smaller, made many times, are what a block copy gathers.
constexpr std::uint64_t small_copy_bytes = std::uint64_t{1} << 20;
constexpr std::size_t many_copies = 16;

std::string bytes_text(std::uint64_t b) {
  if (b >= (1ull << 30) && b % (1ull << 30) == 0) return fmt::format("{} GiB", b >> 30);
  if (b >= (1ull << 20) && b % (1ull << 20) == 0) return fmt::format("{} MiB", b >> 20);
  if (b >= (1ull << 10) && b % (1ull << 10) == 0) return fmt::format("{} KiB", b >> 10);
  return fmt::format("{} B", b);
}

// The group's transfers, one by one, on a curve: none when any is off it.
what_if priced(const bill& b, const group& g, const machine_curves& m, what_if w) {
  double sum = 0;
  for (const auto i : g.members) {
    const transfer& t = b.transfers[i];
    const auto s = m.seconds(w.route, w.host_memory, t.direction, t.bytes);
    if (!s) {
      const curve* c = m.find(w.route, w.host_memory, t.direction);
      w.not_priced = !c ? fmt::format("the machine's curves have no {} {} curve", t.direction,
                                      curve{"", w.route, w.host_memory, t.direction, 0, {}}.label())
                        : fmt::format("{} B is outside the sizes measured on {} ({} to {})", t.bytes, c->label(),
                                      bytes_text(c->points.front().first), bytes_text(c->points.back().first));
      return w;
    }
    sum += *s;
  }
  w.predicted_s = sum;
  w.saving_s = g.cost_s - sum;
  return w;
}

// All of the group's copies as one call of blocks (the copier's choice of
// way, block size the group's size class): the saving if the program
// gathers them, which is only where they are made together.
what_if priced_as_blocks(const group& g, const machine_curves& m, what_if w) {
  const std::uint64_t total = g.bytes;
  const auto s = m.seconds(w.route, w.host_memory, g.direction, total, g.size_class);
  if (!s) {
    w.not_priced = m.find(w.route, w.host_memory, g.direction, g.size_class)
                       ? fmt::format("{} in all is outside the totals measured in blocks of {}", bytes_text(total),
                                     bytes_text(g.size_class))
                       : fmt::format("the machine's curves have no block copies of {} {} (give --machine a `xferbench "
                                     "sweep --blocks` file)",
                                     bytes_text(g.size_class), g.host_memory);
    return w;
  }
  w.predicted_s = *s;
  w.saving_s = g.cost_s - *s;
  return w;
}

std::vector<what_if> what_ifs_for(const bill& b, const group& g, const machine_curves& m) {
  std::vector<what_if> out;
  if (g.op != "memcpy" || (g.direction != "h2d" && g.direction != "d2h")) return out;
  if (g.host_memory == "pageable") {
    out.push_back(priced(b, g, m,
                         {"pin", "pin the host buffer (allocate it page-locked, or register it once)",
                          "tensor.pin_memory() in PyTorch; cudaHostAlloc or cudaHostRegister in CUDA",
                          g.async ? "copy-async" : "copy-sync", "pinned", {}, {}, {}}));
    out.push_back(priced(b, g, m,
                         {"staged", "copy through libxfer's staged copier where the buffer cannot be pinned",
                          "xferbench.Copier in Python; xfer::mem::staged_copier in C++", "staged", "pageable", {}, {},
                          {}}));
  }
  if ((g.host_memory == "pageable" || g.host_memory == "pinned") && g.count >= many_copies &&
      g.size_class <= small_copy_bytes)
    out.push_back(priced_as_blocks(g, m,
                                   {"blocks",
                                    fmt::format("gather the {} copies of {} into one call of blocks", g.count,
                                                bytes_text(g.size_class)),
                                    "xferbench.copy_blocks in Python; cudaMemcpyBatchAsync in CUDA", "blocks-auto",
                                    g.host_memory, {}, {}, {}}));
  return out;
}

}  // namespace

std::uint64_t size_class_of(std::uint64_t bytes) { return bytes ? std::bit_floor(bytes) : 0; }

bill make_bill(const std::vector<process_capture>& processes, const machine_curves& machine, double wall_s) {
  bill b;
  b.wall_s = wall_s;
  for (const auto& p : processes) b.transfers.insert(b.transfers.end(), p.transfers.begin(), p.transfers.end());

  using key = std::tuple<std::string, std::string, std::string, std::uint64_t, std::string, bool, unsigned, unsigned>;
  std::map<key, std::size_t> index;
  for (std::size_t i = 0; i < b.transfers.size(); ++i) {
    const transfer& t = b.transfers[i];
    const key k{t.op, t.direction, t.host_memory, size_class_of(t.bytes), t.call, t.async, t.device, t.stream};
    auto [at, fresh] = index.try_emplace(k, b.groups.size());
    if (fresh) {
      group g;
      g.op = t.op, g.direction = t.direction, g.host_memory = t.host_memory, g.call = t.call;
      g.async = t.async, g.device = t.device, g.stream = t.stream, g.size_class = size_class_of(t.bytes);
      b.groups.push_back(std::move(g));
    }
    group& g = b.groups[at->second];
    ++g.count;
    g.bytes += t.bytes;
    g.device_s += t.device_s();
    g.host_s += t.host_s.value_or(0);
    g.cost_s += t.cost_s();
    g.overlap_s += t.overlap_s;
    g.members.push_back(i);
    b.cost_s += t.cost_s();
    b.bytes += t.bytes;
  }
  std::stable_sort(b.groups.begin(), b.groups.end(), [](const group& x, const group& y) { return x.cost_s > y.cost_s; });
  for (std::size_t i = 0; i < b.groups.size(); ++i) {
    group& g = b.groups[i];
    g.id = static_cast<int>(i);
    g.what_ifs = what_ifs_for(b, g, machine);
    const what_if* best = nullptr;
    for (const auto& w : g.what_ifs)
      if (w.saving_s && *w.saving_s > min_saving_share * g.cost_s && (!best || *w.saving_s > *best->saving_s)) best = &w;
    if (best) b.fixes.push_back({0, g.id, *best, g.cost_s});
  }
  std::stable_sort(b.fixes.begin(), b.fixes.end(),
                   [](const ranked_fix& x, const ranked_fix& y) { return *x.fix.saving_s > *y.fix.saving_s; });
  for (std::size_t i = 0; i < b.fixes.size(); ++i) b.fixes[i].rank = static_cast<int>(i) + 1;
  return b;
}

}  // namespace xfer::trace
