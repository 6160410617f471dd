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
#include <xfer/core/sweep.hpp>
#include <xfer/core/watchdog.hpp>
#include <xfer/mem/kinds.hpp>
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

value summary_value(const summary& s) {
  return value::object{{"min", s.min},       {"median", s.median}, {"p95", s.p95},
                       {"max", s.max},       {"stddev", s.stddev}, {"count", s.count}};
}

struct alignment_result {
  std::size_t alignment = 0, checked = 0, misaligned = 0;
  std::vector<std::uint64_t> bad;  // the first few sizes that came back misaligned
};

alignment_result check_alignment(const strategy& s) {
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
  return {want, checked, misaligned, bad};
}

struct cost_result {
  summary alloc_free, touch;
  value fields;
};

cost_result measure_cost(const strategy& s, std::uint64_t n, const options& o, const std::atomic<bool>& stop,
                         const beat_fn& beat) {
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
    beat();
    if (i >= 2 && seconds_since(t_start) > o.budget_s) break;
  }
  std::vector<double> both(alloc_s.size());
  for (std::size_t i = 0; i < both.size(); ++i) both[i] = alloc_s[i] + free_s[i];
  cost_result c{summarize(both), summarize(touch_s), {}};
  c.fields = value::object{{"strategy", s.name},
                           {"bytes", n},
                           {"alloc_free_s", summary_value(c.alloc_free)},
                           {"alloc_s", summary_value(summarize(alloc_s))},
                           {"free_s", summary_value(summarize(free_s))},
                           {"touch_s", summary_value(c.touch)},
                           {"alloc_samples_s", alloc_s},
                           {"free_samples_s", free_s},
                           {"touch_samples_s", touch_s}};
  // The first allocation pays for pinning; later ones may be served by a cache.
  if (r.props().pinned && !alloc_s.empty())
    c.fields["pin_s_per_gib_first"] = alloc_s.front() / static_cast<double>(n) * double(1ull << 30);
  return c;
}

// The fragmentation workload beats (and reads the pool's books) every this
// many steps: a clock read per step would weigh on the time it reports.
constexpr std::size_t beat_steps = 256;

struct fragmentation_result {
  double seconds = 0;
  std::uint64_t requested_end = 0, rss_end = 0, peak_rss = 0, virtual_end = 0;
  double rounding_peak = -1, total_waste_end = -1;  // the pool's; negative without one
  value fields;
};

