#pragma once
// What every backend's `staged` route shares (issue 15): which host memory it
// is for, and how the copier it times is made. Each backend supplies only its
// device step (xfer/mem/staged/device_step.hpp) and its buffers.
#include <memory>
#include <string>
#include <xfer/core/backend.hpp>
#include <xfer/mem/resource.hpp>
#include <xfer/mem/staged/device_step.hpp>
#include <xfer/mem/staged/staged_copier.hpp>

namespace xfer {

// skip_point unless `kind` is pageable: page-locked memory already moves at
// link speed (copy-async), and memory the device addresses itself (managed)
// is the driver's to migrate. Staging pays only where the API would stage.
void require_pageable_for_staged(const mem::host_resource& kind);

// The copier a staged route times, over `step` (which must outlive it). Its
// tuning: the one cached for this machine and device, else a short
// calibration (mem::calibrate_staged, under 2 s, kept for later runs); with
// each XFER_STAGED_* override on top: mem::tuning_for's rule
// (xfer/mem/staged/tuning.hpp). Where the environment sets every calibrated
// field nothing is calibrated: CI and tests pin a small chunk and handoff
// that way, fast, and so cross chunk boundaries at small sizes. The copiers of
// every device share the process's staging budget (mem::process_staging_budget:
// one team of threads taking turns between the copies in progress, as
// `--together` runs them; XFER_STAGED_SHARED=0 gives each copier a team of its
// own). The copier's threads never take the stop signals (SIGINT and friends
// go to the main thread).
// Throws what the calibration or the copier throws (mem::staged_error,
// mem::device_step_error, std::invalid_argument for a bad override).
std::unique_ptr<mem::staged_copier> make_route_copier(mem::device_step& step);

// What a staged route's point says about how it ran (point_result::note, read
// once its samples are taken): the team of threads that copied its pieces,
// so a result file records it. On a budget, "staging team: 24 threads shared
// (grows to 24 with copies at once), 12 a copy at most": the team as grown
// by the copies run so far (mem::staging_budget::threads), its limit and the
// copier's own tuning; without one, "staging team: 12 threads of its own".
std::string staged_route_note(const mem::staged_copier& copier);

// The settings a staged route's point used: the staged copier's tuning for
// its device (mem::tuning_cache_key), as the run's settings record it.
settings_ref staged_route_settings(const mem::staged_copier& copier);

}  // namespace xfer
