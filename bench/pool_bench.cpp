// The caching pool's reason to exist: re-acquiring a large block must cost
// microseconds where the upstream allocator (pinning above all) costs
// milliseconds. Issue 7's target: a 256 MiB pinned block again in < 10 us.
#include <benchmark/benchmark.h>
#include <memory>
#include <string>
#include <xfer/backends/registry.hpp>
#include <xfer/core/errors.hpp>
#include <xfer/mem/caching_pool.hpp>
#include <xfer/mem/kinds.hpp>

namespace {

// The kind from the library, or from the first backend that offers it.
std::unique_ptr<xfer::mem::host_resource> resource(const std::string& kind, std::string& why) {
  if (auto r = xfer::mem::make_host_kind(kind)) return r;
  static auto backends = xfer::make_backends({});
  for (auto& b : backends) {
    if (!b.impl) continue;
    try {
      return b.impl->host_memory(kind);
    } catch (const xfer::skip_point& e) {
      why = e.what();
    }
  }
  if (why.empty()) why = "no backend offers " + kind;
  return nullptr;
}

void upstream(benchmark::State& state, const std::string& kind) {
  std::string why;
  auto r = resource(kind, why);
  if (!r) return state.SkipWithError(why.c_str());
  const auto n = static_cast<std::size_t>(state.range(0));
  for (auto _ : state) {
    void* p = r->allocate(n, 64);
    benchmark::DoNotOptimize(p);
    r->deallocate(p, n, 64);
  }
  state.SetLabel(kind + " allocate+free");
}

void pool_reacquire(benchmark::State& state, const std::string& kind) {
  std::string why;
  auto r = resource(kind, why);
  if (!r) return state.SkipWithError(why.c_str());
  xfer::mem::caching_pool pool(*r);
  const auto n = static_cast<std::size_t>(state.range(0));
  pool.deallocate(pool.allocate(n, 64), n, 64);  // the one upstream allocation, outside the timing
  for (auto _ : state) {
    void* p = pool.allocate(n, 64);
    benchmark::DoNotOptimize(p);
    pool.deallocate(p, n, 64);
  }
  state.counters["upstream_allocs"] = static_cast<double>(pool.stats().misses);
  state.SetLabel("pool:" + kind + " re-acquire+release");
}

}  // namespace

BENCHMARK_CAPTURE(upstream, aligned, std::string("aligned"))->Arg(256 << 20)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(pool_reacquire, aligned, std::string("aligned"))->Arg(256 << 20)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(upstream, pinned, std::string("pinned"))->Arg(256 << 20)->Unit(benchmark::kMicrosecond)->Iterations(5);
BENCHMARK_CAPTURE(pool_reacquire, pinned, std::string("pinned"))->Arg(256 << 20)->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
