#pragma once
// Every selected device at once: the same point (route, direction, host
// memory, size) driven on several devices of one backend concurrently, one
// thread per device, each placed near its device (core/affinity.hpp).
//
// What "at once" means here: samples are taken in rounds. In each round every
// device's thread is released by one barrier, runs one batch of its own
// repetitions, and meets the others at a second barrier; the round's window
// is from the earliest start to the latest end. The aggregate of a round is
// the bytes all devices moved in it over that window, so a device that
// finishes early and waits counts against the aggregate, as it would in an
// application that needs all of them. Each device's own samples (its batch
// over its own time) are reported beside it.
#include <atomic>
#include <vector>
#include <xfer/core/backend.hpp>
#include <xfer/core/plan.hpp>
#include <xfer/core/result.hpp>
#include <xfer/core/runner.hpp>

namespace xfer {

class reporter;

// A batch of a concurrent round lasts at least this long, whatever the
// timer's resolution: the barrier releases threads some microseconds apart,
// and the windows should be long against that skew.
inline constexpr double concurrent_min_sample_s = 2e-3;

// Measures `points` (the same point on distinct devices of `b`) at once.
// Returns one result per point, in order, then the aggregate (spec.device
// -1). Preparation runs one device at a time (outside every window), so a
// backend's per-device setup need not be thread-safe; only the transfers run
// concurrently. A device that fails or is skipped makes the aggregate fail
// or skip with its reason (the aggregate of fewer devices would be another
// measurement); the others keep their own results. Each device's point is
// the sampling engine's (core/sampling.hpp: what it verifies, its note and
// emulation label, its check schedule); the rounds' windows stop by the same
// stop_rule as a point's samples. The group runs under the watchdog
// (core/watchdog.hpp): one that outlives its bound (none with --watchdog 0),
// or is still running stop_grace_s after a stop request (watchdog on or
// off), is failed and its threads are abandoned (abandoned is set; see
// run_sweep for what the caller must then do).
std::vector<point_result> measure_together(backend& b, const std::vector<point_spec>& points,
                                           const measure_options& options, const std::atomic<bool>& stop,
                                           bool& abandoned);

// Groups a backend's planned points by everything but the device, in the
// order the groups first appear: each group is one concurrent measurement.
std::vector<std::vector<planned_point>> group_across_devices(const std::vector<planned_point>& points);

// Every group of `points` at once (measure_together), reported as they
// complete; a group with a planned skip, or after a group left stuck in the
// backend, is reported skipped, device by device and as an aggregate. A group of one device is measured at once all the same
// (its aggregate equals it), so the shape of the output does not depend on
// the number of devices.
sweep_outcome run_together(backend& b, const std::vector<planned_point>& points, const measure_options& options,
                           reporter& out, const std::atomic<bool>& stop, const progress_fn& progress = {});

}  // namespace xfer
