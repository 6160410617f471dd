#include "alloc_study.hpp"

#include <chrono>
#include <cmath>
#include <cstring>
#include <fmt/format.h>
#include <fmt/ostream.h>
#include <map>
#include <random>
#include <xfer/core/timing.hpp>
#include <xfer/core/errors.hpp>
#include <xfer/core/size.hpp>
#include <xfer/core/stats.hpp>
#include <xfer/mem/os.hpp>

#include "proc_memory.hpp"
#include "strategies.hpp"

namespace xfer::alloc_study {
namespace {

using clock = std::chrono::steady_clock;

// Writes one byte per page: makes the kernel back every page (what RSS counts)
// without the cost of a full memset.
void touch_pages(void* p, std::size_t n) {
  auto* b = static_cast<volatile unsigned char*>(p);
  for (std::size_t i = 0; i < n; i += 4096) b[i] = 1;
  if (n) b[n - 1] = 1;
}

nlohmann::json summary_json(const std::vector<double>& v) {
  const summary s = summarize(v);
  return {{"min", s.min}, {"median", s.median}, {"p95", s.p95}, {"max", s.max}, {"stddev", s.stddev}, {"count", s.count}};
}

nlohmann::json check_alignment(const strategy& s) {
  auto& r = s.resource();
  const std::size_t want = r.natural_alignment();
  std::size_t checked = 0, misaligned = 0;
  std::vector<std::uint64_t> bad;
  for (auto n : alignment_sizes()) {
    void* p = r.allocate(n, 1);
    ++checked;
    if (reinterpret_cast<std::uintptr_t>(p) % want != 0) {
      ++misaligned;
      if (bad.size() < 10) bad.push_back(n);
    }
    static_cast<unsigned char*>(p)[0] = 1;  // writable at both ends
    static_cast<unsigned char*>(p)[n - 1] = 1;
    r.deallocate(p, n, 1);
  }
  if (s.pool) s.pool->trim();
  return {{"alignment", want}, {"checked", checked}, {"misaligned", misaligned}, {"misaligned_sizes", bad}};
}

nlohmann::json measure_cost(const strategy& s, std::uint64_t n, const options& o, const std::atomic<bool>& stop) {
  auto& r = s.resource();
  std::vector<double> alloc_s, free_s, touch_s;
  const auto t_start = clock::now();
  for (std::size_t i = 0; i < o.runs && !stop.load(); ++i) {
    auto t0 = clock::now();
    void* p = r.allocate(n, 1);
    alloc_s.push_back(seconds_since(t0));
    t0 = clock::now();
    std::memset(p, 0x5a, n);  // first touch: page faults (and zeroing) happen here
    touch_s.push_back(seconds_since(t0));
    t0 = clock::now();
    r.deallocate(p, n, 1);
    free_s.push_back(seconds_since(t0));
    if (i >= 2 && seconds_since(t_start) > o.budget_s) break;
  }
  std::vector<double> both(alloc_s.size());
  for (std::size_t i = 0; i < both.size(); ++i) both[i] = alloc_s[i] + free_s[i];
  nlohmann::json j{{"strategy", s.name},
                   {"bytes", n},
                   {"alloc_free_s", summary_json(both)},
                   {"alloc_s", summary_json(alloc_s)},
                   {"free_s", summary_json(free_s)},
                   {"touch_s", summary_json(touch_s)},
                   {"alloc_samples_s", alloc_s},
                   {"free_samples_s", free_s},
                   {"touch_samples_s", touch_s}};
  // The first allocation pays for pinning; later ones may be served by a cache.
  if (r.props().pinned && !alloc_s.empty())
    j["pin_s_per_gib_first"] = alloc_s.front() / static_cast<double>(n) * double(1ull << 30);
  return j;
}

nlohmann::json fragmentation(const strategy& s, const options& o, const std::vector<workload_step>& steps,
                             const std::atomic<bool>& stop) {
  auto& r = s.resource();
  // Start from an empty cache so the books show this workload alone.
  if (s.pool) {
    s.pool->trim();
    s.pool->reset_peak();
  }
  const mem::pool_stats pool_before = s.pool ? s.pool->stats() : mem::pool_stats{};
  const bool peak_reset = reset_peak_rss();
  const memory_snapshot start = read_memory();
  std::vector<std::pair<void*, std::uint64_t>> live;
  std::uint64_t requested = 0, peak_requested = 0;
  double peak_waste = 0;
  const auto t0 = clock::now();
  std::size_t done = 0;
  for (const auto& st : steps) {
    if (stop.load()) break;
    if (st.bytes && live.size() < o.max_live) {
      void* p = r.allocate(st.bytes, 1);
      touch_pages(p, st.bytes);
      live.emplace_back(p, st.bytes);
      requested += st.bytes;
      peak_requested = std::max(peak_requested, requested);
    } else if (!live.empty()) {
      auto& v = live[st.victim % live.size()];
      r.deallocate(v.first, v.second, 1);
      requested -= v.second;
      v = live.back();
      live.pop_back();
    }
    if (s.pool && (++done % 256 == 0)) peak_waste = std::max(peak_waste, s.pool->stats().rounding_waste_ratio());
  }
  const double seconds = seconds_since(t0);
  const memory_snapshot end = read_memory();
  nlohmann::json j{{"strategy", s.name},
                   {"steps", steps.size()},
                   {"seconds", seconds},
                   {"live_blocks_end", live.size()},
                   {"requested_bytes_end", requested},
                   {"requested_bytes_peak", peak_requested},
                   {"rss_start", start.rss_bytes},
                   {"rss_end", end.rss_bytes},
                   {"peak_rss", end.peak_rss_bytes},
                   {"peak_rss_reset", peak_reset},
                   {"virtual_start", start.virtual_bytes},
                   {"virtual_end", end.virtual_bytes},
                   {"committed_start", start.committed_bytes},
                   {"committed_end", end.committed_bytes}};
  if (s.pool) {
    const auto ps = s.pool->stats();
    j["pool"] = {{"rounding_waste_ratio_end", ps.rounding_waste_ratio()},
                 {"rounding_waste_ratio_peak", std::max(peak_waste, ps.rounding_waste_ratio())},
                 {"total_waste_ratio_end", ps.waste_ratio()},
                 {"cached_bytes_end", ps.cached_bytes},
                 {"reserved_bytes_end", ps.reserved_bytes},
                 {"peak_reserved_bytes", ps.peak_reserved_bytes},
                 {"hits", ps.hits - pool_before.hits},
                 {"misses", ps.misses - pool_before.misses},
                 {"upstream_seconds", ps.upstream_seconds - pool_before.upstream_seconds}};
  }
  for (auto& [p, n] : live) r.deallocate(p, n, 1);
  if (s.pool) s.pool->trim();
  return j;
}

// Run-to-run spread: for each strategy and size, the repeats' medians.
void print_spread(const nlohmann::json& cost, std::ostream& out) {
  std::map<std::pair<std::string, std::uint64_t>, std::vector<double>> medians;
  std::vector<std::pair<std::string, std::uint64_t>> order;
  for (const auto& c : cost) {
    if (!c.contains("alloc_free_s")) continue;
    const auto k = std::make_pair(c["strategy"].get<std::string>(), c["bytes"].get<std::uint64_t>());
    if (!medians.count(k)) order.push_back(k);
    medians[k].push_back(c["alloc_free_s"]["median"]);
  }
  fmt::print(out, "\n== run-to-run spread of the alloc+free median ==\n{:<14} {:>6} {:>12} {:>12} {:>12}\n", "strategy",
             "size", "median us", "min us", "max us");
  for (const auto& k : order) {
    const summary s = summarize(medians[k]);
    fmt::print(out, "{:<14} {:>6} {:>12.2f} {:>12.2f} {:>12.2f}\n", k.first, format_size(k.second), s.median * 1e6,
               s.min * 1e6, s.max * 1e6);
  }
}

constexpr const char* cost_row = "{:<14} {:>6} {:>12} {:>10} {:>12} {:>10} {:>5}\n";

}  // namespace

std::vector<std::uint64_t> alignment_sizes(std::size_t count, std::uint64_t largest) {
  std::vector<std::uint64_t> sizes;
  for (std::size_t i = 0; i < count; ++i) {
    const double x = std::pow(static_cast<double>(largest), static_cast<double>(i) / (count - 1));
    sizes.push_back(std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::llround(x))));
  }
  sizes.back() = largest;
  return sizes;
}

