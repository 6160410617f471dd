#include <algorithm>
#include <chrono>
#include <cmath>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <map>
#include <stdexcept>
#include <tuple>
#include <utility>
#include <xfer/core/timing.hpp>
#include <xfer/core/watchdog.hpp>
#include <xfer/core/errors.hpp>
#include <xfer/core/pattern.hpp>
#include <xfer/core/size.hpp>
#include <xfer/core/system_probe.hpp>
#include <xfer/cpu/cpu_study.hpp>
#include <xfer/mem/buffer.hpp>
#include <xfer/mem/error.hpp>
#include <xfer/mem/host_resources.hpp>
#include <xfer/mem/kind_registry.hpp>

namespace xfer::cpu {
namespace {

using clock = std::chrono::steady_clock;

// Thrown between samples when the user interrupts: the point is dropped, not
// reported half-measured.
struct interrupted {};

bool stopping(const std::atomic<bool>* stop) { return stop && stop->load(std::memory_order_relaxed); }

void check_fill(const std::byte* p, std::size_t bytes, unsigned char value, const std::string& what) {
  for (std::size_t i = 0; i < bytes; ++i)
    if (static_cast<unsigned char>(p[i]) != value)
      throw verification_error(fmt::format("{}: byte {} of {} is 0x{:02x}, expected 0x{:02x}", what, i, bytes,
                                           static_cast<unsigned char>(p[i]), value));
}

// The seed for the pattern of a point: different per point, so stale data
// from an earlier point can never pass a check.
std::uint64_t point_seed(std::size_t index) { return 0xC0FFEE00ull + index; }

// Non-zero fill values that change from sample to sample (never time zeros;
// the final check proves the last sample's stores landed).
unsigned char fill_value(std::size_t sample) { return static_cast<unsigned char>(1 + sample % 254); }

class point_runner {
 public:
  point_runner(const study_config& c, kind_slot& kind, thread_team& team, const planned_point& p, std::size_t index,
               const std::atomic<bool>* stop, const beat_fn& beat)
      : config_(c), kind_(kind), team_(team), plan_(p), seed_(point_seed(index)), stop_(stop), beat_(beat) {}

  void run(cpu_point& out) {
    const op o = plan_.operation;
    const std::size_t bytes = plan_.bytes;
    const std::string what = fmt::format("{} {} ({} {}, {} threads)", to_string(o), kind_.info.name,
                                         to_string(plan_.how), format_size(bytes), plan_.threads);

    // The regular array on the other side: touched before anything is timed,
    // so only the kind's first use is on the clock.
    mem::buffer regular;
    if (o != op::fill) {
      regular = mem::buffer(regular_resource_, bytes, regular_resource_.natural_alignment());
      if (o == op::write)
        fill_pattern(regular.data(), bytes, seed_);
      else
        poison(regular.data(), bytes);
    }

    auto t0 = clock::now();
    mem::buffer kind(*kind_.resource, bytes, kind_.resource->natural_alignment());
    out.alloc_s = seconds_since(t0);
    if (o == op::read) {
      // Reading untouched memory reads the shared zero page: time nothing of
      // the kind. Give it data first, and report that cost apart.
      t0 = clock::now();
      fill_pattern(kind.data(), bytes, seed_);
      out.touch_s = seconds_since(t0);
    }

    const op_buffers b{kind.bytes_ptr(), regular.bytes_ptr(), bytes};
    const unsigned char first_value = 0xA5;
    t0 = clock::now();
    run_op(o, plan_.how, b, first_value, team_, 1);
    out.first_s = seconds_since(t0);
    verify(b, first_value, what + ", first run");
    beat_();

    // Size the samples from one untimed run, so a sample outlasts the clock's resolution.
    t0 = clock::now();
    run_op(o, plan_.how, b, first_value, team_, 1);
    const double one = std::max(seconds_since(t0), 1e-9);
    beat_();
    out.reps_per_sample = static_cast<std::size_t>(std::clamp(std::ceil(config_.min_sample_s / one), 1.0, 1e6));

    // Wipe what the first runs wrote, so the final check proves the steady runs moved the data.
    if (o == op::write) poison(kind.data(), bytes);
    if (o == op::read) poison(regular.data(), bytes);

    unsigned char value = first_value;
    out.samples_s.reserve(config_.runs);
    for (std::size_t i = 0; i < config_.runs; ++i) {
      if (stopping(stop_)) throw interrupted{};
      value = fill_value(i);
      t0 = clock::now();
      run_op(o, plan_.how, b, value, team_, out.reps_per_sample);
      out.samples_s.push_back(seconds_since(t0) / static_cast<double>(out.reps_per_sample));
      beat_();  // outside the timed region
    }
    verify(b, value, what + ", steady runs");
    out.verified = true;
  }

