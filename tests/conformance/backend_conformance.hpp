#pragma once
// The one conformance suite every backend passes, as resource_conformance.hpp
// is for memory resources. A test binary includes this once, describes its
// backend in a backend_case (its routes, host memory kinds, and what it
// promises for each point) and instantiates:
//
//   BackendContract     the backend's route table and kinds match the case
//   BackendConformance  one test per route x direction x host kind; at each
//                       of a few sizes the point either is skipped with a
//                       non-empty reason (and the case says it must be), or
//                       verifies, times positive intervals with the timer
//                       the case names, passes the per-sample check on
//                       healthy data, and measures ok through the runner.
//
// tests/conformance instantiates it for the host backend, tests/opencl for
// OpenCL on PoCL, tests/cuda for both CUDA backends (label gpu; every test
// skips with the reason where no device is present).
#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdint>
#include <exception>
#include <functional>
#include <gtest/gtest.h>
#include <iostream>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>
#include <xfer/core/backend.hpp>
#include <xfer/core/errors.hpp>
#include <xfer/core/runner.hpp>

#include <xfer/core/block_route.hpp>

namespace xfer::test {

struct route_contract {
  route_kind name;
  std::vector<direction> directions;
  bool uses_host_memory = true;
};

// What a backend promises for one point.
struct point_expectation {
  bool runs = true;           // false: prepare() must skip it, with a reason
  std::string skip_mentions;  // where it skips: a phrase its reason contains (empty: any reason)
  clock_kind timer = clock_kind::wall;
  std::uint64_t bytes_per_rep = 0;
  // prepare() must skip it, with a reason that contains `mentions`.
  void skip(std::string mentions) {
    runs = false;
    skip_mentions = std::move(mentions);
  }
};

// The usual bytes per repetition: both ways for bidir and rw.
inline std::uint64_t two_way_bytes(const point_spec& p) {
  return p.dir == direction::bidir || p.dir == direction::rw ? 2 * p.bytes : p.bytes;
}

// 1 B (the latency end), 4099 B (neither a multiple of 8 nor 16: kernel
// tails; past a page) and just past 256 KiB (CUDA checks device memory in
// place beyond it). Small, so the suite stays quick on a 2-core machine.
inline const std::vector<std::uint64_t>& conformance_sizes() {
  static const std::vector<std::uint64_t> s{1, 4099, (std::uint64_t{256} << 10) + 20};
  return s;
}

// A block route's points (core/block_route.hpp): an array in blocks of a
// page, and in blocks of three pages (no power of two), each scattered by
// the fixed-seed list; blocks-contiguous as one block of the array.
inline std::vector<point_spec> conformance_points(const backend& b, route_kind r, direction d,
                                                  const std::string& kind) {
  const std::string backend = b.name();
  const auto routes = b.routes();
  const auto info = std::find_if(routes.begin(), routes.end(), [&](const route_info& i) { return i.name == r; });
  if (info == routes.end() || !info->block_workload) {
    std::vector<point_spec> out;
    for (std::uint64_t bytes : conformance_sizes()) out.push_back({backend, 0, r, d, kind, bytes});
    return out;
  }
  std::vector<point_spec> out;
  for (std::uint64_t block : {std::uint64_t{4096}, std::uint64_t{3 * 4096}}) {
    point_spec p{backend, 0, r, d, kind, 24 * block};
    p.block_bytes = r == block_routes::contiguous ? p.bytes : block;
    out.push_back(std::move(p));
  }
  return out;
}

struct backend_case {
  std::string name;  // in test names
  // The backend, or nullptr with why_not set where it cannot run here.
  std::function<backend*(std::string& why_not)> get;
  std::vector<route_contract> routes;
  std::vector<std::string> kinds;  // host memory kinds, in the backend's order
  std::function<point_expectation(backend&, const point_spec&)> expect;
};

struct route_case {
  std::shared_ptr<const backend_case> backend;
  route_kind route;
  direction dir = direction::h2d;
  std::string kind;  // "none" where the route or direction uses no host memory
};

inline void PrintTo(const route_case& c, std::ostream* os) {
  *os << c.backend->name << " " << to_string(c.route) << " " << to_string(c.dir) << " " << c.kind;
}
inline void PrintTo(const std::shared_ptr<const backend_case>& c, std::ostream* os) { *os << c->name; }

// Every route x direction x kind of the case's contract.
inline std::vector<route_case> route_cases(const backend_case& b) {
  auto shared = std::make_shared<const backend_case>(b);
  std::vector<route_case> out;
  for (const auto& r : b.routes)
    for (direction d : r.directions) {
      if (!r.uses_host_memory || d == direction::d2d) {
        out.push_back({shared, r.name, d, "none"});
        continue;
      }
      for (const auto& k : b.kinds) out.push_back({shared, r.name, d, k});
    }
  return out;
}

inline std::string test_name(std::string n) {
  for (char& ch : n)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return n;
}

inline std::string route_case_name(const ::testing::TestParamInfo<route_case>& info) {
  const route_case& c = info.param;
  return test_name(c.backend->name + "_" + to_string(c.route) + "_" + to_string(c.dir) + "_" + c.kind);
}

inline std::string backend_case_name(const ::testing::TestParamInfo<std::shared_ptr<const backend_case>>& info) {
  return test_name(info.param->name);
}

inline std::string what_of(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    return x.what();
  } catch (...) {
    return "unknown exception";
  }
}

// A short run of the runner's own loop: warm-up, sizing, and a few samples,
// each poisoned before and checked after. max_samples ends it; the budget
// only bounds a slow point (generous: a loaded CI machine deschedules).
inline measure_options brief_measure() {
  measure_options o;
  o.warmup_s = 0;
  o.max_time_s = 0.05;
  o.min_samples = 2;
  o.max_samples = 3;
  return o;
}

