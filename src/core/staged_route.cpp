#include <xfer/core/staged_route.hpp>

#include <algorithm>

#include <fmt/format.h>
#include <xfer/core/errors.hpp>
#include <xfer/core/interrupt.hpp>
#include <xfer/mem/staged/tuning.hpp>

namespace xfer {

void require_pageable_for_staged(const mem::host_resource& kind) {
  const auto p = kind.props();
  if (p.pinned || p.device_accessible)
    throw skip_point(fmt::format("the staged copier is for pageable memory; '{}' is {} (see copy-async)", kind.kind(),
                                 p.pinned ? "page-locked already" : "managed by the driver"));
}

std::unique_ptr<mem::staged_copier> make_route_copier(mem::device_step& step) {
  mem::staged_copier_options o;
  // The rule (calibrated, then each field the front door fixed on its own)
  // is tuning_for's, the same for every caller.
  o.tuning = mem::tuning_for(step, [](mem::device_step& s) { return mem::calibrate_staged(s); });
  o.thread_start = [] { block_stop_signals_in_this_thread(); };
  // Every device's copier on one team and one cache (issue 37: four teams
  // competed on four H100s at once); a device alone still gets its own team.
  o.budget = mem::process_staging_budget();
  return std::make_unique<mem::staged_copier>(step, std::move(o));
}

settings_ref staged_route_settings(const mem::staged_copier& copier) {
  return {"staged", mem::tuning_cache_key(copier.step())};
}

std::string staged_route_note(const mem::staged_copier& copier) {
  const auto& budget = copier.budget();
  if (!budget) return fmt::format("staging team: {} threads of its own", copier.team_threads());
  return fmt::format("staging team: {} threads shared (grows to {} with copies at once), {} a copy at most",
                     copier.team_threads(), std::max(budget->grow_limit(), budget->threads()),
                     copier.tuning().threads);
}

}  // namespace xfer
