#pragma once
// The one sampling engine. Every mode that measures a point (one device at a
// time: run_sweep and revisit; every device at once: run_together; the peer
// matrix; fleet mode through these) takes its samples here, so the rules are
// written once: what identifies a result, preparation near the device, the
// first-use costs, verifying once, warm-up and the batch size, which samples
// are checked, when sampling stops, what the result holds, and which status an
// exception gives. A mode adds only what is its own: the single-device loop
// is point_sampler::sample_alone; the devices-at-once rounds drive arm /
// batch / record / check between their barriers and apply stop_rule to the
// rounds' windows.
//
// The watchdog that bounds a point or a group is in core/watchdog.hpp.
#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <mutex>
#include <string>
#include <vector>
#include <xfer/core/backend.hpp>
#include <xfer/core/result.hpp>

namespace xfer {

// The defaults of `xferbench sweep` live here and nowhere else.
struct measure_options {
  double target_ci = 0.01;        // stop when the median's CI half-width is within this fraction
  // Per-point time budget for sampling; a point on course to converge may
  // take up to four times it (stop_rule). Short, because most points
  // converge in far less and the default run measures thousands.
  double max_time_s = 0.05;
  double warmup_s = 0.005;        // warm-up time (at least one repetition)
  double min_sample_s = 100e-6;   // a sample lasts at least this long...
  double min_sample_ticks = 100;  // ...and at least this many timer ticks
  std::size_t min_samples = 8;
  std::size_t max_samples = 2000;
  // Samples a point takes whatever its budget (four times it included), up
  // to max_samples: 1, except where a finding compares points by their
  // samples' spread, which one sample does not have (sweep --blocks,
  // block_samples_floor in core/block_route.hpp).
  std::size_t samples_floor = 1;
  // Time lent to noisy points: sampling time that earlier points of the same
  // sweep left unused (they converged early) goes to later points that need
  // more, up to this many times max_time_s each, so the sweep as a whole stays
  // near points x max_time_s while its noisy points get what the quiet ones
  // did not use. 0: no lending.
  double lend_cap_x = 20;
  bool verify = true;
  // Checking samples (poisoning the destination, then reading it back on the
  // CPU) may take at most this share of the sampling time; the first and the
  // last sample are always checked. A 64 MiB check on one core takes about as long as the
  // copy over PCIe: checking every sample halved the samples of large points.
  double check_share = 0.25;
  // Run each device point's thread on the CPUs local to the device, with its
  // memory from the device's NUMA node (core/affinity.hpp).
  bool affinity = true;
  // The watchdog's bound on one point, preparation included: negative derives
  // it from the point (watchdog_bound), 0 turns the watchdog off.
  double watchdog_s = -1;
  // The whole run's wall-clock target in seconds (sweep --budget): each
  // point's sampling time then comes from run_budget, not max_time_s. 0: off.
  double run_budget_s = 0;

  // --quick: a coarse look in seconds (5% target, 10 ms a point).
  static measure_options quick() {
    measure_options o;
    o.target_ci = 0.05;
    o.max_time_s = 0.01;
    o.warmup_s = 0.0005;
    return o;
  }
};

// Why sampling stops, or none to go on. to_string gives the stopped_by words
// of the result file.
enum class stop_reason { none, converged, budget, budget_x4, max_samples };
const char* to_string(stop_reason s);

// The stop rule, for a point's samples and for a group's rounds alike: after
// `n` samples whose median's interval is `ci_rel` wide, `spent_s` seconds into
// sampling. Converged once there are min_samples within the target. Out of
// budget (max_time_s), sampling goes on only while the interval is on course
// to reach its target within four times the budget (its width shrinks as one
// over the root of the samples), so time goes to points that converge with a
// little more, not to ones that never will; in any case it stops at four
// times the budget (huge transfers) once it has samples_floor samples, and
// at max_samples.
stop_reason stop_rule(std::size_t n, double ci_rel, double spent_s, const measure_options& o);

// The PCI address the backend gives a device ("" where it gives none).
std::string pci_of(const device_info& d);
// The device of that index in `devices`, or a stand-in named "?".
device_info find_device(const std::vector<device_info>& devices, int index);
// Marks a result as measured under emulation (the device's
// details["emulation"]): its time is the API's own cost, no link's.
void label_emulation(point_result& r, const std::string& emulation);
// A point's result with what identifies it: the spec and the device (name,
// type, PCI address, emulation label).
point_result result_of(const point_spec& p, const device_info& device);
// A point that never ran, with its status and the reason.
point_result unrun(const point_spec& p, const device_info& device, point_status status, std::string reason);
// The status an exception gives a point; call inside a catch block. A
// verification_error fails it ("verification failed: ..."), skip_point skips
// it, any other std::exception fails it with its message; anything else is
// rethrown.
void record_exception(point_result& r);

// One point's samples on one transfer, step by step. It owns the point's
// result; the transfer stays its caller's.
class point_sampler {
 public:
  // min_batch_s: a batch lasts at least this long whatever the timer (the
  // devices-at-once rounds want windows long against the barrier's skew).
  point_sampler(const point_spec& p, const device_info& device, const measure_options& o, double min_batch_s = 0);

