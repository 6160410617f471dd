#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <optional>
#include <xfer/core/affinity.hpp>
#include <xfer/core/errors.hpp>
#include <xfer/core/sampling.hpp>
#include <xfer/core/stats.hpp>
#include <xfer/core/timing.hpp>

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

}  // namespace

const char* to_string(stop_reason s) {
  switch (s) {
    case stop_reason::none: return "";
    case stop_reason::converged: return "converged";
    case stop_reason::budget: return "budget";
    case stop_reason::budget_x4: return "budget x4";
    case stop_reason::max_samples: return "max samples";
  }
  return "";
}

stop_reason stop_rule(std::size_t n, double ci_rel, double spent_s, const measure_options& o) {
  if (n >= o.min_samples && ci_rel <= o.target_ci) return stop_reason::converged;
  // Stop once there are a few samples to take a median of.
  if (spent_s >= o.max_time_s && n >= std::max(o.min_samples, o.samples_floor)) {
    const bool on_course = std::isfinite(ci_rel) && spent_s * std::pow(ci_rel / o.target_ci, 2) <= 4 * o.max_time_s;
    if (!on_course) return stop_reason::budget;
  }
  if (spent_s >= 4 * o.max_time_s && n >= o.samples_floor) return stop_reason::budget_x4;
  if (n >= o.max_samples) return stop_reason::max_samples;
  return stop_reason::none;
}

std::string pci_of(const device_info& d) {
  const auto it = d.details.find("pci_bus_id");
  return it == d.details.end() ? std::string() : it->second;
}

device_info find_device(const std::vector<device_info>& devices, int index) {
  for (const auto& d : devices)
    if (d.index == index) return d;
  return device_info{.index = index, .name = "?", .type = "?", .details = {}, .unavailable_kinds = {}};
}

void label_emulation(point_result& r, const std::string& emulation) {
  r.emulation = emulation;
  // Kept where the point runs (ok); a skip or a failure replaces it with its own.
  r.reason = fmt::format("emulated ({}): no data crossed a link; the time is the API's own cost per call", emulation);
}

point_result result_of(const point_spec& p, const device_info& device) {
  point_result r;
  r.spec = p;
  r.device_name = device.name;
  r.device_type = device.type;
  r.device_pci = pci_of(device);
  if (const auto it = device.details.find("emulation"); it != device.details.end()) label_emulation(r, it->second);
  return r;
}

point_result unrun(const point_spec& p, const device_info& device, point_status status, std::string reason) {
  point_result r = result_of(p, device);
  r.status = status;
  r.reason = std::move(reason);
  return r;
}

void record_exception(point_result& r) {
  try {
    throw;
  } catch (const verification_error& e) {
    r.status = point_status::failed;
    r.reason = std::string("verification failed: ") + e.what();
    // The first check passed (verified was set then); a later one did not: the point's data is not verified.
    r.verified = false;
  } catch (const skip_point& e) {
    r.status = point_status::skipped;
    r.reason = e.what();
  } catch (const std::exception& e) {
    r.status = point_status::failed;
    r.reason = e.what();
  }
}

point_sampler::point_sampler(const point_spec& p, const device_info& device, const measure_options& o,
                             double min_batch_s)
    : r_(result_of(p, device)), o_(o), min_batch_s_(min_batch_s) {}

void point_sampler::attach(transfer& t) {
  t_ = &t;
  r_.timer = t.timer_kind();
  r_.note = t.note();
  r_.settings = t.settings_used();
  r_.bytes_per_rep = t.bytes_per_rep();
  r_.budget_s = o_.max_time_s;
}

void point_sampler::prepare() {
  const auto prep0 = clock::now();
  r_.first = t_->setup_costs();
  r_.first.first_transfer_s = t_->run(1).wall_seconds;
  // A route that moves no data here (an emulated DMA) has nothing to check:
  // never marked verified, its samples never counted as checked.
  verify_ = o_.verify && t_->verifies_data();
  if (verify_) {
    t_->verify();
    r_.verified = true;
  }
  r_.spent.prepare_s = seconds_since(prep0);
}

void point_sampler::warm_up(const std::atomic<bool>& stop) {
  // Doubling the batch until it has run for warmup_s; its last batch also
  // estimates the time per repetition.
  const auto warm0 = clock::now();
  std::size_t reps = 1;
  double per_rep = 0;
  do {
    const sample s = t_->run(reps);
    per_rep = s.seconds / static_cast<double>(reps);
    if (seconds_since(warm0) < o_.warmup_s) reps *= 2;
  } while (seconds_since(warm0) < o_.warmup_s && !stop.load());
  r_.spent.warmup_s = seconds_since(warm0);
  const double target_s = std::max({o_.min_sample_s, o_.min_sample_ticks * t_->timer_resolution_s(), min_batch_s_});
  r_.reps_per_sample = reps_for(per_rep, target_s);
  t0_ = clock::now();
}

void point_sampler::arm() {
  // Past its share of the sampling time (a large buffer checked on one CPU
  // core after a fast PCIe copy) only as many samples are checked as keep
  // checking within it, so that the budget goes to samples.
  armed_ = verify_ && (r_.samples_s.empty() || checking_ <= o_.check_share * sampled_);
  const auto c0 = clock::now();
  if (armed_) t_->poison_sample();
  poisoning_ = seconds_since(c0);
}

