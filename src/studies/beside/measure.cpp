#include <xfer/beside/measure.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <fmt/format.h>
#include <stdexcept>
#include <thread>

namespace xfer::beside {

namespace {

using clock_type = std::chrono::steady_clock;

double since(clock_type::time_point t0) { return std::chrono::duration<double>(clock_type::now() - t0).count(); }

// Runs `body` on a thread of its own; rethrows what it threw on join.
class side_thread {
 public:
  template <class F>
  explicit side_thread(F body)
      : thread_([this, body = std::move(body)]() mutable {
          try {
            body();
          } catch (...) {
            error_ = std::current_exception();
          }
        }) {}
  void join() {
    thread_.join();
    if (error_) std::rethrow_exception(error_);
  }
  ~side_thread() {
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::exception_ptr error_;
  std::thread thread_;
};

}  // namespace

double rate_alone(activity& a, double seconds) {
  const auto t0 = clock_type::now();
  std::uint64_t n = 0;
  do {
    a.step();
    ++n;
  } while (since(t0) < seconds);
  return static_cast<double>(n) / since(t0);
}

std::pair<double, double> rates_beside(activity& copy, activity& work, double seconds) {
  // Each side counts the steps it finished inside the window that both share:
  // from when both are ready to when the first passes `seconds`.
  std::atomic<int> ready{0};
  std::atomic<bool> over{false};
  struct count {
    std::uint64_t steps = 0;
    double s = 0;
  } c, w;
  auto loop = [&](activity& a, count& out) {
    ready.fetch_add(1);
    while (ready.load() < 2) std::this_thread::yield();
    const auto t0 = clock_type::now();
    do {
      a.step();
      ++out.steps;
      if (since(t0) >= seconds) over.store(true);
    } while (!over.load());
    out.s = since(t0);
  };
  side_thread tc([&] { loop(copy, c); });
  std::exception_ptr first;
  try {
    loop(work, w);
  } catch (...) {
    over.store(true);
    first = std::current_exception();
  }
  tc.join();
  if (first) std::rethrow_exception(first);
  return {static_cast<double>(c.steps) / c.s, static_cast<double>(w.steps) / w.s};
}

double joint_seconds(activity& copy, activity& work, job j) {
  std::atomic<int> ready{0};
  auto run = [&](activity& a, std::uint64_t steps) {
    ready.fetch_add(1);
    while (ready.load() < 2) std::this_thread::yield();
    for (std::uint64_t i = 0; i < steps; ++i) a.step();
  };
  const auto t0 = clock_type::now();
  side_thread tc([&] { run(copy, j.copy_steps); });
  std::exception_ptr first;
  try {
    run(work, j.work_steps);
  } catch (...) {
    first = std::current_exception();
  }
  tc.join();
  if (first) std::rethrow_exception(first);
  return since(t0);
}

round_reading measure_round(activity& copy, activity& work, double seconds, job j) {
  round_reading r;
  r.copy_alone = rate_alone(copy, seconds);
  r.work_alone = rate_alone(work, seconds);
  std::tie(r.copy_beside, r.work_beside) = rates_beside(copy, work, seconds);
  r.joint_s = joint_seconds(copy, work, j);
  return r;
}

spread spread_of(std::vector<double> v) {
  if (v.empty()) throw std::invalid_argument("spread_of: no values");
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  const double median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  return {median, v.front(), v.back()};
}

pair_summary summarize(const std::vector<round_reading>& rounds, double copy_amount, double work_amount) {
  std::vector<double> ca, cb, wa, wb, slow, share, joint;
  for (const auto& r : rounds) {
    ca.push_back(r.copy_alone * copy_amount);
    cb.push_back(r.copy_beside * copy_amount);
    wa.push_back(r.work_alone * work_amount);
    wb.push_back(r.work_beside * work_amount);
    slow.push_back(r.work_alone / r.work_beside - 1);
    share.push_back(r.copy_beside / r.copy_alone);
    joint.push_back(r.joint_s);
  }
  return {spread_of(ca), spread_of(cb), spread_of(wa), spread_of(wb), spread_of(slow), spread_of(share),
          spread_of(joint), rounds.size()};
}

std::optional<finding> beside_finding(const std::string& workload, const std::vector<way_summary>& ways) {
  if (ways.size() < 2) return std::nullopt;
  const auto fastest = std::max_element(ways.begin(), ways.end(), [](const way_summary& a, const way_summary& b) {
    return a.s.copy_alone.median < b.s.copy_alone.median;
  });
  const auto first = std::min_element(ways.begin(), ways.end(), [](const way_summary& a, const way_summary& b) {
    return a.s.joint_s.median < b.s.joint_s.median;
  });
  if (fastest == first || first->s.joint_s.high >= fastest->s.joint_s.low) return std::nullopt;
  finding f{workload, fastest->way, first->way, 1 - first->s.joint_s.median / fastest->s.joint_s.median, {}};
  f.text = fmt::format("beside {}, {} finishes both {:.0f}% sooner than {}, the fastest alone ({:.3g} s against "
                       "{:.3g} s for the same copy and work, medians; the ranges do not meet)",
                       workload, f.first_beside, 100 * f.sooner, f.fastest_alone, first->s.joint_s.median,
                       fastest->s.joint_s.median);
  return f;
}

std::optional<choice_check> check_choice(const std::string& workload, const way_summary& copier,
                                         const std::string& chose, const std::vector<way_summary>& ways) {
  if (ways.empty()) return std::nullopt;
  const auto best = std::min_element(ways.begin(), ways.end(), [](const way_summary& a, const way_summary& b) {
    return a.s.joint_s.median < b.s.joint_s.median;
  });
  return choice_check{workload,
                      copier.way,
                      chose,
                      best->way,
                      copier.s.joint_s.median,
                      best->s.joint_s.median,
                      copier.s.joint_s.median / best->s.joint_s.median - 1};
}

}  // namespace xfer::beside