  point_result& result() { return r_; }
  const measure_options& options() const { return o_; }

  // The transfer to sample: what it says about itself goes into the result.
  void attach(transfer& t);
  // First-use costs, the first transfer, and verifying once (where the
  // options ask for it and the route moves data that can be checked).
  void prepare();
  // Doubling the batch until warmup_s has passed; the last batch gives the
  // repetitions per sample. Sampling time counts from its end.
  void warm_up(const std::atomic<bool>& stop);

  // One sample in four steps, so that a mode may put its barriers between
  // them. arm(): decides whether this sample is checked (every one while
  // checking costs at most check_share of the sampling time; the first
  // always, the last by check_last) and poisons its destination if so. batch(): the timed batch.
  // record(): the batch's times into the result. check(): the armed check,
  // outside the timed region.
  void arm();
  sample batch();
  void record(const sample& s);
  void check();
  void take_sample();

  // The single-device loop: samples until the stop rule says, throwing
  // "interrupted" on a stop request.
  void sample_alone(const std::atomic<bool>& stop);

  // The last timed sample, checked however the share thinned the checks
  // before it (not poisoned: it was not known to be the last). finish() calls
  // it, so every mode's last sample is checked.
  void check_last();

  // Sampling went to its end (its last sample checked, check_last): status ok, where the time went, the summaries,
  // and the transfer's note read again (what it says about how the point ran, once it has: a staged route's
  // team may have grown with the copies at once).
  void finish();
  // Inside a catch block: the exception's status (record_exception), the
  // summaries of what was sampled and the note read again.
  void fail();

 private:
  point_result r_;
  measure_options o_;
  double min_batch_s_;
  transfer* t_ = nullptr;
  bool verify_ = false, armed_ = false, last_checked_ = false;
  double checking_ = 0, sampled_ = 0, poisoning_ = 0;
  std::chrono::steady_clock::time_point t0_;
};

// Measures a prepared transfer alone. Never throws for the transfer's own
// failures: those become a failed point. Stops early (status failed, reason
// "interrupted") when `stop` is set.
point_result measure(transfer& t, const point_spec& spec, const device_info& device, const measure_options& options,
                     const std::atomic<bool>& stop);

// What a mode does with a prepared point: its own way of taking the samples.
using sampling_fn = std::function<void(point_sampler&)>;

// One point on one device, from preparing its buffers to releasing them: the
// thread placed near the device (options.affinity), backend::prepare timed
// into the preparation, then prepare and warm_up under `prepare_lock` (when
// given: a backend's per-device setup need not be thread-safe), `sample`, and
// the release timed. `on_failure` runs as soon as the point has failed, before
// its buffers are released (a group's barrier must not wait for that). Never
// throws for the point's own failures.
point_result run_point(backend& b, const point_spec& p, const device_info& device, const measure_options& o,
                       const std::atomic<bool>& stop, const sampling_fn& sample, double min_batch_s = 0,
                       std::mutex* prepare_lock = nullptr, const std::function<void()>& on_failure = {});

}  // namespace xfer
