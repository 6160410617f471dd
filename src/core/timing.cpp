#include <algorithm>
#include <fmt/format.h>
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

std::size_t timed_batches::reps_per_sub_batch() const {
  return std::max<std::size_t>(1, gate_->capacity() / ops_per_rep_);
}

void timed_batches::fall_back(std::string why) { fallback_ = std::move(why); }

void timed_batches::gave_way(std::size_t reps) {
  const std::string rule = gate_->give_way_rule();
  fallback_ = fmt::format("the gate gave way{}{}: an enqueue blocked the host while the gate held the queue, so a "
                          "sub-batch of {} repetitions was run again ungated and every later batch ran ungated (its "
                          "times include the gaps enqueueing leaves)",
                          rule.empty() ? "" : " (", rule.empty() ? rule : rule + ")", reps);
}

}  // namespace xfer
