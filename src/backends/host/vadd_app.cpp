#include "vadd_app.hpp"

#include <chrono>
#include <xfer/core/timing.hpp>
#include <xfer/mem/buffer.hpp>

#include "host_backend.hpp"

namespace xfer::host {
namespace {

using clock = std::chrono::steady_clock;

class host_vadd final : public vadd_app {
 public:
  explicit host_vadd(const host_backend& b) : backend_(b) {}
  std::vector<kind_support> strategies() const override { return backend_.host_memory_kinds(); }
  vadd_times run(const std::string& strategy, std::size_t n) override {
    auto kind = backend_.host_memory(strategy);
    const std::size_t bytes = n * sizeof(std::uint32_t);
    vadd_times t;
    auto t0 = clock::now();
    mem::buffer a(*kind, bytes, kind->natural_alignment()), b(*kind, bytes, kind->natural_alignment()),
        d(*kind, bytes, kind->natural_alignment());
    t[vadd_phase::allocate] = seconds_since(t0);
    auto* pa = static_cast<std::uint32_t*>(a.data());
    auto* pb = static_cast<std::uint32_t*>(b.data());
    auto* pd = static_cast<std::uint32_t*>(d.data());
    t0 = clock::now();
    vadd_populate(pa, pb, n);
    t[vadd_phase::populate] = seconds_since(t0);
    t0 = clock::now();
    vadd_cpu(pa, pb, pd, n);
    t[vadd_phase::cpu_vadd] = seconds_since(t0);
    // Spot-check the loop (nothing was offloaded, so there is no device result).
    t.verified = n == 0 || (pd[0] == pa[0] + pb[0] && pd[n - 1] == pa[n - 1] + pb[n - 1]);
    return t;
  }

 private:
  const host_backend& backend_;
};

}  // namespace

std::unique_ptr<vadd_app> make_vadd_app(const host_backend& b, int) { return std::make_unique<host_vadd>(b); }

}  // namespace xfer::host