 private:
  void verify(const op_buffers& b, unsigned char value, const std::string& what) const {
    switch (plan_.operation) {
      case op::write: check_pattern(b.kind, b.bytes, seed_, what.c_str()); return;
      case op::read: check_pattern(b.regular, b.bytes, seed_, what.c_str()); return;
      case op::fill: check_fill(b.kind, b.bytes, value, what); return;
    }
  }

  const study_config& config_;
  kind_slot& kind_;
  thread_team& team_;
  const planned_point& plan_;
  std::uint64_t seed_;
  const std::atomic<bool>* stop_;
  const beat_fn& beat_;
  mem::pageable_resource regular_resource_;  // the seed's `new double[]`
};

// A team a point's thread was left behind in: its workers may be stuck with
// it, so later points get a fresh one and this one is never destroyed (its
// destructor would join them).
void retire(std::vector<std::unique_ptr<thread_team>>& teams, thread_team* team) {
  for (auto& t : teams)
    if (t.get() == team) keep_until_exit(std::move(t));
  std::erase(teams, nullptr);
}

void fail(cpu_point& p, std::string why) {
  p.status = point_status::failed;
  p.reason = std::move(why);
  p.samples_s.clear();
}

// Memory libxfer makes itself (mem::make_host_kind): a thread stuck in it holds
// nothing another point needs, unlike one stuck inside a device API.
bool plain_memory(const kind_slot& k) {
  const auto* entry = mem::find_host_kind(k.info.name);
  return entry && entry->maker == mem::kind_maker::plain;
}

cpu_point describe(const planned_point& p, const kind_slot& k) {
  cpu_point out;
  out.kind = k.info.name;
  out.provider = k.info.provider;
  out.operation = p.operation;
  out.how = p.how;
  out.threads = p.threads;
  out.bytes = p.bytes;
  out.impl = std::string(implementation(p.operation, p.how));
  return out;
}

// Skips what cannot run here before allocating anything; empty when it can.
std::string skip_reason(const planned_point& p, const kind_slot& k) {
  if (!k.info.available) return k.info.reason;
  if (p.how == method::ntload && stream_load_isa() == nt_isa::portable)
    return "this CPU has no streaming loads (MOVNTDQA, SSE4.1)";
  if (p.how == method::nontemporal && best_store_isa() == nt_isa::portable)
    return "this CPU has no streaming stores (not x86)";
  const std::uint64_t buffers = p.operation == op::fill ? 1 : 2;
  const std::uint64_t available = available_memory_bytes();
  if (available && p.bytes > available / buffers)
    return fmt::format("needs {} buffers of {} ({} B each); only {} B of memory is available", buffers,
                       format_size(p.bytes), p.bytes, available);
  return {};
}

const cpu_point* find_baseline(const std::vector<cpu_point>& done, const cpu_point& p) {
  for (const auto& d : done)
    if (d.kind == baseline_kind && d.operation == p.operation && d.how == p.how && d.threads == p.threads &&
        d.bytes == p.bytes && d.status == point_status::ok)
      return &d;
  return nullptr;
}

// Whether the steady medians differ by less than either one's 95% CI: then
// which kind is faster in steady state, and so the break-even, is noise.
bool within_noise(const cpu_point& a, const cpu_point& b) {
  const double diff = std::abs(a.stats.median - b.stats.median);
  auto half_width = [](const cpu_point& p) {
    return std::isfinite(p.ci_rel) ? p.ci_rel * p.stats.median : std::abs(p.stats.max - p.stats.min);
  };
  return diff <= std::max(half_width(a), half_width(b));
}

// Median single-thread memcpy read of `bytes` from `r`, verified.
double probe_read_gbps(std::pmr::memory_resource& r, std::size_t alignment, std::uint64_t bytes, std::size_t runs,
                       const std::atomic<bool>* stop) {
  mem::pageable_resource regular_resource;
  mem::buffer src(r, bytes, alignment);
  mem::buffer dst(regular_resource, bytes, regular_resource.natural_alignment());
  fill_pattern(src.data(), bytes, 0x5EED);
  poison(dst.data(), bytes);
  thread_team self(1);
  const op_buffers b{src.bytes_ptr(), dst.bytes_ptr(), bytes};
  run_op(op::read, method::memcpy, b, 0, self, 1);  // first use, not counted
  std::vector<double> t;
  for (std::size_t i = 0; i < std::max<std::size_t>(runs, 1); ++i) {
    if (stopping(stop)) throw interrupted{};
    const auto t0 = clock::now();
    run_op(op::read, method::memcpy, b, 0, self, 1);
    t.push_back(seconds_since(t0));
  }
  check_pattern(dst.data(), bytes, 0x5EED, "write-combining check read");
  return static_cast<double>(bytes) / std::max(summarize(t).median, 1e-12) / 1e9;
}

}  // namespace

double cpu_point::first_use_s() const {
  if (alloc_s < 0 || first_s < 0) return -1;
  return alloc_s + std::max(touch_s, 0.0) + first_s;
}

double cpu_point::gbps() const { return stats.median > 0 ? static_cast<double>(bytes) / stats.median / 1e9 : 0; }

double cpu_point::first_gbps() const { return first_s > 0 ? static_cast<double>(bytes) / first_s / 1e9 : 0; }

std::vector<planned_point> plan_points(const study_config& config, const std::vector<kind_slot>& kinds) {
  std::vector<std::size_t> order(kinds.size());
  for (std::size_t i = 0; i < kinds.size(); ++i) order[i] = i;
  std::stable_partition(order.begin(), order.end(), [&](std::size_t i) { return kinds[i].info.name == baseline_kind; });
  std::vector<planned_point> out;
  for (auto bytes : config.sizes)
    for (op o : config.ops)
      for (method m : config.methods) {
        if (!applies(o, m)) continue;
        for (unsigned t : config.threads)
          for (std::size_t k : order) out.push_back({k, o, m, t, bytes});
      }
  return out;
}

namespace {

// Providers a point was left behind in (with that point), where the kind was
// not plain memory: a thread may be stuck inside their driver.
using stuck_providers = std::map<std::string, std::string>;

// Why a point of `k` is not run because of an earlier one left behind; empty: it runs.
std::string stuck_reason(const stuck_providers& stuck, const kind_slot& k) {
  const auto s = stuck.find(k.info.provider);
  if (s == stuck.end() || plain_memory(k)) return {};  // plain memory a provider hands out is not its driver's
  return still_stuck_reason(s->first, s->second);
}

// Each write-combined kind's probe is a point of its own under the watchdog.
std::vector<wc_report> check_wc(const study_config& config, std::vector<kind_slot>& kinds,
                                const std::atomic<bool>* stop, study_context* watch, const stuck_providers& stuck) {
  std::vector<wc_report> out;
  std::vector<std::string> unavailable;
  for (auto& k : kinds) {
    if (!k.info.available) {
      // Only the name can say a missing kind would have been write-combined.
      if (k.info.name.find("wc") != std::string::npos) unavailable.push_back(k.info.name);
      continue;
    }
    if (!k.info.props.write_combined) continue;
    wc_report r;
    r.kind = k.info.name;
    r.provider = k.info.provider;
    try {
      if (auto why = stuck_reason(stuck, k); !why.empty()) throw std::runtime_error(why);
      auto ran = run_watched_point<std::pair<double, double>>(
          watch, config.wc_probe_bytes, [&config, &k, stop](const beat_fn& beat) {
            mem::pageable_resource regular;
            const double regular_gbps = probe_read_gbps(regular, regular.natural_alignment(), config.wc_probe_bytes,
                                                        config.wc_probe_runs, stop);
            beat();
            return std::pair(regular_gbps, probe_read_gbps(*k.resource, k.resource->natural_alignment(),
                                                           config.wc_probe_bytes, config.wc_probe_runs, stop));
          });
      if (!ran.result && ran.reason.empty()) break;  // a stop request left it: what was checked stands
      if (!ran.result) throw std::runtime_error(ran.reason);
      std::tie(r.regular_read_gbps, r.wc_read_gbps) = *ran.result;
      r.verdict = judge_write_combining(r.regular_read_gbps, r.wc_read_gbps, r.kind);
      r.checked = true;
      r.text = r.verdict.text;
    } catch (const interrupted&) {
      break;  // the caller sees the stop flag; what was checked stands
    } catch (const std::exception& e) {
      r.text = fmt::format("write combining not checked for {}: {}", r.kind, e.what());
    }
    out.push_back(std::move(r));
  }
  if (out.empty() && !unavailable.empty()) {
    wc_report r;
    r.kind = fmt::format("{}", fmt::join(unavailable, ","));
    r.text = fmt::format(
        "write combining not checked: no write-combined memory is available here ({} skipped: see the kinds' reasons)",
        fmt::join(unavailable, ", "));
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace

std::vector<wc_report> check_write_combining(const study_config& config, std::vector<kind_slot>& kinds,
                                             const std::atomic<bool>* stop) {
  return check_wc(config, kinds, stop, nullptr, {});
}

study_result run_study(const study_config& config, std::vector<kind_slot>& kinds, const study_hooks& hooks) {
  study_result result;
  for (const auto& k : kinds) result.kinds.push_back(k.info);
  const auto plan = plan_points(config, kinds);

  std::vector<std::unique_ptr<thread_team>> teams;
  auto team_of = [&](unsigned n) -> thread_team& {
    for (auto& t : teams)
      if (t->size() == n) return *t;
    teams.push_back(std::make_unique<thread_team>(n));
    return *teams.back();
  };

  stuck_providers stuck;

  for (std::size_t i = 0; i < plan.size(); ++i) {
    if (stopping(hooks.stop)) {
      result.interrupted = true;
      break;
    }
    const planned_point& p = plan[i];
    kind_slot& kind = kinds[p.kind_index];
    cpu_point point = describe(p, kind);
    if (hooks.on_progress) hooks.on_progress(i, plan.size(), point);
    std::string why = skip_reason(p, kind);
    if (why.empty()) why = stuck_reason(stuck, kind);
    if (!why.empty()) {
      point.status = point_status::skipped;
      point.reason = std::move(why);
    } else {
      try {
        // The point's thread owns its plan and result; the config, the kind
        // and the team outlive it (a team it was left in is never destroyed).
        thread_team* team = &team_of(p.threads);
        auto ran = run_watched_point<cpu_point>(
            hooks.watch, p.bytes, [&config, &kind, team, p, i, stop = hooks.stop, point](const beat_fn& beat) {
              cpu_point out = point;
              try {
                point_runner(config, kind, *team, p, i, stop, beat).run(out);
              } catch (const std::bad_alloc&) {
                throw;  // skipped, below
              } catch (const std::exception& e) {
                fail(out, e.what());  // what it measured of its first use stays
              }
              return out;
            });
        if (ran.result) {
          point = std::move(*ran.result);
        } else {
          retire(teams, team);
          if (ran.reason.empty()) {  // a stop request left it: the completed points stand
            result.interrupted = true;
            break;
          }
          fail(point, ran.reason);
          if (!plain_memory(kind))
            stuck.emplace(kind.info.provider, fmt::format("{} {} {} threads {} {}", kind.info.name,
                                                          to_string(p.operation), to_string(p.how), p.threads,
                                                          format_size(p.bytes)));
        }
      } catch (const interrupted&) {
        result.interrupted = true;
        break;
      } catch (const std::bad_alloc& e) {
        // The kind exists but cannot give this much (mem::allocation_error says why).
        point = describe(p, kind);
        point.status = point_status::skipped;
        point.reason = e.what();
      } catch (const std::exception& e) {
        fail(point, e.what());
      }
    }
    if (point.status == point_status::ok) {
      point.stats = summarize(point.samples_s);
      point.ci_rel = median_ci_relative(point.samples_s);
      if (point.kind != baseline_kind)
        if (const cpu_point* base = find_baseline(result.points, point)) {
          point.vs_baseline =
              compute_break_even(point.first_use_s(), point.stats.median, base->first_use_s(), base->stats.median);
          point.break_even_within_noise = within_noise(point, *base);
        }
    }
    if (hooks.on_point) hooks.on_point(point);
    result.points.push_back(std::move(point));
  }

  if (!result.interrupted) {
    result.write_combining = check_wc(config, kinds, hooks.stop, hooks.watch, stuck);
    result.interrupted = stopping(hooks.stop);
  }
  return result;
}

}  // namespace xfer::cpu