fragmentation_result fragmentation(const strategy& s, const options& o, const std::vector<workload_step>& steps,
                             const std::atomic<bool>& stop, const beat_fn& beat) {
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
    if (++done % beat_steps == 0) {
      beat();
      if (s.pool) peak_waste = std::max(peak_waste, s.pool->stats().rounding_waste_ratio());
    }
  }
  const double seconds = seconds_since(t0);
  const memory_snapshot end = read_memory();
  fragmentation_result f;
  f.seconds = seconds;
  f.requested_end = requested;
  f.rss_end = end.rss_bytes;
  f.peak_rss = end.peak_rss_bytes;
  f.virtual_end = end.virtual_bytes;
  f.fields = value::object{{"strategy", s.name},
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
    f.rounding_peak = std::max(peak_waste, ps.rounding_waste_ratio());
    f.total_waste_end = ps.waste_ratio();
    f.fields["pool"] = value::object{{"rounding_waste_ratio_end", ps.rounding_waste_ratio()},
                                     {"rounding_waste_ratio_peak", f.rounding_peak},
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
  return f;
}

// Run-to-run spread: for each strategy and size, the repeats' medians.
struct cost_median {
  std::string strategy;
  std::uint64_t bytes = 0;
  double median_s = 0;
};

std::string spread_table(const std::vector<cost_median>& costs) {
  std::map<std::pair<std::string, std::uint64_t>, std::vector<double>> medians;
  std::vector<std::pair<std::string, std::uint64_t>> order;
  for (const auto& c : costs) {
    const auto k = std::make_pair(c.strategy, c.bytes);
    if (!medians.count(k)) order.push_back(k);
    medians[k].push_back(c.median_s);
  }
  std::string out = fmt::format("\n== run-to-run spread of the alloc+free median ==\n{:<14} {:>6} {:>12} {:>12} {:>12}\n",
                                "strategy", "size", "median us", "min us", "max us");
  for (const auto& k : order) {
    const summary s = summarize(medians[k]);
    out += fmt::format("{:<14} {:>6} {:>12.2f} {:>12.2f} {:>12.2f}\n", k.first, format_size(k.second), s.median * 1e6,
                       s.min * 1e6, s.max * 1e6);
  }
  return out;
}

// The points the watchdog left behind. A thread stuck in the library's own
// memory holds nothing another point needs, so the study goes on; one stuck
// with a backend's memory may be inside its driver, so that backend's later
// points are skipped, as a sweep skips a backend left behind.
class stuck_points {
 public:
  // Why `s`'s next point is not run; empty: it runs.
  std::string reason(const strategy& s) const {
    const auto it = by_provider_.find(s.provider);
    return it == by_provider_.end() ? std::string() : still_stuck_reason(s.provider, it->second);
  }
  // A point of `s` was left behind: true where a stop request left it (the
  // run ends with what it completed), false where the watchdog did.
  bool left(const strategy& s, const std::string& what, const std::string& why) {
    any_ = true;
    if (why.empty()) return true;
    if (s.provider != library_provider) by_provider_.emplace(s.provider, fmt::format("{} {}", s.name, what));
    return false;
  }
  bool any() const { return any_; }

 private:
  std::map<std::string, std::string> by_provider_;
  bool any_ = false;
};

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

allocator_study::allocator_study(options o, const std::vector<backend_entry>& backends)
    : options_(std::move(o)), backends_(backends) {
  if (options_.strategies.empty()) options_.strategies = default_strategy_names();
  // Unknown names are usage errors before anything runs; known ones this
  // machine lacks are reported as skipped when the study runs.
  for (const auto& name : options_.strategies) {
    try {
      make_strategy(name, backends_);
    } catch (const skip_point&) {
    }
  }
}

study_info allocator_study::info() const {
  const auto& o = options_;
  return {.schema = schema,
          .sections = {"strategies", "alignment", "cost", "fragmentation"},
          .config = value::object{{"sizes", o.sizes},
                                  {"runs", o.runs},
                                  {"repeats", o.repeats},
                                  {"iterations", o.iterations},
                                  {"max_live", o.max_live},
                                  {"max_block", o.max_block},
                                  {"seed", o.seed}},
          .fields = {}};
}

void allocator_study::run(study_context& ctx) {
  const auto& o = options_;
  const auto entry = [&](const char* section, value fields, point_status status = point_status::ok,
                         std::string text = {}) {
    ctx.report(record{.section = section, .status = status, .fields = std::move(fields), .text = std::move(text)});
  };
  // The cost and fragmentation points run on watched threads that read the
  // strategies: where one is left behind (stuck), they are never destroyed.
  auto strategies = std::make_unique<std::vector<strategy>>();
  for (const auto& name : o.strategies) {
    try {
      strategies->push_back(make_strategy(name, backends_));
      const auto& s = strategies->back();
      entry("strategies", value::object{{"name", name},
                                        {"status", "ok"},
                                        {"provider", s.provider},
                                        {"description", s.resource().describe()},
                                        {"pinned", s.resource().props().pinned}});
    } catch (const skip_point& e) {
      entry("strategies", value::object{{"name", name}, {"status", "skipped"}, {"reason", e.what()}},
            point_status::skipped, fmt::format("{}: skipped: {}", name, e.what()));
    }
  }

  ctx.say(fmt::format("\n== alignment: {} buffers, 1 B to 7680x4320x4 B ==", alignment_sizes().size()));
  for (const auto& s : *strategies) {
    const auto a = check_alignment(s);
    entry("alignment",
          value::object{{"alignment", a.alignment}, {"checked", a.checked}, {"misaligned", a.misaligned},
                        {"misaligned_sizes", a.bad}, {"strategy", s.name}},
          point_status::ok,  // a misaligned buffer is a finding about the strategy, not a failed measurement
          fmt::format("{:<14} {} of {} aligned to {}", s.name, a.checked - a.misaligned, a.checked, a.alignment));
  }

  const auto steps = std::make_shared<const std::vector<workload_step>>(make_workload(o));
  stuck_points stuck;
  std::vector<cost_median> medians;
  const std::size_t items = o.repeats * strategies->size() * (o.sizes.size() + 1);
  std::size_t done = 0;
  const auto& stop = ctx.stop();
  for (std::size_t rep = 0; rep < o.repeats && !ctx.stopped(); ++rep) {
    ctx.say(fmt::format("\n== cost, repeat {} of {} (medians over up to {} runs) ==\n", rep + 1, o.repeats, o.runs) +
            fmt::format(cost_row, "strategy", "size", "alloc+free us", "spread", "touch us", "GB/s", "n"));
    for (const auto& s : *strategies) {
      for (auto n : o.sizes) {
        if (ctx.stopped()) break;
        ctx.progress(done++, items, fmt::format("cost {} {}", s.name, format_size(n)));
        const auto not_measured = [&](point_status status, const std::string& why) {
          entry("cost",
                value::object{{"strategy", s.name}, {"bytes", n}, {"repeat", rep}, {"status", to_string(status)},
                              {"reason", why}},
                status, fmt::format("{:<14} {:>6} {}: {}", s.name, format_size(n), to_string(status), why));
        };
        if (const auto why = stuck.reason(s); !why.empty()) {
          not_measured(point_status::skipped, why);
          continue;
        }
        try {
          auto ran = ctx.watched<cost_result>(
              n, [&s, n, &o, &stop](const beat_fn& beat) { return measure_cost(s, n, o, stop, beat); });
          if (!ran.result) {
            if (stuck.left(s, fmt::format("cost {}", format_size(n)), ran.reason)) break;
            not_measured(point_status::failed, ran.reason);
            continue;
          }
          auto& c = *ran.result;
          c.fields["repeat"] = rep;
          const auto& af = c.alloc_free;
          const double touch = c.touch.median;
          medians.push_back({s.name, n, af.median});
          entry("cost", std::move(c.fields), point_status::ok,
                fmt::format(cost_row, s.name, format_size(n), fmt::format("{:.2f}", af.median * 1e6),
                            fmt::format("{:.2f}-{:.2f}", af.min * 1e6, af.p95 * 1e6), fmt::format("{:.1f}", touch * 1e6),
                            fmt::format("{:.2f}", touch > 0 ? n / touch / 1e9 : 0.0), af.count));
        } catch (const std::bad_alloc& e) {
          not_measured(point_status::failed, e.what());
        }
      }
    }
    ctx.say(fmt::format("\n== fragmentation, repeat {} of {}: {} steps, up to {} live blocks of 64 B..{} ==\n", rep + 1,
                        o.repeats, o.iterations, o.max_live, format_size(o.max_block)) +
            fmt::format("{:<14} {:>9} {:>12} {:>12} {:>12} {:>12} {:>9} {:>9}", "strategy", "seconds", "requested",
                        "rss end", "peak rss", "address sp.", "rounding", "+idle"));
    for (const auto& s : *strategies) {
      if (ctx.stopped()) break;
      ctx.progress(done++, items, fmt::format("fragmentation {}", s.name));
      const auto not_measured = [&](point_status status, const std::string& why) {
        entry("fragmentation",
              value::object{{"strategy", s.name}, {"repeat", rep}, {"status", to_string(status)}, {"reason", why}},
              status, fmt::format("{:<14} {}: {}", s.name, to_string(status), why));
      };
      if (const auto why = stuck.reason(s); !why.empty()) {
        not_measured(point_status::skipped, why);
        continue;
      }
      try {
        auto ran = ctx.watched<fragmentation_result>(beat_steps * o.max_block, [&s, &o, steps, &stop](const beat_fn& beat) {
          return fragmentation(s, o, *steps, stop, beat);
        });
        if (!ran.result) {
          if (stuck.left(s, "fragmentation", ran.reason)) break;
          not_measured(point_status::failed, ran.reason);
          continue;
        }
        auto& f = *ran.result;
        f.fields["repeat"] = rep;
        const auto pct = [](double ratio) { return ratio < 0 ? std::string("-") : fmt::format("{:.1f}%", 100 * ratio); };
        entry("fragmentation", std::move(f.fields), point_status::ok,
              fmt::format("{:<14} {:>9.3f} {:>12} {:>12} {:>12} {:>12} {:>9} {:>9}", s.name, f.seconds,
                          format_capacity(f.requested_end), format_capacity(f.rss_end), format_capacity(f.peak_rss),
                          format_capacity(f.virtual_end), pct(f.rounding_peak), pct(f.total_waste_end)));
      } catch (const std::bad_alloc& e) {
        not_measured(point_status::failed, e.what());
      }
    }
  }
  if (o.repeats > 1) ctx.say(spread_table(medians));
  if (stuck.any()) keep_until_exit(std::move(strategies));  // a point's thread is still inside one of them
}

options options::quick() {
  options o;
  o.sizes = {4096, 1 << 20};
  o.runs = 5;
  o.repeats = 1;
  o.iterations = 2000;
  return o;
}

void options::check(std::uint64_t memory_bytes) const {
  if (runs == 0 || runs > 1000000) throw usage_error(fmt::format("--runs {} is out of range 1..1000000", runs));
  if (repeats == 0 || repeats > 100) throw usage_error(fmt::format("--repeat {} is out of range 1..100", repeats));
  if (iterations == 0 || iterations > 100000000)
    throw usage_error(fmt::format("--iterations {} is out of range 1..1e8", iterations));
  if (max_live == 0 || max_live > 1000000) throw usage_error(fmt::format("--max-live {} is out of range 1..1e6", max_live));
  if (max_block < 64) throw usage_error("--max-block must be at least 64 bytes");
  for (auto s : sizes)
    if (memory_bytes && s > memory_bytes / 2)
      throw usage_error(fmt::format("size {} is more than half of this machine's memory", format_size(s)));
  // Divided, not multiplied: 2^63 x 2 wraps to 0 and slipped past this check.
  if (memory_bytes && max_block > memory_bytes / 2 / max_live)
    throw usage_error(fmt::format("--max-block {} x --max-live {} is more than half of this machine's memory ({})",
                                  format_size(max_block), max_live, format_capacity(memory_bytes)));
}

std::vector<std::string> respell_strategies(const std::vector<std::string>& given, std::vector<std::string>& notes) {
  std::vector<std::string> out;
  for (const auto& name : given) {
    const bool pooled = name.rfind("pool:", 0) == 0;
    const std::string kind = mem::canonical_kind_name(pooled ? name.substr(5) : name);
    const std::string spelled = pooled ? "pool:" + kind : kind;
    if (spelled != name) notes.push_back(fmt::format("strategy '{}' is spelled '{}' now", name, spelled));
    out.push_back(spelled);
  }
  return without_repeats(out);
}

}  // namespace xfer::alloc_study
