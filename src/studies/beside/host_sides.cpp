#include <xfer/beside/host_sides.hpp>

#include <algorithm>
#include <cstring>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <numeric>
#include <stdexcept>
#include <xfer/core/thread_team.hpp>
#include <xfer/mem/staged/host_step.hpp>
#include <xfer/mem/staged/staged_copier.hpp>

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

// A source of `bytes` holding a pattern, and the check that a destination
// holds it.
std::vector<unsigned char> pattern(std::size_t bytes) {
  std::vector<unsigned char> v(bytes);
  for (std::size_t i = 0; i < bytes; ++i) v[i] = static_cast<unsigned char>(i * 131 + 7);
  return v;
}

std::string compare(const unsigned char* dst, const std::vector<unsigned char>& src) {
  const auto m = std::mismatch(src.begin(), src.end(), dst);
  if (m.first == src.end()) return {};
  return fmt::format("byte {} of {} differs after the copies ({} where {} was copied)", m.first - src.begin(),
                     src.size(), static_cast<unsigned>(*m.second), static_cast<unsigned>(*m.first));
}

class host_memcpy final : public copy_side {
 public:
  explicit host_memcpy(std::size_t bytes) : src_(pattern(bytes)), dst_(bytes) {}
  std::string name() const override { return "memcpy"; }
  double amount_per_step() const override { return static_cast<double>(src_.size()); }
  void step() override { std::memcpy(dst_.data(), src_.data(), src_.size()); }
  std::string check() override { return compare(dst_.data(), src_); }

 private:
  std::vector<unsigned char> src_, dst_;
};

class host_staged final : public copy_side {
 public:
  explicit host_staged(std::size_t bytes)
      : src_(pattern(bytes)),
        copier_(step_, {.tuning = {}, .max_cached_staging_bytes = {},
                        .thread_start = block_stop_signals_in_this_thread, .budget = {}, .registrations = nullptr}),
        dev_(step_.allocate(bytes)) {}
  ~host_staged() override { step_.deallocate(dev_); }
  std::string name() const override { return "staged"; }
  double amount_per_step() const override { return static_cast<double>(src_.size()); }
  void step() override { copier_.copy_to_device(dev_, 0, src_.data(), src_.size()); }
  std::string check() override { return compare(static_cast<const unsigned char*>(step_.host_view(dev_)), src_); }

 private:
  std::vector<unsigned char> src_;
  mem::host_step step_;  // before the copier, which it must outlive
  mem::staged_copier copier_;
  mem::device_ref dev_;
};

}  // namespace

std::vector<std::string> host_workload_names() { return {"cpu-compute", "cpu-memory"}; }
std::vector<std::string> host_way_names() { return {"memcpy", "staged"}; }

std::unique_ptr<activity> make_host_workload(const std::string& name, unsigned threads, std::size_t bytes) {
  if (name == "cpu-compute") return std::make_unique<cpu_compute>(threads);
  if (name == "cpu-memory") return std::make_unique<cpu_memory>(threads, bytes);
  throw std::invalid_argument(fmt::format("workload '{}': expected one of {}", name,
                                          fmt::join(host_workload_names(), ", ")));
}

std::unique_ptr<copy_side> make_host_way(const std::string& name, std::size_t bytes) {
  if (name == "memcpy") return std::make_unique<host_memcpy>(bytes);
  if (name == "staged") return std::make_unique<host_staged>(bytes);
  throw std::invalid_argument(fmt::format("way '{}': expected one of {}", name, fmt::join(host_way_names(), ", ")));
}

}  // namespace xfer::beside
