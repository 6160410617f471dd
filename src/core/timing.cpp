#include <algorithm>
#include <xfer/core/timing.hpp>

namespace xfer {

// The smallest step steady_clock is seen to take (its declared period can be
// finer than what the OS delivers).
double wall_timer::resolution_s() const {
  static const double resolution = [] {
    double best = 1.0;
    for (int i = 0; i < 50; ++i) {
      const auto a = clock::now();
      auto b = clock::now();
      while (b == a) b = clock::now();
      best = std::min(best, std::chrono::duration<double>(b - a).count());
    }
    return best;
  }();
  return resolution;
}

}  // namespace xfer
