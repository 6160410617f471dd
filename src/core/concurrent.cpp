#include <algorithm>
#include <barrier>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <fmt/format.h>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <tuple>
#include <xfer/core/affinity.hpp>
#include <xfer/core/concurrent.hpp>
#include <xfer/core/errors.hpp>
#include <xfer/core/interrupt.hpp>
#include <xfer/core/reporter.hpp>
#include <xfer/core/stats.hpp>
#include <xfer/core/timing.hpp>

namespace xfer {
namespace {

using clock = std::chrono::steady_clock;

std::string pci_of(const device_info& d) {
  const auto it = d.details.find("pci_bus_id");
  return it == d.details.end() ? std::string() : it->second;
}

device_info find_device(const std::vector<device_info>& devices, int index) {
  for (const auto& d : devices)
    if (d.index == index) return d;
  return device_info{.index = index, .name = "?", .type = "?", .details = {}, .unavailable_kinds = {}};
}

point_result result_of(const point_spec& p, const device_info& device) {
  point_result r;
  r.spec = p;
  r.device_name = device.name;
  r.device_type = device.type;
  r.device_pci = pci_of(device);
  return r;
}

// One device's part of a group. Its thread writes everything here; the
// round's completion (on whichever thread arrives last) reads the round's
// fields, which the barrier orders after the writes.
struct device_slot {
  point_spec spec;
  device_info device;
  point_result result;
  std::uint64_t bytes_per_batch = 0;
  // This round: when the batch ran (only valid when ran is set).
  clock::time_point start, end;
  double seconds = 0;  // the batch's own time by its timer
  bool ran = false;
};

struct group_state;

struct round_end {
  group_state* g;
  void operator()() noexcept;
};

struct group_state {
  std::vector<device_slot> slots;
  measure_options options;
  const std::atomic<bool>* stop = nullptr;
  std::mutex prepare_mutex;  // preparation and warm-up run one device at a time
  std::optional<std::barrier<round_end>> sync;
  std::uint64_t phase = 0;  // even: a round starts; odd: it ends
  bool done = false;        // read by the threads after a barrier only
  std::string stopped_by;
  bool converged = false;
  clock::time_point t0;  // sampling began
  std::vector<double> windows_s, rates_sum_gbps;
  std::uint64_t round_bytes = 0;
  double ci_rel = std::numeric_limits<double>::infinity();
  // The main thread waits on this for the threads to finish.
  std::mutex m;
  std::condition_variable cv;
  std::size_t finished = 0;

