#include <cmath>
#include <fmt/format.h>
#include <stdexcept>
#include <xfer/cpu/wc_check.hpp>

namespace xfer::cpu {

wc_verdict judge_write_combining(double regular_read_gbps, double wc_read_gbps, const std::string& wc_kind,
                                 double threshold) {
  for (double g : {regular_read_gbps, wc_read_gbps})
    if (!std::isfinite(g) || g <= 0)
      throw std::invalid_argument(fmt::format("write-combining check needs positive bandwidths (got {})", g));
  wc_verdict v;
  v.slowdown = regular_read_gbps / wc_read_gbps;
  v.in_effect = v.slowdown >= threshold;
  if (v.in_effect)
    v.text = fmt::format(
        "write combining IS in effect: reads from {} ran at {:.2f} GB/s, {:.1f}x slower than regular memory's "
        "{:.2f} GB/s (uncached reads), as write-combined memory should",
        wc_kind, wc_read_gbps, v.slowdown, regular_read_gbps);
  else
    v.text = fmt::format(
        "write combining appears NOT to be in effect: reads from {} ran at {:.2f} GB/s against regular memory's "
        "{:.2f} GB/s ({:.1f}x; real write-combined memory reads at least {:.0f}x slower), so the memory is cached "
        "whatever was asked (e.g. a hypervisor that does not honour the attribute)",
        wc_kind, wc_read_gbps, regular_read_gbps, v.slowdown, threshold);
  return v;
}

}  // namespace xfer::cpu