std::vector<workload_step> make_workload(const options& o) {
  std::mt19937_64 rng(o.seed);
  // Sizes log-uniform from 64 B to max_block: many small blocks, some large,
  // the mix that fragments a heap. Slightly more allocations than frees, so
  // the live set grows to max_live and then churns.
  std::uniform_real_distribution<double> log_size(std::log(64.0), std::log(static_cast<double>(o.max_block)));
  std::bernoulli_distribution allocate(0.55);
  std::vector<workload_step> steps(o.iterations);
  for (auto& s : steps) {
    if (allocate(rng))
      s.bytes = static_cast<std::uint64_t>(std::exp(log_size(rng)));
    else
      s.victim = static_cast<std::size_t>(rng() % 1000003);
  }
  return steps;
}

nlohmann::json run(const options& o, const std::vector<backend_entry>& backends, std::ostream& out,
                   const std::atomic<bool>& stop) {
  const auto names = o.strategies.empty() ? default_strategy_names() : o.strategies;
  std::vector<strategy> strategies;
  nlohmann::json doc{{"strategies", nlohmann::json::array()},
                     {"alignment", nlohmann::json::array()},
                     {"cost", nlohmann::json::array()},
                     {"fragmentation", nlohmann::json::array()}};
  for (const auto& name : names) {
    try {
      strategies.push_back(make_strategy(name, backends));
      const auto& s = strategies.back();
      doc["strategies"].push_back({{"name", name},
                                   {"status", "ok"},
                                   {"provider", s.provider},
                                   {"description", s.resource().describe()},
                                   {"pinned", s.resource().props().pinned}});
    } catch (const skip_point& e) {
      doc["strategies"].push_back({{"name", name}, {"status", "skipped"}, {"reason", e.what()}});
      fmt::print(out, "{}: skipped: {}\n", name, e.what());
    }
  }

  fmt::print(out, "\n== alignment: {} buffers, 1 B to 7680x4320x4 B ==\n", alignment_sizes().size());
  for (const auto& s : strategies) {
    auto a = check_alignment(s);
    fmt::print(out, "{:<14} {} of {} aligned to {}\n", s.name, a["checked"].get<std::size_t>() - a["misaligned"].get<std::size_t>(),
               a["checked"].get<std::size_t>(), a["alignment"].get<std::size_t>());
    a["strategy"] = s.name;
    doc["alignment"].push_back(a);
  }

  const auto steps = make_workload(o);
  for (std::size_t rep = 0; rep < o.repeats && !stop.load(); ++rep) {
    fmt::print(out, "\n== cost, repeat {} of {} (medians over up to {} runs) ==\n", rep + 1, o.repeats, o.runs);
    fmt::print(out, cost_row, "strategy", "size", "alloc+free us", "spread", "touch us", "GB/s", "n");
    for (const auto& s : strategies) {
      for (auto n : o.sizes) {
        if (stop.load()) break;
        try {
          auto c = measure_cost(s, n, o, stop);
          c["repeat"] = rep;
          const double med = c["alloc_free_s"]["median"], p95 = c["alloc_free_s"]["p95"], mn = c["alloc_free_s"]["min"];
          const double touch = c["touch_s"]["median"];
          fmt::print(out, cost_row, s.name, format_size(n), fmt::format("{:.2f}", med * 1e6),
                     fmt::format("{:.2f}-{:.2f}", mn * 1e6, p95 * 1e6), fmt::format("{:.1f}", touch * 1e6),
                     fmt::format("{:.2f}", touch > 0 ? n / touch / 1e9 : 0.0), c["alloc_free_s"]["count"].get<std::size_t>());
          doc["cost"].push_back(std::move(c));
        } catch (const std::bad_alloc& e) {
          doc["cost"].push_back({{"strategy", s.name}, {"bytes", n}, {"repeat", rep}, {"status", "failed"}, {"reason", e.what()}});
          fmt::print(out, "{:<14} {:>6} failed: {}\n", s.name, format_size(n), e.what());
        }
      }
    }
    fmt::print(out, "\n== fragmentation, repeat {} of {}: {} steps, up to {} live blocks of 64 B..{} ==\n", rep + 1,
               o.repeats, o.iterations, o.max_live, format_size(o.max_block));
    fmt::print(out, "{:<14} {:>9} {:>12} {:>12} {:>12} {:>12} {:>9} {:>9}\n", "strategy", "seconds", "requested",
               "rss end", "peak rss", "address sp.", "rounding", "+idle");
    for (const auto& s : strategies) {
      if (stop.load()) break;
      try {
        auto f = fragmentation(s, o, steps, stop);
        f["repeat"] = rep;
        const auto pct = [&](const char* key) {
          return f.contains("pool") ? fmt::format("{:.1f}%", 100 * f["pool"][key].get<double>()) : std::string("-");
        };
        fmt::print(out, "{:<14} {:>9.3f} {:>12} {:>12} {:>12} {:>12} {:>9} {:>9}\n", s.name, f["seconds"].get<double>(),
                   format_capacity(f["requested_bytes_end"]), format_capacity(f["rss_end"]),
                   format_capacity(f["peak_rss"]), format_capacity(f["virtual_end"]),
                   pct("rounding_waste_ratio_peak"), pct("total_waste_ratio_end"));
        doc["fragmentation"].push_back(std::move(f));
      } catch (const std::bad_alloc& e) {
        doc["fragmentation"].push_back({{"strategy", s.name}, {"repeat", rep}, {"status", "failed"}, {"reason", e.what()}});
        fmt::print(out, "{:<14} failed: {}\n", s.name, e.what());
      }
    }
  }
  if (o.repeats > 1) print_spread(doc["cost"], out);
  doc["interrupted"] = stop.load();
  return doc;
}

bool any_failed(const nlohmann::json& doc) {
  for (const char* section : {"cost", "fragmentation"})
    if (doc.contains(section))
      for (const auto& entry : doc[section])
        if (entry.value("status", "") == "failed") return true;
  return false;
}

}  // namespace xfer::alloc_study
