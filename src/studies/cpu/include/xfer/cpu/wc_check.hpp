#pragma once
// Whether write combining is really in effect: write-combined memory is
// uncached, so the CPU reads it several times slower than cached memory. Where
// a "write-combined" allocation reads at cached speed, the attribute was not
// honoured (some hypervisors map guest memory write-back whatever the guest asks).
#include <string>

namespace xfer::cpu {

struct wc_verdict {
  bool in_effect = false;
  double slowdown = 0;  // regular read bandwidth / write-combined read bandwidth
  std::string text;     // one plain sentence for the report
};

// Reads from real write-combined memory are an order of magnitude slower;
// 3x leaves room for a noisy machine without mistaking cached for uncached.
inline constexpr double wc_read_slowdown_threshold = 3.0;

// GB/s of plain memcpy reads from regular memory and from the write-combined
// kind (named in the text). Throws std::invalid_argument for a bandwidth that
// is not positive and finite.
wc_verdict judge_write_combining(double regular_read_gbps, double wc_read_gbps, const std::string& wc_kind,
                                 double threshold = wc_read_slowdown_threshold);

}  // namespace xfer::cpu