class BackendContract : public ::testing::TestWithParam<std::shared_ptr<const backend_case>> {};

TEST_P(BackendContract, RoutesAndKindsMatchTheCase) {
  const backend_case& c = *GetParam();
  std::string why;
  backend* b = c.get(why);
  if (!b) GTEST_SKIP() << c.name << ": " << why;
  const auto routes = b->routes();
  ASSERT_EQ(routes.size(), c.routes.size());
  for (std::size_t i = 0; i < routes.size(); ++i) {
    EXPECT_EQ(routes[i].name, c.routes[i].name);
    EXPECT_EQ(routes[i].directions, c.routes[i].directions) << to_string(routes[i].name);
    EXPECT_EQ(routes[i].uses_host_memory, c.routes[i].uses_host_memory) << to_string(routes[i].name);
    EXPECT_FALSE(routes[i].description.empty()) << to_string(routes[i].name);
  }
  std::vector<std::string> kinds;
  for (const auto& k : b->host_memory_kinds()) {
    kinds.push_back(k.name);
    if (!k.available) {
      EXPECT_FALSE(k.reason.empty()) << k.name << " is unavailable without a reason";
    }
  }
  EXPECT_EQ(kinds, c.kinds);
  const auto devices = b->devices();
  ASSERT_FALSE(devices.empty());
  EXPECT_FALSE(devices[0].name.empty());
}

class BackendConformance : public ::testing::TestWithParam<route_case> {};

TEST_P(BackendConformance, VerifiesTimesAndChecksEverySampleOrSkipsWithAReason) {
  const route_case& c = GetParam();
  std::string why;
  backend* b = c.backend->get(why);
  if (!b) GTEST_SKIP() << c.backend->name << ": " << why;
  const device_info device = b->devices().at(0);
  std::string skipped;  // the last skip's reason
  int ran = 0;
  for (const point_spec& p : conformance_points(*b, c.route, c.dir, c.kind)) {
    SCOPED_TRACE(::testing::Message() << p.backend << " " << to_string(p.route) << " " << to_string(p.dir) << " "
                                      << p.host_memory << " " << p.bytes << " B" << " in blocks of " << p.block_bytes);
    const point_expectation e = c.backend->expect(*b, p);
    std::unique_ptr<transfer> t;
    try {
      t = b->prepare(p);
    } catch (const skip_point& s) {
      skipped = s.what();
      EXPECT_FALSE(e.runs) << "skipped, but the backend promises to run it: " << skipped;
      EXPECT_FALSE(skipped.empty()) << "skipped without a reason";
      if (!e.skip_mentions.empty()) {
        EXPECT_NE(skipped.find(e.skip_mentions), std::string::npos) << skipped;
      }
      continue;
    } catch (...) {
      ADD_FAILURE() << "prepare failed: " << what_of(std::current_exception());
      continue;
    }
    EXPECT_TRUE(e.runs) << "prepared, but the backend promises to skip it";
    ++ran;
    EXPECT_EQ(t->timer_kind(), e.timer);
    EXPECT_GT(t->timer_resolution_s(), 0);
    EXPECT_EQ(t->bytes_per_rep(), e.bytes_per_rep);
    EXPECT_GE(t->setup_costs().alloc_s, 0);
    try {
      t->verify();
      const sample s = t->run(3);
      EXPECT_GT(s.seconds, 0);
      EXPECT_GT(s.wall_seconds, 0);
      if (c.dir == direction::bidir) {
        ASSERT_TRUE(s.parts.count("h2d") && s.parts.count("d2h")) << "bidir times each direction";
        EXPECT_GT(s.parts.at("h2d"), 0);
        EXPECT_GT(s.parts.at("d2h"), 0);
      }
      // The per-sample check as the runner does it: healthy data passes.
      for (int i = 0; i < 2; ++i) {
        t->poison_sample();
        (void)t->run(3);
        t->check_sample();
      }
    } catch (...) {
      ADD_FAILURE() << what_of(std::current_exception());
      continue;
    }
    const std::atomic<bool> stop{false};
    const point_result r = measure(*t, p, device, brief_measure(), stop);
    EXPECT_EQ(r.status, point_status::ok) << r.reason;
    EXPECT_TRUE(r.verified);
    EXPECT_GT(r.stats.median, 0);
    // Every sample while checking is cheaper than sampling; the first always.
    EXPECT_LE(r.samples_checked, r.samples_s.size());
    EXPECT_GE(r.samples_checked, 1u);
    // A gate that could not hold is recorded, not hidden; on a healthy route
    // it is worth seeing in the log either way.
    if (!r.gate_fallback.empty()) std::cout << "[  NOTE    ] gate fell back: " << r.gate_fallback << "\n";
    try {
      t->verify();  // still correct after all of that
    } catch (...) {
      ADD_FAILURE() << "verify after measuring: " << what_of(std::current_exception());
    }
  }
  if (ran == 0) GTEST_SKIP() << skipped;
}

}  // namespace xfer::test

// Both suites over one backend case, their tests named PREFIX/...: the
// contract (BackendContract) and every route x direction x kind
// (BackendConformance). Used in namespace xfer::test; a macro because gtest's
// instantiation is one.
#define XFER_CONFORMANCE_SUITES(prefix, make_case)                                                       \
  INSTANTIATE_TEST_SUITE_P(prefix, BackendContract,                                                        \
                           ::testing::Values(std::make_shared<const backend_case>(make_case)),             \
                           backend_case_name);                                                             \
  INSTANTIATE_TEST_SUITE_P(prefix, BackendConformance, ::testing::ValuesIn(route_cases(make_case)),         \
                           route_case_name)
