#include <xfer/core/staged_route.hpp>

#include <cstdlib>
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

bool staged_tuning_set_by_environment() {
  for (const char* name :
       {"XFER_STAGED_CHUNK_BYTES", "XFER_STAGED_RING_DEPTH", "XFER_STAGED_THREADS", "XFER_STAGED_HANDOFF_BYTES"}) {
    const char* v = std::getenv(name);
    if (!v || !*v) return false;
  }
  return true;
}

std::unique_ptr<mem::staged_copier> make_route_copier(mem::device_step& step) {
  mem::staged_copier_options o;
  // The staged copier validates the tuning; tuning_from_environment names a
  // variable that is not a positive integer.
  o.tuning = staged_tuning_set_by_environment()
                 ? mem::tuning_from_environment()
                 : mem::tuning_for(step, [](mem::device_step& s) { return mem::calibrate_staged(s); });
  o.thread_start = [] { block_stop_signals_in_this_thread(); };
  return std::make_unique<mem::staged_copier>(step, std::move(o));
}

}  // namespace xfer
