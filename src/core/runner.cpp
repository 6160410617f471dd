#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <fmt/format.h>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <xfer/core/timing.hpp>
#include <xfer/core/errors.hpp>
#include <xfer/core/interrupt.hpp>
#include <xfer/core/reporter.hpp>
#include <xfer/core/affinity.hpp>
#include <xfer/core/runner.hpp>

namespace xfer {
namespace {

using clock = std::chrono::steady_clock;

// Smallest repetition count whose batch lasts long enough for the timer.
std::size_t reps_for(double seconds_per_rep, double target_s) {
  if (seconds_per_rep <= 0) return 1 << 16;
  // The tiny shrink keeps 1e-4 / 1e-7 from rounding up to 1001.
  const double k = std::ceil(target_s / seconds_per_rep * (1 - 1e-12));
  return static_cast<std::size_t>(std::clamp(k, 1.0, 1e7));
}

std::string pci_of(const device_info& d) {
  const auto it = d.details.find("pci_bus_id");
  return it == d.details.end() ? std::string() : it->second;
}

// A point's result with what identifies it: the spec and the device.
point_result result_of(const point_spec& p, const device_info& device) {
  point_result r;
  r.spec = p;
  r.device_name = device.name;
  r.device_type = device.type;
  r.device_pci = pci_of(device);
  if (const auto it = device.details.find("emulation"); it != device.details.end()) {
    r.emulation = it->second;
    // Kept where the point runs (ok); a skip or a failure replaces it with its own.
    r.reason = fmt::format("emulated ({}): no data crossed a link; the time is the API's own cost per call", r.emulation);
  }
  return r;
}

}  // namespace

point_result measure(transfer& t, const point_spec& spec, const device_info& device, const measure_options& options,
                     const std::atomic<bool>& stop) {
  point_result r = result_of(spec, device);
  r.timer = t.timer_kind();
  r.note = t.note();
  r.bytes_per_rep = t.bytes_per_rep();
  r.budget_s = options.max_time_s;
  const auto prep0 = clock::now();
  double checking = 0, sampled = 0;  // seconds spent checking samples, and taking them
  try {
    r.first = t.setup_costs();
    r.first.first_transfer_s = t.run(1).wall_seconds;
    // A route that moves no data here (an emulated DMA) has nothing to
    // check: never marked verified, its samples never counted as checked.
    const bool verify = options.verify && t.verifies_data();
    if (verify) {
      t.verify();
      r.verified = true;
    }
    r.spent.prepare_s = seconds_since(prep0);

    // Warm-up, doubling the batch until it has run for warmup_s; its last
    // batch also estimates the time per repetition.
    const auto warm0 = clock::now();
    std::size_t reps = 1;
    double per_rep = 0;
    do {
      const sample s = t.run(reps);
      per_rep = s.seconds / reps;
      if (seconds_since(warm0) < options.warmup_s) reps *= 2;
    } while (seconds_since(warm0) < options.warmup_s && !stop.load());

    r.spent.warmup_s = seconds_since(warm0);
    const double target_s = std::max(options.min_sample_s, options.min_sample_ticks * t.timer_resolution_s());
    r.reps_per_sample = reps_for(per_rep, target_s);

    // The budget covers checking the samples too: left out, checking large
    // host buffers on the CPU after every sample made the H100's default run
    // outrun the gate's bound (b05835c in docs/results/h100/gate/).
    const auto t0 = clock::now();
    while (r.samples_s.size() < options.max_samples) {
      if (stop.load()) throw std::runtime_error("interrupted");
      // Every sample is checked while checking costs no more than its share
      // of the sampling time; past that (a large buffer checked on one CPU
      // core after a fast PCIe copy) only as many as keep it so, so that the
      // budget goes to samples. The first is always checked.
      const bool check = verify && (r.samples_s.empty() || checking <= options.check_share * sampled);
      const auto c0 = clock::now();
      if (check) t.poison_sample();
      const double poisoning = seconds_since(c0);
      const sample s = t.run(r.reps_per_sample);
      sampled += s.wall_seconds;
      if (check) {
        const auto c1 = clock::now();
        t.check_sample();
        ++r.samples_checked;
        checking += poisoning + seconds_since(c1);
      }
      const double k = static_cast<double>(r.reps_per_sample);
      r.samples_s.push_back(s.seconds / k);
      r.wall_samples_s.push_back(s.wall_seconds / k);
      for (const auto& [name, secs] : s.parts) r.part_samples_s[name].push_back(secs / k);
      if (!s.gate_fallback.empty()) r.gate_fallback = s.gate_fallback;

      const std::size_t n = r.samples_s.size();
      r.ci_rel = median_ci_relative(r.samples_s);
      if (n >= options.min_samples && r.ci_rel <= options.target_ci) {
        r.converged = true;
        r.stopped_by = "converged";
        break;
      }
      // Out of budget: go on only while the interval is on course to reach
      // its target within four times the budget (its width shrinks as one
      // over the root of the samples), so time goes to points that converge
      // with a little more, not to ones that never will. Stop once there are
      // a few samples to take a median of, and in any case at four times the
      // budget (huge transfers).
      const double spent = seconds_since(t0);
      if (spent >= options.max_time_s && n >= options.min_samples) {
        const bool on_course = n >= options.min_samples && std::isfinite(r.ci_rel) &&
                               spent * std::pow(r.ci_rel / options.target_ci, 2) <= 4 * options.max_time_s;
        if (!on_course) {
          r.stopped_by = "budget";
          break;
        }
      }
      if (spent >= 4 * options.max_time_s) {
        r.stopped_by = "budget x4";
        break;
      }
    }
    if (r.stopped_by.empty()) r.stopped_by = "max samples";
    r.spent.checking_s = checking;
    r.spent.sampling_s = seconds_since(t0) - checking;
    r.stats = summarize(r.samples_s);
    r.wall_stats = summarize(r.wall_samples_s);
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
    r.stats = summarize(r.samples_s);
    r.wall_stats = summarize(r.wall_samples_s);
  }
  return r;
}

run_budget::run_budget(double total_s, std::size_t points)
    : start_(clock::now()), total_s_(total_s), left_(std::max<std::size_t>(points, 1)) {}

double run_budget::smallest_for(std::size_t points, double warmup_s) {
  return std::ceil(static_cast<double>(points) * (min_point_s + warmup_s));
}

double run_budget::next_point_s() const {
  const double elapsed = seconds_since(start_);
  const double share = (total_s_ - elapsed) / static_cast<double>(std::max<std::size_t>(left_, 1));
  const double overhead = ran_ ? std::max(0.0, (elapsed - sampled_s_) / static_cast<double>(ran_)) : 0.0;
  return std::max(min_point_s, first_pass_share * (share - overhead));
}

double run_budget::left_s() const { return total_s_ - seconds_since(start_); }

void run_budget::point_done(bool ran, double sampling_s) {
  if (left_ > 0) --left_;
  if (!ran) return;
  ++ran_;
  sampled_s_ += std::max(0.0, sampling_s);
}

double watchdog_bound(std::uint64_t bytes, double max_time_s) {
  return 30.0 + 40.0 * max_time_s + static_cast<double>(bytes) / 20e6;
}

namespace {

// The sampling time a point would still need to meet the target, were its
// interval to shrink as one over the root of the samples.
double time_to_converge(const point_result& r, double target_ci) {
  if (!std::isfinite(r.ci_rel) || r.ci_rel <= 0) return std::numeric_limits<double>::infinity();
  const double spent = std::max(0.0, r.spent.sampling_s) + std::max(0.0, r.spent.checking_s);
  return spent * (std::pow(r.ci_rel / target_ci, 2) - 1);
}

// `again`'s samples appended to `into`'s, and what follows from them.
void merge_measurements(point_result& into, const point_result& again, const measure_options& o) {
  const auto append = [](std::vector<double>& to, const std::vector<double>& from) {
    to.insert(to.end(), from.begin(), from.end());
  };
  append(into.samples_s, again.samples_s);
  append(into.wall_samples_s, again.wall_samples_s);
  for (const auto& [name, v] : again.part_samples_s) append(into.part_samples_s[name], v);
  into.samples_checked += again.samples_checked;
  into.verified = into.verified && again.verified;
  into.budget_s += again.budget_s;
  if (into.gate_fallback.empty()) into.gate_fallback = again.gate_fallback;
  const auto add = [](double& to, double from) {
    if (from >= 0) to = std::max(0.0, to) + from;
  };
  add(into.spent.prepare_s, again.spent.prepare_s);
  add(into.spent.warmup_s, again.spent.warmup_s);
  add(into.spent.sampling_s, again.spent.sampling_s);
  add(into.spent.checking_s, again.spent.checking_s);
  add(into.spent.release_s, again.spent.release_s);
  into.stats = summarize(into.samples_s);
  into.wall_stats = summarize(into.wall_samples_s);
  into.ci_rel = median_ci_relative(into.samples_s);
  into.converged = into.samples_s.size() >= o.min_samples && into.ci_rel <= o.target_ci;
  into.stopped_by = into.converged ? "converged (measured again)" : "budget (measured again)";
}

point_result unrun(const point_spec& p, const device_info& device, point_status status, std::string reason) {
  point_result r = result_of(p, device);
  r.status = status;
  r.reason = std::move(reason);
  return r;
}

// Prepares and measures one point; the transfer is gone when it returns.
point_result prepare_and_measure(backend& b, const point_spec& p, const device_info& device,
                                 const measure_options& options, const std::atomic<bool>& stop) {
  try {
    // Placed before prepare(): the host buffers are allocated, pinned and
    // first touched from here, so their pages land on the preferred node.
    const bool on_a_device = device.type != "cpu";
    std::optional<near_device> near;
    if (on_a_device && options.affinity) near.emplace(pci_of(device));
    const auto t0 = clock::now();
    auto t = b.prepare(p);
    const double preparing = seconds_since(t0);
    auto r = measure(*t, p, device, options, stop);
    if (r.spent.prepare_s >= 0) r.spent.prepare_s += preparing;
    const auto t1 = clock::now();
    t.reset();  // unpinning and freeing large buffers takes time of its own
    if (r.spent.prepare_s >= 0) r.spent.release_s = seconds_since(t1);
    if (on_a_device) r.placed = near ? near->where() : placement{false, -1, "", "off (--no-affinity)"};
    return r;
  } catch (const skip_point& e) {
    return unrun(p, device, point_status::skipped, e.what());
  } catch (const std::exception& e) {
    return unrun(p, device, point_status::failed, e.what());
  }
}

// What a watched point's thread hands back.
struct watched_point {
  std::mutex m;
  std::condition_variable done_cv;
  bool done = false;
  point_result result;
};

// How long a stop request waits for a point to notice it before leaving the
// thread behind (measure() checks between samples, so this is plenty).
constexpr double stop_grace_s = 2.0;

// Runs the point on a thread of its own and waits at most `limit_s` for it.
// Returns nullopt when the thread had to be abandoned; `took_s` says how long
// it was waited for.
std::optional<point_result> run_watched(backend& b, const point_spec& p, const device_info& device,
                                        const measure_options& options, const std::atomic<bool>& stop,
                                        double limit_s, double& took_s) {
  auto job = std::make_shared<watched_point>();
  // The thread owns a share of the job, so an abandoned one writes into
  // memory that stays valid; b and stop outlive it (the caller keeps an
  // abandoned backend alive, and the stop flag is static).
  std::thread([job, &b, p, device, options, &stop] {
    block_stop_signals_in_this_thread();
    point_result r = prepare_and_measure(b, p, device, options, stop);
    const std::lock_guard lock(job->m);
    job->result = std::move(r);
    job->done = true;
    job->done_cv.notify_all();
  }).detach();
  const auto t0 = clock::now();
  std::optional<clock::time_point> stopped_at;
  std::unique_lock lock(job->m);
  while (!job->done_cv.wait_for(lock, std::chrono::milliseconds(50), [&] { return job->done; })) {
    took_s = seconds_since(t0);
    if (stop.load() && !stopped_at) stopped_at = clock::now();
    if (took_s >= limit_s || (stopped_at && seconds_since(*stopped_at) >= stop_grace_s)) return std::nullopt;
  }
  took_s = seconds_since(t0);
  return std::move(job->result);
}

}  // namespace

sweep_outcome run_sweep(backend& b, const std::vector<point_spec>& points, const measure_options& options,
                        reporter& out, const std::atomic<bool>& stop, const progress_fn& progress) {
  std::vector<planned_point> planned;
  planned.reserve(points.size());
  for (const auto& p : points) planned.push_back({p, ""});
  return run_sweep(b, planned, options, out, stop, progress);
}

sweep_outcome run_sweep(backend& b, const std::vector<planned_point>& points, const measure_options& options,
                        reporter& out, const std::atomic<bool>& stop, const progress_fn& progress, run_budget* budget,
                        std::vector<unsettled_point>* unsettled) {
  sweep_outcome outcome;
  const auto devices = b.devices();
  std::string abandoned_at;  // the point whose thread is stuck in this backend
  double lent = 0;           // sampling time left unused by earlier points (negative: owed)
  for (std::size_t i = 0; i < points.size(); ++i) {
    if (stop.load()) {
      outcome.interrupted = true;
      break;
    }
    const point_spec& p = points[i].spec;
    if (progress) progress(i, points.size(), p);
    const auto dev = std::find_if(devices.begin(), devices.end(), [&](const device_info& d) { return d.index == p.device; });
    const device_info device = dev != devices.end() ? *dev : device_info{.index = p.device, .name = "?", .type = "?", .details = {}, .unavailable_kinds = {}};

    // The point's budget: the run's share for it, or its own plus what it may
    // borrow (lend_cap_x).
    measure_options point_options = options;
    if (budget && points[i].skip_reason.empty())
      point_options.max_time_s = budget->next_point_s();
    else
      point_options.max_time_s += std::clamp(lent, 0.0, options.lend_cap_x * options.max_time_s);
    point_result r;
    if (!points[i].skip_reason.empty()) {
      r = unrun(p, device, point_status::skipped, points[i].skip_reason);
    } else if (!abandoned_at.empty()) {
      r = unrun(p, device, point_status::skipped,
                fmt::format("not run: {} is still stuck in an earlier point ({})", p.backend, abandoned_at));
    } else if (options.watchdog_s == 0) {
      r = prepare_and_measure(b, p, device, point_options, stop);
    } else {
      const double limit = options.watchdog_s > 0 ? options.watchdog_s : watchdog_bound(p.bytes, point_options.max_time_s);
      double took = 0;
      if (auto watched = run_watched(b, p, device, point_options, stop, limit, took)) {
        r = std::move(*watched);
      } else if (stop.load()) {
        // Interrupted while stuck: what was completed is the result.
        outcome.interrupted = outcome.abandoned = true;
        break;
      } else {
        outcome.abandoned = true;
        abandoned_at = fmt::format("{} {} {} {} B", to_string(p.route), to_string(p.dir), p.host_memory, p.bytes);
        r = unrun(p, device, point_status::failed,
                  fmt::format("no result after {:.1f} s, the watchdog's bound for this point (--watchdog): the "
                              "transfer never returned; its thread is left behind",
                              took));
      }
    }
    // A point cut short by Ctrl-C is not a result: leave it out.
    if (stop.load() && r.status != point_status::ok) {
      outcome.interrupted = true;
      break;
    }
    // What the point left of its own budget is lent on; what it took beyond
    // it (borrowed, or the stretch of a point on course) is paid back first.
    if (r.status == point_status::ok && r.spent.sampling_s >= 0)
      lent += options.max_time_s - (r.spent.sampling_s + r.spent.checking_s);
    if (budget)
      budget->point_done(r.status == point_status::ok && r.spent.sampling_s >= 0,
                         r.spent.sampling_s + std::max(0.0, r.spent.checking_s));
    switch (r.status) {
      case point_status::ok: ++outcome.ok; break;
      case point_status::skipped: ++outcome.skipped; break;
      case point_status::failed: ++outcome.failed; break;
    }
    if (unsettled && r.status == point_status::ok && !r.converged && !outcome.abandoned)
      unsettled->push_back({&b, device, std::move(r)});
    else
      out.report(r);
  }
  if (progress) progress(points.size(), points.size(), point_spec{});
  return outcome;
}

bool revisit(std::vector<unsettled_point>& points, const measure_options& options, run_budget& budget, reporter& out,
             const std::atomic<bool>& stop) {
  std::stable_sort(points.begin(), points.end(), [&](const unsettled_point& a, const unsettled_point& b) {
    return time_to_converge(a.first, options.target_ci) < time_to_converge(b.first, options.target_ci);
  });
  bool abandoned = false;
  for (auto& u : points) {
    const double left = budget.left_s();
    const double need = time_to_converge(u.first, options.target_ci);
    // Another measurement only where the budget can pay for what it needs
    // (its preparation again included, about what the first one took).
    const double again_prep = std::max(0.0, u.first.spent.prepare_s) + std::max(0.0, u.first.spent.release_s);
    if (!abandoned && !stop.load() && std::isfinite(need) && need + again_prep <= left) {
      measure_options o = options;
      o.max_time_s = std::max(run_budget::min_point_s, need);
      const point_spec& p = u.first.spec;
      std::optional<point_result> again;
      if (options.watchdog_s == 0) {
        again = prepare_and_measure(*u.impl, p, u.device, o, stop);
      } else {
        double took = 0;
        again = run_watched(*u.impl, p, u.device, o, stop,
                            options.watchdog_s > 0 ? options.watchdog_s : watchdog_bound(p.bytes, o.max_time_s), took);
        abandoned = !again.has_value();
      }
      if (again && again->status == point_status::ok) merge_measurements(u.first, *again, options);
    }
    out.report(u.first);
  }
  return abandoned;
}

}  // namespace xfer
