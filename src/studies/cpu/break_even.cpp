#include <cmath>
#include <fmt/format.h>
#include <stdexcept>
#include <xfer/cpu/break_even.hpp>

namespace xfer::cpu {

break_even compute_break_even(double first_kind, double steady_kind, double first_regular, double steady_regular) {
  for (double t : {first_kind, steady_kind, first_regular, steady_regular})
    if (!std::isfinite(t) || t < 0)
      throw std::invalid_argument(fmt::format("break-even needs finite, non-negative times (got {})", t));
  if (first_kind <= first_regular && steady_kind <= steady_regular) return {break_even::verdict::immediate, 0};
  if (steady_kind < steady_regular)
    return {break_even::verdict::after, (first_kind - first_regular) / (steady_regular - steady_kind)};
  // Slower (or no faster) in steady state: whatever the kind saved on first
  // use, reuse only widens regular memory's lead.
  return {break_even::verdict::never, 0};
}

std::string to_string(const break_even& b) {
  switch (b.outcome) {
    case break_even::verdict::immediate: return "0";
    case break_even::verdict::after: return fmt::format("{}", static_cast<long long>(std::ceil(b.reuses)));
    case break_even::verdict::never: return "never";
  }
  return "?";
}

}  // namespace xfer::cpu
