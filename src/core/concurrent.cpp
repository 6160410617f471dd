#include <algorithm>
#include <barrier>
#include <chrono>
#include <condition_variable>
#include <fmt/format.h>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <tuple>
#include <xfer/core/concurrent.hpp>
#include <xfer/core/interrupt.hpp>
#include <xfer/core/reporter.hpp>
#include <xfer/core/stats.hpp>
#include <xfer/core/timing.hpp>

namespace xfer {
namespace {

using clock = std::chrono::steady_clock;

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
  ci_rel = median_ci_relative(windows_s);
  // The rounds' windows stop by the rule a point's samples stop by.
  const stop_reason why = stop_rule(windows_s.size(), ci_rel, seconds_since(t0), options);
  converged = why == stop_reason::converged;
  stopped_by = to_string(why);
  if (!stopped_by.empty()) done = true;
}

// One device's thread: the engine's point (prepared and warmed up one device
// at a time), sampled in rounds with the others.
void drive(const std::shared_ptr<group_state>& g, backend& b, std::size_t i) {
  block_stop_signals_in_this_thread();
  device_slot& me = g->slots[i];
  const auto rounds = [&](point_sampler& s) {
    me.bytes_per_batch = s.result().bytes_per_rep * s.result().reps_per_sample;
    for (;;) {
      s.arm();
      g->sync->arrive_and_wait();  // the round starts together
      if (g->done) break;
      me.start = clock::now();
      const sample batch = s.batch();
      me.end = clock::now();
      me.seconds = batch.seconds;
      me.ran = true;
      s.record(batch);
      g->sync->arrive_and_wait();  // ... and ends when the slowest is done
      s.check();
      if (g->done) break;
    }
  };
  // Leave the rounds so the others are not kept waiting for this device:
  // arriving and dropping counts for the phase it is in and every later one.
  // A thread that never arrived drops from the first.
  const auto leave = [&] {
    me.ran = false;
    g->sync->arrive_and_drop();
  };
  me.result = run_point(b, me.spec, me.device, g->options, *g->stop, rounds, concurrent_min_sample_s,
                        &g->prepare_mutex, leave);
  const std::lock_guard lock(g->m);
  ++g->finished;
  g->cv.notify_all();
}

// Starts a thread per device and waits for all of them. The threads share g
// (and b, which the caller keeps alive when a group is abandoned), so one
// left behind writes into memory that stays valid.
void run_group(const std::shared_ptr<group_state>& g, backend& b) {
  for (std::size_t i = 0; i < g->slots.size(); ++i) std::thread([g, &b, i] { drive(g, b, i); }).detach();
  std::unique_lock lock(g->m);
  g->cv.wait(lock, [&] { return g->finished == g->slots.size(); });
}

std::string device_type_of(const std::vector<point_result>& devices) {
  std::string type;
  for (const auto& r : devices) {
    if (type.empty()) type = r.device_type;
    else if (type != r.device_type) return "mixed";
  }
  return type;
}

// The aggregate's identity, from its devices' results: their point on device
// -1, which devices, and what they all say about how it ran (an emulated
// device's label, the route's note).
point_result aggregate_of(const std::vector<point_result>& devices) {
  point_result a;
  a.spec = devices.front().spec;
  a.spec.device = -1;
  a.device_name = fmt::format("{} device{} at once", devices.size(), devices.size() == 1 ? "" : "s");
  a.device_type = device_type_of(devices);
  point_result::concurrency c;
  for (const auto& r : devices) c.devices.push_back(r.spec.device);
  c.aggregate = true;
  a.together = c;
  // One emulated device makes the aggregate no link's figure either.
  for (const auto& r : devices)
    if (!r.emulation.empty()) {
      label_emulation(a, r.emulation);
      break;
    }
  const bool one_note = std::all_of(devices.begin(), devices.end(), [&](const point_result& r) {
    return r.note == devices.front().note;
  });
  if (one_note) a.note = devices.front().note;
  return a;
}

// Every device's result and the aggregate of a group that ran to its end.
std::vector<point_result> assemble(group_state& g, const measure_options& options) {
  // Stopped by a signal mid-group: not a result (run_together leaves it out, as run_sweep does a point).
  if (g.stopped_by == "interrupted")
    for (auto& s : g.slots)
      if (s.result.status == point_status::ok) {
        s.result.status = point_status::failed;
        s.result.reason = "interrupted";
      }
  std::vector<point_result> out;
  std::string skipped, failed;
  bool verified = true;
  std::size_t checked = std::numeric_limits<std::size_t>::max();
  for (auto& s : g.slots) {
    point_result& r = s.result;
    if (r.status == point_status::ok) {
      r.converged = g.converged;
      r.stopped_by = g.stopped_by;
      r.ci_rel = median_ci_relative(r.samples_s);
      // Stopped before any round (interrupted): nothing was measured together.
      if (r.samples_s.empty()) {
        r.status = point_status::failed;
        r.reason = g.stopped_by.empty() ? "no round ran" : g.stopped_by;
      }
    }
    if (r.status == point_status::failed && failed.empty())
      failed = fmt::format("device {} failed: {}", s.spec.device, r.reason);
    if (r.status == point_status::skipped && skipped.empty())
      skipped = fmt::format("device {} cannot run it: {}", s.spec.device, r.reason);
    // A device whose route moves no checkable data (verifies_data) was never
    // verified, and neither is the aggregate it is part of.
    verified = verified && r.verified;
    checked = std::min(checked, r.samples_checked);
    out.push_back(r);
  }
  point_result agg = aggregate_of(out);
  if (!failed.empty()) {
    agg.status = point_status::failed;
    agg.reason = failed;
  } else if (!skipped.empty()) {
    agg.status = point_status::skipped;
    agg.reason = skipped;
  } else {
    agg.status = point_status::ok;
    agg.timer = clock_kind::wall;
    agg.bytes_per_rep = g.round_bytes;
    agg.reps_per_sample = 1;
    agg.samples_s = g.windows_s;
    agg.wall_samples_s = g.windows_s;
    agg.stats = summarize(agg.samples_s);
    agg.wall_stats = agg.stats;
    agg.ci_rel = g.ci_rel;
    agg.converged = g.converged;
    agg.stopped_by = g.stopped_by;
    agg.budget_s = options.max_time_s;
    agg.verified = verified;
    agg.samples_checked = checked;
    agg.together->sum_of_devices_gbps = summarize(g.rates_sum_gbps).median;
    double windows = 0;
    for (double w : g.windows_s) windows += w;
    agg.spent.sampling_s = windows;
  }
  out.push_back(std::move(agg));
  return out;
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
    g->slots.push_back(std::move(s));
    indices.push_back(p.device);
  }
  g->sync.emplace(static_cast<std::ptrdiff_t>(points.size()), round_end{g.get()});

