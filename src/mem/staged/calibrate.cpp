// The short calibration behind tuning_for(step, calibrate_staged): a few
// timed round trips per candidate, the fastest kept where it beat the defaults
// by the margin (staged_candidate_choice). Each candidate gets a
// copier of its own (its ring pinned once, in an untimed warm-up copy), so
// no candidate pays for another's staging.

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>
#include <memory>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>
#include <xfer/mem/os.hpp>
#include <xfer/mem/spin_wait.hpp>
#include <xfer/mem/staged/staged_copier.hpp>
#include <xfer/mem/staged/tuning.hpp>

namespace xfer::mem {
namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

// Device memory for the probes, returned whatever happens.
struct device_memory {
  device_step& step;
  device_ref ref;
  device_memory(device_step& s, std::size_t bytes) : step(s), ref(s.allocate(bytes)) {}
  ~device_memory() { step.deallocate(ref); }
};

// The best of `reps` round trips (to the device and back) of `bytes`.
template <class Copy>
double best_round_trip(unsigned reps, Copy&& copy) {
  double best = std::numeric_limits<double>::infinity();
  for (unsigned r = 0; r < reps; ++r) {
    const auto t0 = clock_type::now();
    copy();
    best = std::min(best, seconds_since(t0));
  }
  return best;
}

// The median of `reps` timings of `copy`, each started from an idle copier:
// after a pause longer than its threads spin before they sleep. Used for
// the handoff, where best-of-3 back-to-back copies found the pipeline with
// its threads awake, as no program between other work does, and handed the
// pipeline sizes where the plain copy was faster
// (docs/decisions/0001-staged-copier-shape.md).
template <class Copy>
double idle_median(unsigned reps, Copy&& copy) {
  std::vector<double> t;
  for (unsigned r = 0; r < reps; ++r) {
    std::this_thread::sleep_for(spin_before_sleep() + std::chrono::microseconds{100});
    const auto t0 = clock_type::now();
    copy();
    t.push_back(seconds_since(t0));
  }
  std::nth_element(t.begin(), t.begin() + t.size() / 2, t.end());
  return t[t.size() / 2];
}

}  // namespace

std::size_t staged_candidate_choice(const std::vector<double>& seconds, std::size_t defaults, double margin) {
  const auto fastest = std::min_element(seconds.begin(), seconds.end());
  if (fastest == seconds.end() || *fastest == std::numeric_limits<double>::infinity())
    throw std::invalid_argument("staged_candidate_choice: no candidate was timed");
  const auto f = static_cast<std::size_t>(fastest - seconds.begin());
  if (defaults < seconds.size() && seconds[defaults] < std::numeric_limits<double>::infinity() &&
      !(*fastest < seconds[defaults] * (1 - margin)))
    return defaults;
  return f;
}

staged_tuning calibrate_staged(device_step& step, const staged_calibration_options& o) {
  const auto start = clock_type::now();
  const std::size_t bytes = std::max<std::size_t>(o.probe_bytes, 1);
  // Pageable, touched memory: what the copier is for.
  std::vector<unsigned char> src(bytes, 0x5A), dst(bytes, 0);
  device_memory dev(step, bytes);

  staged_tuning best;
  const unsigned cpus = usable_cpu_count();
  // The candidates, the defaults first: when the budget runs out early (a
  // slow machine, pinning that costs more than expected) the best so far is
  // then at least as good as the defaults.
  // More threads than CPUs to run them only time-slice, so those are left
  // out, except the defaults and the first count (so there is a candidate).
  const staged_tuning defaults;
  std::vector<std::pair<std::size_t, unsigned>> candidates;
  for (std::size_t chunk : o.chunk_sizes)
    for (unsigned threads : o.thread_counts)
      if (threads <= cpus || threads == o.thread_counts.front() ||
          (chunk == defaults.chunk_bytes && threads == defaults.threads))
        candidates.emplace_back(chunk, threads);
  std::stable_partition(candidates.begin(), candidates.end(), [&](const auto& c) {
    return c.first == defaults.chunk_bytes && c.second == defaults.threads;
  });
  const std::size_t defaults_at =
      !candidates.empty() && candidates.front() == std::pair{defaults.chunk_bytes, defaults.threads} ? 0
                                                                                                   : candidates.size();
  std::vector<double> seconds(candidates.size(), std::numeric_limits<double>::infinity());
  std::vector<staged_tuning> tried(candidates.size());
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    if (i > 0 && seconds_since(start) > o.budget_s) break;
    staged_tuning& t = tried[i];
    t.chunk_bytes = candidates[i].first;
    t.threads = candidates[i].second;
    t.ring_depth = std::max(1u, o.ring_depth);
    t.handoff_to_device_bytes = t.handoff_to_host_bytes = 0;
    t.validate();
    staged_copier_options co;
    co.tuning = t;
    staged_copier c(step, co);
    c.copy_to_device(dev.ref, 0, src.data(), bytes);  // warm-up: pins the ring
    seconds[i] = best_round_trip(2, [&] {
      c.copy_to_device(dev.ref, 0, src.data(), bytes);
      c.copy_to_host(dst.data(), dev.ref, 0, bytes);
    });
  }
  if (!candidates.empty()) best = tried[staged_candidate_choice(seconds, defaults_at, o.candidate_margin)];

  // The handoffs: staged against plain at each probed size, smallest first,
  // each direction on its own (their plain copies cost differently).
  std::vector<std::size_t> sizes;
  for (std::size_t s : o.handoff_sizes)
    if (s > 0 && s <= bytes) sizes.push_back(s);
  std::sort(sizes.begin(), sizes.end());
  staged_copier_options co;
  co.tuning = best;
  staged_copier c(step, co);
  std::vector<bool> wins_to_device, wins_to_host;
  for (std::size_t s : sizes) {
    const double plain_in = idle_median(5, [&] { step.plain_to_device(dev.ref, 0, src.data(), s); });
    const double staged_in = idle_median(5, [&] { c.copy_to_device(dev.ref, 0, src.data(), s); });
    const double plain_out = idle_median(5, [&] { step.plain_to_host(dst.data(), dev.ref, 0, s); });
    const double staged_out = idle_median(5, [&] { c.copy_to_host(dst.data(), dev.ref, 0, s); });
    // A win needs a margin: with none, a calibration handed sizes to the
    // pipeline on a narrow edge where interleaved samples then found it
    // slower than the plain copy (docs/decisions/0001-staged-copier-shape.md).
    wins_to_device.push_back(staged_in < plain_in * (1 - o.handoff_margin));
    wins_to_host.push_back(staged_out < plain_out * (1 - o.handoff_margin));
  }
  // The smallest size from which staging won at every larger probed size;
  // above every probed size when it did not win at the largest.
  auto handoff = [&](const std::vector<bool>& wins) {
    std::size_t h = sizes.empty() ? staged_tuning{}.handoff_to_device_bytes : sizes.back() * 2;
    for (std::size_t i = sizes.size(); i-- > 0;) {
      if (!wins[i]) break;
      h = sizes[i];
    }
    return h;
  };
  best.handoff_to_device_bytes = handoff(wins_to_device);
  best.handoff_to_host_bytes = handoff(wins_to_host);
  return best;
}

}  // namespace xfer::mem