  void close_round();
};

void round_end::operator()() noexcept {
  group_state& s = *g;
  if (s.phase++ % 2 == 0) {
    // A round starts.
    if (s.windows_s.empty()) s.t0 = clock::now();
    if (s.stop->load()) {
      s.done = true;
      s.stopped_by = "interrupted";
    }
    return;
  }
  s.close_round();
}

void group_state::close_round() {
  auto first = clock::time_point::max(), last = clock::time_point::min();
  std::uint64_t bytes = 0;
  double rates = 0;
  bool all_ran = true;
  for (auto& d : slots) {
    if (!d.ran) {
      all_ran = false;
      continue;
    }
    first = std::min(first, d.start);
    last = std::max(last, d.end);
    bytes += d.bytes_per_batch;
    if (d.seconds > 0) rates += static_cast<double>(d.bytes_per_batch) / d.seconds / 1e9;
    d.ran = false;
  }
  // A device dropped out (failed): the aggregate of the rest is not the
  // group's, so the rounds end here.
  if (!all_ran) {
    done = true;
    stopped_by = "a device failed";
    return;
  }
  windows_s.push_back(std::chrono::duration<double>(last - first).count());
  rates_sum_gbps.push_back(rates);
  round_bytes = bytes;
  const std::size_t n = windows_s.size();
  ci_rel = median_ci_relative(windows_s);
  const double spent = seconds_since(t0);
  if (n >= options.min_samples && ci_rel <= options.target_ci) {
    converged = true;
    stopped_by = "converged";
  } else if (n >= options.max_samples) {
    stopped_by = "max samples";
  } else if (spent >= 4 * options.max_time_s) {
    stopped_by = "budget x4";
  } else if (spent >= options.max_time_s && n >= options.min_samples) {
    // As measure(): go on only while the interval is on course to meet its
    // target within four times the budget.
    const bool on_course =
        std::isfinite(ci_rel) && spent * std::pow(ci_rel / options.target_ci, 2) <= 4 * options.max_time_s;
    if (!on_course) stopped_by = "budget";
  }
  if (!stopped_by.empty()) done = true;
}

std::size_t reps_for(double seconds_per_rep, double target_s) {
  if (seconds_per_rep <= 0) return 1 << 16;
  const double k = std::ceil(target_s / seconds_per_rep * (1 - 1e-12));
  return static_cast<std::size_t>(std::clamp(k, 1.0, 1e7));
}

// One device's thread: prepare, warm up (one device at a time), then the
// rounds with the others.
void drive(const std::shared_ptr<group_state>& g, backend& b, std::size_t i) {
  block_stop_signals_in_this_thread();
  device_slot& me = g->slots[i];
  point_result& r = me.result;
  const measure_options& o = g->options;
  const bool on_a_device = me.device.type != "cpu";
  std::optional<near_device> near;
  if (on_a_device && o.affinity) near.emplace(pci_of(me.device));
  if (on_a_device) r.placed = near ? near->where() : placement{false, -1, "", "off (--no-affinity)"};

  std::unique_ptr<transfer> t;
  double checking = 0, sampled = 0;
  try {
    {
      const std::lock_guard lock(g->prepare_mutex);
      const auto prep0 = clock::now();
      t = b.prepare(me.spec);
      r.timer = t->timer_kind();
      r.bytes_per_rep = t->bytes_per_rep();
      r.budget_s = o.max_time_s;
      r.first = t->setup_costs();
      r.first.first_transfer_s = t->run(1).wall_seconds;
      if (o.verify) {
        t->verify();
        r.verified = true;
      }
      r.spent.prepare_s = seconds_since(prep0);
      const auto warm0 = clock::now();
      std::size_t reps = 1;
      double per_rep = 0;
      do {
        const sample s = t->run(reps);
        per_rep = s.seconds / static_cast<double>(reps);
        if (seconds_since(warm0) < o.warmup_s) reps *= 2;
      } while (seconds_since(warm0) < o.warmup_s && !g->stop->load());
      r.spent.warmup_s = seconds_since(warm0);
      const double target_s = std::max({o.min_sample_s, o.min_sample_ticks * t->timer_resolution_s(),
                                        concurrent_min_sample_s});
      r.reps_per_sample = reps_for(per_rep, target_s);
      me.bytes_per_batch = r.bytes_per_rep * r.reps_per_sample;
    }
    const double k = static_cast<double>(r.reps_per_sample);
    const auto t0 = clock::now();
    for (;;) {
      const bool check = o.verify && (r.samples_s.empty() || checking <= o.check_share * sampled);
      const auto c0 = clock::now();
      if (check) t->poison_sample();
      const double poisoning = seconds_since(c0);
      g->sync->arrive_and_wait();  // the round starts together
      if (g->done) break;
      me.start = clock::now();
      const sample s = t->run(r.reps_per_sample);
      me.end = clock::now();
      me.seconds = s.seconds;
      me.ran = true;
      sampled += s.wall_seconds;
      r.samples_s.push_back(s.seconds / k);
      r.wall_samples_s.push_back(s.wall_seconds / k);
      for (const auto& [name, secs] : s.parts) r.part_samples_s[name].push_back(secs / k);
      if (!s.gate_fallback.empty()) r.gate_fallback = s.gate_fallback;
      g->sync->arrive_and_wait();  // ... and ends when the slowest is done
      if (check) {
        const auto c1 = clock::now();
        t->check_sample();
        ++r.samples_checked;
        checking += poisoning + seconds_since(c1);
      }
      if (g->done) break;
    }
    r.spent.checking_s = checking;
    r.spent.sampling_s = seconds_since(t0) - checking;
    r.status = point_status::ok;
  } catch (const verification_error& e) {
    r.status = point_status::failed;
    r.reason = std::string("verification failed: ") + e.what();
  } catch (const skip_point& e) {
    r.status = point_status::skipped;
    r.reason = e.what();
  } catch (const std::exception& e) {
    r.status = point_status::failed;
    r.reason = e.what();
  }
  if (r.status != point_status::ok) {
    // Leave the rounds so the others are not kept waiting for this device:
    // arriving and dropping counts for the phase it is in and every later
    // one. A thread that never arrived drops from the first.
    me.ran = false;
    g->sync->arrive_and_drop();
  }
  r.stats = summarize(r.samples_s);
  r.wall_stats = summarize(r.wall_samples_s);
  const auto rel0 = clock::now();
  t.reset();
  if (r.spent.prepare_s >= 0) r.spent.release_s = seconds_since(rel0);
  near.reset();
  const std::lock_guard lock(g->m);
  ++g->finished;
  g->cv.notify_all();
}

std::string device_type_of(const std::vector<device_slot>& slots) {
  std::string type;
  for (const auto& s : slots) {
    if (type.empty()) type = s.device.type;
    else if (type != s.device.type) return "mixed";
  }
  return type;
}

point_result aggregate_spec(const std::vector<device_slot>& slots) {
  point_result a;
  a.spec = slots.front().spec;
  a.spec.device = -1;
  a.device_name = fmt::format("{} device{} at once", slots.size(), slots.size() == 1 ? "" : "s");
  a.device_type = device_type_of(slots);
  point_result::concurrency c;
  for (const auto& s : slots) c.devices.push_back(s.spec.device);
  c.aggregate = true;
  a.together = c;
  return a;
}

}  // namespace

std::vector<point_result> measure_together(backend& b, const std::vector<point_spec>& points,
                                           const measure_options& options, const std::atomic<bool>& stop,
                                           bool& abandoned) {
  abandoned = false;
  if (points.empty()) return {};
  auto g = std::make_shared<group_state>();
  g->options = options;
  g->stop = &stop;
  const auto devices = b.devices();
  std::vector<int> indices;
  for (const auto& p : points) {
    device_slot s;
    s.spec = p;
    s.device = find_device(devices, p.device);
    s.result = result_of(p, s.device);
    g->slots.push_back(std::move(s));
    indices.push_back(p.device);
  }
  for (auto& s : g->slots) s.result.together = point_result::concurrency{indices, false, 0};
  g->sync.emplace(static_cast<std::ptrdiff_t>(points.size()), round_end{g.get()});

  // The threads share g (and b, which the caller keeps alive when a group is
  // abandoned), so one left behind writes into memory that stays valid.
  for (std::size_t i = 0; i < points.size(); ++i) std::thread([g, &b, i] { drive(g, b, i); }).detach();

  double limit = 0;
  for (const auto& p : points) limit += watchdog_bound(p.bytes, options.max_time_s);
  if (options.watchdog_s > 0) limit = options.watchdog_s;
  const auto t0 = clock::now();
  {
    std::unique_lock lock(g->m);
    while (!g->cv.wait_for(lock, std::chrono::milliseconds(50), [&] { return g->finished == points.size(); })) {
      if (options.watchdog_s != 0 && seconds_since(t0) >= limit) {
        abandoned = true;
        break;
      }
    }
  }
  point_result agg = aggregate_spec(g->slots);
  if (abandoned) {
    std::vector<point_result> out;
    for (const auto& s : g->slots) {
      point_result r = result_of(s.spec, s.device);
      r.together = point_result::concurrency{indices, false, 0};
      r.status = point_status::failed;
      r.reason = fmt::format("no result after {:.1f} s, the watchdog's bound for this group of {} devices "
                             "(--watchdog): a transfer never returned; its thread is left behind",
                             seconds_since(t0), points.size());
      out.push_back(std::move(r));
    }
    agg.status = point_status::failed;
    agg.reason = out.front().reason;
    out.push_back(std::move(agg));
    return out;
  }

  // Stopped by a signal mid-group: not a result (run_together leaves it out, as run_sweep does a point).
  if (g->stopped_by == "interrupted")
    for (auto& s : g->slots)
      if (s.result.status == point_status::ok) {
        s.result.status = point_status::failed;
        s.result.reason = "interrupted";
      }
  std::vector<point_result> out;
  std::string skipped, failed;
  bool verified = true;
  std::size_t checked = std::numeric_limits<std::size_t>::max();
  for (auto& s : g->slots) {
    point_result& r = s.result;
    if (r.status == point_status::ok) {
      r.converged = g->converged;
      r.stopped_by = g->stopped_by;
      r.ci_rel = median_ci_relative(r.samples_s);
      // Stopped before any round (interrupted): nothing was measured together.
      if (r.samples_s.empty()) {
        r.status = point_status::failed;
        r.reason = g->stopped_by.empty() ? "no round ran" : g->stopped_by;
      }
    }
    if (r.status == point_status::failed && failed.empty())
      failed = fmt::format("device {} failed: {}", s.spec.device, r.reason);
    if (r.status == point_status::skipped && skipped.empty())
      skipped = fmt::format("device {} cannot run it: {}", s.spec.device, r.reason);
    verified = verified && r.verified;
    checked = std::min(checked, r.samples_checked);
    out.push_back(r);
  }
  if (!failed.empty()) {
    agg.status = point_status::failed;
    agg.reason = failed;
  } else if (!skipped.empty()) {
    agg.status = point_status::skipped;
    agg.reason = skipped;
  } else {
    agg.status = point_status::ok;
    agg.timer = clock_kind::wall;
    agg.bytes_per_rep = g->round_bytes;
    agg.reps_per_sample = 1;
    agg.samples_s = g->windows_s;
    agg.wall_samples_s = g->windows_s;
    agg.stats = summarize(agg.samples_s);
    agg.wall_stats = agg.stats;
    agg.ci_rel = g->ci_rel;
    agg.converged = g->converged;
    agg.stopped_by = g->stopped_by;
    agg.budget_s = options.max_time_s;
    agg.verified = verified;
    agg.samples_checked = checked;
    agg.together->sum_of_devices_gbps = summarize(g->rates_sum_gbps).median;
    double windows = 0;
    for (double w : g->windows_s) windows += w;
    agg.spent.sampling_s = windows;
  }
  out.push_back(std::move(agg));
  return out;
}

std::vector<std::vector<planned_point>> group_across_devices(const std::vector<planned_point>& points) {
  using key = std::tuple<route_kind, direction, std::string, std::uint64_t, int>;
  std::map<key, std::size_t> at;
  std::vector<std::vector<planned_point>> groups;
  for (const auto& p : points) {
    const key k{p.spec.route, p.spec.dir, p.spec.host_memory, p.spec.bytes, p.spec.peer};
    const auto [it, fresh] = at.try_emplace(k, groups.size());
    if (fresh) groups.emplace_back();
    groups[it->second].push_back(p);
  }
  return groups;
}

sweep_outcome run_together(backend& b, const std::vector<planned_point>& points, const measure_options& options,
                           reporter& out, const std::atomic<bool>& stop, const progress_fn& progress) {
  sweep_outcome outcome;
  const auto groups = group_across_devices(points);
  const auto devices = b.devices();
  std::size_t done = 0;
  const auto count = [&](const point_result& r) {
    switch (r.status) {
      case point_status::ok: ++outcome.ok; break;
      case point_status::skipped: ++outcome.skipped; break;
      case point_status::failed: ++outcome.failed; break;
    }
  };
  for (const auto& group : groups) {
    if (stop.load()) {
      outcome.interrupted = true;
      break;
    }
    if (progress) progress(done, points.size(), group.front().spec);
    std::vector<point_result> results;
    const auto planned_skip =
        std::find_if(group.begin(), group.end(), [](const planned_point& p) { return !p.skip_reason.empty(); });
    if (outcome.abandoned) {
      for (const auto& p : group) {
        point_result r = result_of(p.spec, find_device(devices, p.spec.device));
        r.status = point_status::skipped;
        r.reason = fmt::format("not run: {} is still stuck in an earlier group", p.spec.backend);
        results.push_back(std::move(r));
      }
    } else if (planned_skip != group.end()) {
      // The group cannot run as a whole: every device and the aggregate say why.
      std::vector<int> indices;
      for (const auto& p : group) indices.push_back(p.spec.device);
      std::vector<device_slot> slots;
      for (const auto& p : group) {
        point_result r = result_of(p.spec, find_device(devices, p.spec.device));
        r.together = point_result::concurrency{indices, false, 0};
        r.status = point_status::skipped;
        r.reason = p.skip_reason.empty()
                       ? fmt::format("device {} cannot run it: {}", planned_skip->spec.device, planned_skip->skip_reason)
                       : p.skip_reason;
        results.push_back(std::move(r));
        device_slot s;
        s.spec = p.spec;
        s.device = find_device(devices, p.spec.device);
        slots.push_back(std::move(s));
      }
      point_result agg = aggregate_spec(slots);
      agg.status = point_status::skipped;
      agg.reason = fmt::format("device {} cannot run it: {}", planned_skip->spec.device, planned_skip->skip_reason);
      results.push_back(std::move(agg));
    } else {
      std::vector<point_spec> specs;
      for (const auto& p : group) specs.push_back(p.spec);
      bool abandoned = false;
      results = measure_together(b, specs, options, stop, abandoned);
      outcome.abandoned = outcome.abandoned || abandoned;
    }
    // A group cut short by Ctrl-C is not a result: leave it out.
    const bool cut = stop.load() && std::any_of(results.begin(), results.end(), [](const point_result& r) {
                       return r.status != point_status::ok;
                     });
    if (cut) {
      outcome.interrupted = true;
      break;
    }
    for (const auto& r : results) {
      count(r);
      out.report(r);
    }
    done += group.size();
  }
  if (progress) progress(points.size(), points.size(), point_spec{});
  return outcome;
}

}  // namespace xfer