  // --watchdog 0 lifts the bound, not the thread: a stop request must still
  // end the run within the grace while a device's transfer hangs (waiting on
  // the group here never returned, and SIGTERM only printed "stopping...").
  const double limit = options.watchdog_s == 0 ? std::numeric_limits<double>::infinity()
                                               : watchdog_limit(options, points);
  const watch_end end = watch([g, &b] { run_group(g, b); }, limit, stop);
  abandoned = !end.finished;
  std::vector<point_result> out;
  if (!abandoned) {
    out = assemble(*g, options);
  } else {
    const std::string why = end.stopped ? "interrupted; a transfer never returned and its thread is left behind"
                                        : watchdog_reason(end.took_s, points.size());
    for (const auto& s : g->slots) out.push_back(unrun(s.spec, s.device, point_status::failed, why));
    out.push_back(aggregate_of(out));
    out.back().status = point_status::failed;
    out.back().reason = why;
  }
  for (std::size_t i = 0; i < points.size(); ++i) out[i].together = point_result::concurrency{indices, false, 0};
  return out;
}

namespace {

// A group reported skipped without running: each device with its reason,
// then the aggregate with the first device's (the shape of a measured group).
std::vector<point_result> skipped_group(const std::vector<planned_point>& group, const std::vector<device_info>& devices,
                                        const std::function<std::string(const planned_point&)>& reason) {
  std::vector<int> indices;
  for (const auto& p : group) indices.push_back(p.spec.device);
  std::vector<point_result> results;
  for (const auto& p : group) {
    point_result r = unrun(p.spec, find_device(devices, p.spec.device), point_status::skipped, reason(p));
    r.together = point_result::concurrency{indices, false, 0};
    results.push_back(std::move(r));
  }
  point_result agg = aggregate_of(results);
  agg.status = point_status::skipped;
  agg.reason = results.front().reason;
  results.push_back(std::move(agg));
  return results;
}

}  // namespace

std::vector<std::vector<planned_point>> group_across_devices(const std::vector<planned_point>& points) {
  // A block point's block size tells it from the same array at another (sweep --blocks).
  using key = std::tuple<route_kind, direction, std::string, std::uint64_t, int, std::uint64_t>;
  std::map<key, std::size_t> at;
  std::vector<std::vector<planned_point>> groups;
  for (const auto& p : points) {
    const key k{p.spec.route, p.spec.dir, p.spec.host_memory, p.spec.bytes, p.spec.peer, p.spec.block_bytes};
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
      results = skipped_group(group, devices, [&](const planned_point& p) {
        return fmt::format("not run: {} is still stuck in an earlier group", p.spec.backend);
      });
    } else if (planned_skip != group.end()) {
      // The group cannot run as a whole: every device and the aggregate say why.
      const std::string why =
          fmt::format("device {} cannot run it: {}", planned_skip->spec.device, planned_skip->skip_reason);
      results = skipped_group(group, devices, [&](const planned_point& p) {
        return p.skip_reason.empty() ? why : p.skip_reason;
      });
      results.back().reason = why;
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
      outcome.count(r.status);
      out.report(r);
    }
    done += group.size();
  }
  if (progress) progress(points.size(), points.size(), point_spec{});
  return outcome;
}

}  // namespace xfer
