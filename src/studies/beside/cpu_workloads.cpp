#include <xfer/beside/cpu_workloads.hpp>

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <numeric>
#include <stdexcept>
#include <xfer/core/thread_team.hpp>

namespace xfer::beside {

namespace {

// Each thread of the team: this many multiply-adds a step, in 8 independent
// chains (enough to keep a core's FMA units busy without touching memory).
constexpr std::size_t compute_iterations = std::size_t{1} << 18;

class cpu_compute final : public activity {
 public:
  explicit cpu_compute(unsigned threads) : team_(threads), sink_(threads) {}
  std::string name() const override { return "cpu-compute"; }
  double amount_per_step() const override { return 2.0 * 8 * compute_iterations * team_.size(); }  // FLOP
  void step() override {
    team_.run([this](unsigned t) {
      double a[8];
      for (int k = 0; k < 8; ++k) a[k] = 1.0 + 1e-9 * (t + k);
      for (std::size_t i = 0; i < compute_iterations; ++i)
        for (double& x : a) x = x * 0.999999 + 1e-7;
      sink_[t] = std::accumulate(a, a + 8, 0.0);
    });
  }

 private:
  thread_team team_;
  std::vector<double> sink_;  // the chains' results, kept so they are computed
};

class cpu_memory final : public activity {
 public:
  cpu_memory(unsigned threads, std::size_t bytes)
      : team_(threads), data_(std::max<std::size_t>(bytes / sizeof(double), threads), 1.0), sink_(threads) {}
  std::string name() const override { return "cpu-memory"; }
  double amount_per_step() const override { return static_cast<double>(data_.size() * sizeof(double)); }  // bytes read
  void step() override {
    team_.run([this](unsigned t) {
      const std::size_t n = data_.size(), per = n / team_.size();
      const std::size_t from = t * per, to = t + 1 == team_.size() ? n : from + per;
      sink_[t] = std::accumulate(data_.begin() + static_cast<std::ptrdiff_t>(from),
                                 data_.begin() + static_cast<std::ptrdiff_t>(to), 0.0);
    });
  }

 private:
  thread_team team_;
  std::vector<double> data_;
  std::vector<double> sink_;
};

}  // namespace

std::vector<std::string> cpu_workload_names() { return {"cpu-compute", "cpu-memory"}; }

std::unique_ptr<activity> make_cpu_workload(const std::string& name, unsigned threads, std::size_t bytes) {
  if (name == "cpu-compute") return std::make_unique<cpu_compute>(threads);
  if (name == "cpu-memory") return std::make_unique<cpu_memory>(threads, bytes);
  throw std::invalid_argument(fmt::format("workload '{}': expected one of {}", name,
                                          fmt::join(cpu_workload_names(), ", ")));
}

}  // namespace xfer::beside
