#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <optional>
#include <fmt/format.h>
#include <xfer/core/reporter.hpp>
#include <xfer/core/runner.hpp>
#include <xfer/core/timing.hpp>

namespace xfer {
namespace {

using clock = std::chrono::steady_clock;

}  // namespace

run_budget::run_budget(double total_s, std::size_t points, clock_fn now)
    : now_(std::move(now)),
      start_(now_()),
      total_s_(total_s),
      points_(std::max<std::size_t>(points, 1)),
      left_(points_) {}

double run_budget::smallest_for(std::size_t points, double warmup_s) {
  return std::ceil(static_cast<double>(points) * (min_point_s + warmup_s + point_overhead_s));
}

double run_budget::elapsed_s() const { return std::chrono::duration<double>(now_() - start_).count(); }

double run_budget::next_point_s() const {
  const double elapsed = elapsed_s();
  const double share = (total_s_ - elapsed) / static_cast<double>(std::max<std::size_t>(left_, 1));
  const double overhead = ran_ ? std::max(0.0, (elapsed - sampled_s_) / static_cast<double>(ran_)) : 0.0;
  return std::max(min_point_s, first_pass_share * (share - overhead));
}

double run_budget::left_s() const { return total_s_ - elapsed_s(); }

void run_budget::point_done(bool ran, double sampling_s, double again_s) {
  if (left_ > 0) --left_;
  again_s_ += std::max(0.0, again_s);
  if (!ran) return;
  ++ran_;
  sampled_s_ += std::max(0.0, sampling_s);
}

void run_budget::revisit_starts(double again_s) {
  revisiting_ = true;
  again_s_ = std::max(0.0, again_s);
  revisit_start_s_ = elapsed_s();
  again_done_s_ = 0;
}

void run_budget::again_done(double again_s) {
  again_s_ = std::max(0.0, again_s_ - std::max(0.0, again_s));
  again_done_s_ += std::max(0.0, again_s);
}

double run_budget::again_ratio() const {
  if (!revisiting_ || again_done_s_ <= 0) return 1.0;
  return std::clamp((elapsed_s() - revisit_start_s_) / again_done_s_, 1.0, 10.0);
}

double run_budget::expected_left_s() const {
  const double elapsed = elapsed_s();
  const double budget_left = std::max(0.0, total_s_ - elapsed);
  if (revisiting_) return std::min(budget_left, again_s_ * again_ratio());
  const std::size_t done = points_ - left_;
  // Before any point: the budget, or the points' least cost where that is more.
  if (done == 0 || ran_ == 0)
    return std::max(budget_left, static_cast<double>(left_) * (point_overhead_s + min_point_s));
  const double per_point = elapsed / static_cast<double>(done);
  const double first_left = per_point * static_cast<double>(left_);
  const double again = again_s_ * static_cast<double>(points_) / static_cast<double>(done);
  const double from_points = first_left + std::min(again, std::max(0.0, budget_left - first_left));
  // The first few points (the smallest transfers) say little of the rest: until a twentieth of the points is
  // done the budget weighs in, as much as the points have not yet shown.
  const double shown = std::min(1.0, static_cast<double>(done) / (0.05 * static_cast<double>(points_)));
  return shown * from_points + (1 - shown) * std::max(budget_left, from_points);
}

namespace {

// The sampling time a point would still need to meet the target, were its
// interval to shrink as one over the root of the samples.
double time_to_converge(const point_result& r, double target_ci) {
  if (!std::isfinite(r.ci_rel) || r.ci_rel <= 0) return std::numeric_limits<double>::infinity();
  const double spent = std::max(0.0, r.spent.sampling_s) + std::max(0.0, r.spent.checking_s);
  return spent * (std::pow(r.ci_rel / target_ci, 2) - 1);
}

// What measuring a point again would cost: the sampling it still needs and
// its preparation and release again (about what the first one took);
// infinite where its interval says nothing.
double again_cost(const point_result& r, double target_ci) {
  return time_to_converge(r, target_ci) + std::max(0.0, r.spent.prepare_s) + std::max(0.0, r.spent.release_s);
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

// Prepares and measures one point alone; the transfer is gone when it returns.
point_result prepare_and_measure(backend& b, const point_spec& p, const device_info& device,
                                 const measure_options& options, const std::atomic<bool>& stop) {
  return run_point(b, p, device, options, stop, [&stop](point_sampler& s) { s.sample_alone(stop); });
}

// The job a watched point's thread runs: it holds copies of what it reads, as
// an abandoned thread outlives this call; b and stop outlive it (the caller
// keeps an abandoned backend alive, and the stop flag is static).
std::function<point_result()> point_job(backend& b, const point_spec& p, const device_info& device,
                                        const measure_options& options, const std::atomic<bool>& stop) {
  return [&b, p, device, options, &stop] { return prepare_and_measure(b, p, device, options, stop); };
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
  watched_points watched(options, stop);
  double lent = 0;  // sampling time left unused by earlier points (negative: owed)
  for (std::size_t i = 0; i < points.size(); ++i) {
    if (stop.load()) {
      outcome.interrupted = true;
      break;
    }
    const point_spec& p = points[i].spec;
    if (progress) progress(i, points.size(), p);
    const device_info device = find_device(devices, p.device);

    // The point's budget: the run's share for it, or its own plus what it may
    // borrow (lend_cap_x).
    measure_options point_options = options;
    if (budget && points[i].skip_reason.empty())
      point_options.max_time_s = budget->next_point_s();
    else
      point_options.max_time_s += std::clamp(lent, 0.0, options.lend_cap_x * options.max_time_s);
    std::optional<point_result> ran =
        !points[i].skip_reason.empty()
            ? unrun(p, device, point_status::skipped, points[i].skip_reason)
            : watched.run(p, device, watchdog_limit(point_options, {p}), point_job(b, p, device, point_options, stop));
    outcome.abandoned = watched.abandoned();
    if (!ran) {
      outcome.interrupted = true;
      break;
    }
    point_result& r = *ran;
    // A point cut short by Ctrl-C is not a result: leave it out.
    if (stop.load() && r.status != point_status::ok) {
      outcome.interrupted = true;
      break;
    }
    // What the point left of its own budget is lent on; what it took beyond
    // it (borrowed, or the stretch of a point on course) is paid back first.
    if (r.status == point_status::ok && r.spent.sampling_s >= 0)
      lent += options.max_time_s - (r.spent.sampling_s + r.spent.checking_s);
    const bool held = unsettled && r.status == point_status::ok && !r.converged && !outcome.abandoned;
    if (budget) {
      const double again = held ? again_cost(r, options.target_ci) : 0.0;
      budget->point_done(r.status == point_status::ok && r.spent.sampling_s >= 0,
                         r.spent.sampling_s + std::max(0.0, r.spent.checking_s), std::isfinite(again) ? again : 0.0);
    }
    outcome.count(r.status);
    if (held)
      unsettled->push_back({&b, device, std::move(r), watchdog_limit(point_options, {p})});
    else
      out.report(r);
  }
  if (progress) progress(points.size(), points.size(), point_spec{});
  return outcome;
}

revisit_outcome revisit(std::vector<unsettled_point>& points, const measure_options& options, run_budget& budget,
                        reporter& out, const std::atomic<bool>& stop, const progress_fn& progress) {
  std::stable_sort(points.begin(), points.end(), [&](const unsettled_point& a, const unsettled_point& b) {
    return time_to_converge(a.first, options.target_ci) < time_to_converge(b.first, options.target_ci);
  });
  // What the budget can pay for, cheapest first, is what this pass will take.
  double payable = 0;
  for (const auto& u : points) {
    const double cost = again_cost(u.first, options.target_ci);
    if (!std::isfinite(cost) || payable + cost > std::max(0.0, budget.left_s())) break;
    payable += cost;
  }
  budget.revisit_starts(payable);
  revisit_outcome outcome;
  watched_points watched(options, stop);
  for (std::size_t i = 0; i < points.size(); ++i) {
    auto& u = points[i];
    if (progress) progress(i, points.size(), u.first.spec);
    const double left = budget.left_s();
    const double need = time_to_converge(u.first, options.target_ci);
    // Another measurement only where the budget can pay for what it needs
    // (its preparation again included, about what the first one took), as
    // far as this pass's measurements have kept to their estimates.
    const double again_prep = std::max(0.0, u.first.spent.prepare_s) + std::max(0.0, u.first.spent.release_s);
    if (!watched.abandoned() && !stop.load() && std::isfinite(need) &&
        (need + again_prep) * budget.again_ratio() <= left) {
      measure_options o = options;
      o.max_time_s = std::max(run_budget::min_point_s, need);
      const point_spec& p = u.first.spec;
      // The first pass's bound, plus only the extra sampling time asked for: measuring for longer is no
      // reason to wait longer for a hang.
      const double limit = u.limit_s > 0 ? u.limit_s + std::max(0.0, o.max_time_s - std::max(0.0, u.first.budget_s))
                                         : watchdog_limit(o, {p});
      const auto again = watched.run(p, u.device, limit, point_job(*u.impl, p, u.device, o, stop));
      if (again && again->status == point_status::ok) {
        merge_measurements(u.first, *again, options);
      } else if (again && again->status == point_status::failed && !stop.load()) {
        // As strict as the first pass: a second measurement that failed verification, threw or hung fails the
        // point. The first measurement's figures stay beside the reason.
        u.first.status = point_status::failed;
        u.first.reason = fmt::format("measured again: {} (the first measurement, kept in this point, had passed)",
                                     again->reason);
        u.first.verified = u.first.verified && again->verified;
        ++outcome.failed;
      }
    }
    if (std::isfinite(need)) budget.again_done(need + again_prep);
    out.report(u.first);
  }
  if (progress) progress(points.size(), points.size(), point_spec{});
  outcome.abandoned = watched.abandoned();
  return outcome;
}

}  // namespace xfer