sample point_sampler::batch() { return t_->run(r_.reps_per_sample); }

void point_sampler::record(const sample& s) {
  sampled_ += s.wall_seconds;
  const double k = static_cast<double>(r_.reps_per_sample);
  r_.samples_s.push_back(s.seconds / k);
  r_.wall_samples_s.push_back(s.wall_seconds / k);
  for (const auto& [name, secs] : s.parts) r_.part_samples_s[name].push_back(secs / k);
  if (!s.gate_fallback.empty()) r_.gate_fallback = s.gate_fallback;
}

void point_sampler::check() {
  last_checked_ = armed_;
  if (!armed_) return;
  armed_ = false;
  const auto c1 = clock::now();
  t_->check_sample();
  ++r_.samples_checked;
  checking_ += poisoning_ + seconds_since(c1);
}

void point_sampler::take_sample() {
  arm();
  record(batch());
  check();
}

void point_sampler::sample_alone(const std::atomic<bool>& stop) {
  // The budget covers checking the samples too: left out, checking large
  // host buffers on the CPU after every sample made a GPU machine's default
  // run outrun the gate's bound (docs/decisions/0005-default-run.md).
  while (r_.samples_s.size() < o_.max_samples) {
    if (stop.load()) throw std::runtime_error("interrupted");
    take_sample();
    r_.ci_rel = median_ci_relative(r_.samples_s);
    const stop_reason why = stop_rule(r_.samples_s.size(), r_.ci_rel, seconds_since(t0_), o_);
    if (why != stop_reason::none) {
      r_.converged = why == stop_reason::converged;
      r_.stopped_by = to_string(why);
      break;
    }
  }
  if (r_.stopped_by.empty()) r_.stopped_by = to_string(stop_reason::max_samples);
}

void point_sampler::check_last() {
  // The share above thins the checks so that the budget goes to samples; it
  // must not leave the end of the sampling unchecked, or a transfer that goes
  // bad after the first checks passes as ok. The last sample was not poisoned
  // (it was not known to be the last), so this reads what its last transfer
  // left: a corrupting copy is caught, whatever checking cost before.
  if (!verify_ || last_checked_ || r_.samples_s.empty()) return;
  const auto c1 = clock::now();
  t_->check_sample();
  ++r_.samples_checked;
  last_checked_ = true;
  checking_ += seconds_since(c1);
}

void point_sampler::finish() {
  check_last();
  if (t_) r_.settings = t_->settings_used();
  if (t_) r_.note = t_->note();  // again: how it ran, now that it has (a staged team grown meanwhile)
  r_.spent.checking_s = checking_;
  r_.spent.sampling_s = seconds_since(t0_) - checking_;
  r_.stats = summarize(r_.samples_s);
  r_.wall_stats = summarize(r_.wall_samples_s);
  r_.status = point_status::ok;
}

void point_sampler::fail() {
  record_exception(r_);
  if (t_) r_.note = t_->note();
  r_.stats = summarize(r_.samples_s);
  r_.wall_stats = summarize(r_.wall_samples_s);
}

point_result measure(transfer& t, const point_spec& spec, const device_info& device, const measure_options& options,
                     const std::atomic<bool>& stop) {
  point_sampler s(spec, device, options);
  s.attach(t);
  try {
    s.prepare();
    s.warm_up(stop);
    s.sample_alone(stop);
    s.finish();
  } catch (...) {
    s.fail();
  }
  return std::move(s.result());
}

point_result run_point(backend& b, const point_spec& p, const device_info& device, const measure_options& o,
                       const std::atomic<bool>& stop, const sampling_fn& sample, double min_batch_s,
                       std::mutex* prepare_lock, const std::function<void()>& on_failure) {
  point_sampler s(p, device, o, min_batch_s);
  point_result& r = s.result();
  // Placed before prepare(): the host buffers are allocated, pinned and
  // first touched from here, so their pages land on the preferred node.
  const bool on_a_device = device.type != "cpu";
  std::optional<near_device> near;
  if (on_a_device && o.affinity) near.emplace(pci_of(device));
  std::unique_ptr<transfer> t;
  try {
    {
      std::unique_lock<std::mutex> lock;
      if (prepare_lock) lock = std::unique_lock(*prepare_lock);
      const auto t0 = clock::now();
      t = b.prepare(p);
      const double preparing = seconds_since(t0);
      s.attach(*t);
      s.prepare();
      r.spent.prepare_s += preparing;
      s.warm_up(stop);
    }
    sample(s);
    s.finish();
  } catch (...) {
    s.fail();
    if (on_failure) on_failure();
  }
  if (!t) return std::move(r);  // never prepared: nothing placed, nothing to release
  const auto t1 = clock::now();
  t.reset();  // unpinning and freeing large buffers takes time of its own
  if (r.spent.prepare_s >= 0) r.spent.release_s = seconds_since(t1);
  if (on_a_device) r.placed = near ? near->where() : placement{false, -1, "", "off (--no-affinity)"};
  return std::move(r);
}

}  // namespace xfer
