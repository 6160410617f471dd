#pragma once
// After how many reuses a memory kind with a costlier first use pays it back
// against regular memory (seed 004: write-combined memory needed about 20).
#include <string>

namespace xfer::cpu {

struct break_even {
  enum class verdict {
    immediate,  // no costlier first use and no slower steady state: ahead from the start
    after,      // ahead once it has been reused `reuses` times
    never,      // its steady state is no faster, so reuse never pays back the first use
  };
  verdict outcome = verdict::never;
  double reuses = 0;  // (first_kind - first_regular) / (steady_regular - steady_kind), for `after`
};

// first_*: the cost of first use (allocation + first run); steady_*: one
// steady-state run. The kind's total after n reuses is
// first_kind + n * steady_kind; it breaks even when that drops to regular's.
// Throws std::invalid_argument for a negative or non-finite time.
break_even compute_break_even(double first_kind, double steady_kind, double first_regular, double steady_regular);

// "0", "21" (rounded up: reuses are whole), "never".
std::string to_string(const break_even& b);

}  // namespace xfer::cpu
