// Every device at once (core/concurrent.hpp): the devices' batches overlap in
// time, the aggregate is all bytes over the shared windows, and one device's
// failure or skip is the aggregate's too while the others keep their results.
#include <gtest/gtest.h>
#include <array>
#include <functional>
#include <mutex>
#include <xfer/core/concurrent.hpp>
#include <xfer/core/errors.hpp>
#include <xfer/core/peer_matrix.hpp>
#include <xfer/core/reporter.hpp>
#include <xfer/core/system_probe.hpp>
#include <xfer/mem/kinds.hpp>

#include "fake_backend.hpp"
#include "host/host_backend.hpp"

namespace xfer {
namespace {

using clock = std::chrono::steady_clock;

// A transfer whose batches take real time (a sleep), recording when each ran.
struct timed_fake final : transfer {
  struct interval {
    clock::time_point start, end;
  };
  std::vector<interval>* runs = nullptr;  // owned by the test, one list per device
  double per_rep_s = 1e-3;
  bool throw_on_run_after = false;
  std::size_t calls = 0;
  sample run(std::size_t reps) override {
    ++calls;
    if (throw_on_run_after && calls > 3) throw std::runtime_error("device fell off the bus");
    const auto s = clock::now();
    std::this_thread::sleep_for(std::chrono::duration<double>(per_rep_s * static_cast<double>(reps)));
    const auto e = clock::now();
    if (runs) runs->push_back({s, e});
    const double t = std::chrono::duration<double>(e - s).count();
    return {t, t, {}, {}};
  }
  void verify() override {}
  void poison_sample() override {}
  void check_sample() override {}
  first_use setup_costs() const override { return {}; }
  clock_kind timer_kind() const override { return clock_kind::wall; }
  double timer_resolution_s() const override { return 1e-7; }
  std::uint64_t bytes_per_rep() const override { return 1'000'000; }
};

measure_options quick_options() {
  measure_options o;
  o.max_time_s = 0.05;
  o.warmup_s = 0;
  o.min_samples = 4;
  o.target_ci = 0.5;
  return o;
}

std::vector<point_spec> specs_for(const std::vector<int>& devices) {
  std::vector<point_spec> out;
  for (int d : devices) out.push_back({"fake", d, route_kind::copy_sync, direction::h2d, "pageable", 1'000'000, -1});
  return out;
}

TEST(Together, BatchesOfEveryDeviceOverlapAndTheAggregateIsAllBytesOverTheWindows) {
  test::fake_backend b;
  std::vector<timed_fake::interval> runs[2];
  b.make = [&](const point_spec& p) {
    auto t = std::make_unique<timed_fake>();
    // The second device is slower. Batches of tens of milliseconds: the
    // overlap checked below must not depend on how soon a loaded machine
    // schedules a thread the barrier released (a few ms with 2 busy cores).
    t->per_rep_s = p.device == 0 ? 30e-3 : 60e-3;
    t->runs = &runs[p.device];
    return t;
  };
  const std::atomic<bool> stop{false};
  bool abandoned = true;
  const auto results = measure_together(b, specs_for({0, 1}), quick_options(), stop, abandoned);
  EXPECT_FALSE(abandoned);
  ASSERT_EQ(results.size(), 3u);
  for (const auto& r : results) ASSERT_EQ(r.status, point_status::ok) << r.reason;
  EXPECT_EQ(results[0].spec.device, 0);
  EXPECT_EQ(results[1].spec.device, 1);
  const point_result& agg = results[2];
  EXPECT_EQ(agg.spec.device, -1);
  ASSERT_TRUE(agg.together);
  EXPECT_TRUE(agg.together->aggregate);
  EXPECT_EQ(agg.together->devices, (std::vector<int>{0, 1}));
  ASSERT_TRUE(results[0].together);
  EXPECT_FALSE(results[0].together->aggregate);
  // Each device took one sample per round; the aggregate has a window per round.
  EXPECT_EQ(results[0].samples_s.size(), agg.samples_s.size());
  EXPECT_EQ(results[1].samples_s.size(), agg.samples_s.size());
  EXPECT_EQ(agg.bytes_per_rep, results[0].bytes_per_rep * results[0].reps_per_sample +
                                   results[1].bytes_per_rep * results[1].reps_per_sample);
  // The rounds' batches overlap: the timed runs after warm-up pair up, and
  // each pair's intervals intersect.
  const std::size_t n = agg.samples_s.size();
  ASSERT_GE(runs[0].size(), n);
  ASSERT_GE(runs[1].size(), n);
  for (std::size_t i = 0; i < n; ++i) {
    const auto& a = runs[0][runs[0].size() - n + i];
    const auto& c = runs[1][runs[1].size() - n + i];
    EXPECT_LT(a.start, c.end) << "round " << i;
    EXPECT_LT(c.start, a.end) << "round " << i;
  }
  // A window is at least as long as the slower device's batch in it.
  for (std::size_t i = 0; i < n; ++i)
    EXPECT_GE(agg.samples_s[i] * 1.0001, results[1].samples_s[i] * static_cast<double>(results[1].reps_per_sample));
  // The sum of the devices' own rates is at least the aggregate.
  EXPECT_GE(agg.together->sum_of_devices_gbps * 1.0001, agg.gbps());
}

// Two devices at once, where device 1's transfer (from `make`) fails: device
// 0 keeps its result, device 1 and the aggregate fail; device 1's reason.
std::string device_1_fails(const std::function<std::unique_ptr<transfer>(const point_spec&)>& make) {
  test::fake_backend b;
  b.make = make;
  const std::atomic<bool> stop{false};
  bool abandoned = false;
  const auto results = measure_together(b, specs_for({0, 1}), quick_options(), stop, abandoned);
  EXPECT_EQ(results.size(), 3u);
  if (results.size() != 3) return {};
  EXPECT_EQ(results[0].status, point_status::ok) << results[0].reason;
  EXPECT_EQ(results[1].status, point_status::failed);
  EXPECT_EQ(results[2].status, point_status::failed);
  EXPECT_NE(results[2].reason.find("device 1 failed"), std::string::npos) << results[2].reason;
  return results[1].reason;
}

TEST(Together, ADeviceThatFailsFailsTheAggregateAndTheOthersKeepTheirResults) {
  const auto why = device_1_fails([](const point_spec& p) -> std::unique_ptr<transfer> {
    auto t = std::make_unique<timed_fake>();
    t->throw_on_run_after = p.device == 1;
    return t;
  });
  EXPECT_NE(why.find("fell off the bus"), std::string::npos) << why;
}

// The rounds thin the checks by the same share: a device whose copies go bad
// after its first rounds, checked only in the first, fails at the last.
TEST(Together, CorruptionAfterTheThinnedChecksFailsTheDeviceAndTheAggregate) {
  const auto why = device_1_fails([](const point_spec& p) -> std::unique_ptr<transfer> {
    auto t = std::make_unique<test::fake_transfer>();
    t->check_s = 0.1;  // far above the share: only the first round is armed
    if (p.device == 1) t->corrupt_after_runs = 2;
    return t;
  });
  EXPECT_NE(why.find("verification failed"), std::string::npos) << why;
}

TEST(Together, ADeviceThatCannotRunSkipsTheAggregate) {
  test::fake_backend b;
  b.make = [&](const point_spec& p) -> std::unique_ptr<transfer> {
    if (p.device == 0) throw skip_point("no pinned memory here");
    return std::make_unique<timed_fake>();
  };
  const std::atomic<bool> stop{false};
  bool abandoned = false;
  const auto results = measure_together(b, specs_for({0, 1}), quick_options(), stop, abandoned);
  ASSERT_EQ(results.size(), 3u);
  EXPECT_EQ(results[0].status, point_status::skipped);
  EXPECT_EQ(results[1].status, point_status::ok) << results[1].reason;
  EXPECT_EQ(results[2].status, point_status::skipped);
  EXPECT_NE(results[2].reason.find("no pinned memory here"), std::string::npos);
}

TEST(Together, AHungDeviceIsLeftBehindAtTheWatchdogsBound) {
  test::fake_backend b;
  static std::atomic<bool> released{false};  // outlives the abandoned thread
  b.make = [&](const point_spec& p) {
    auto t = std::make_unique<test::fake_transfer>();
    if (p.device == 1) t->released = &released;
    return t;
  };
  auto o = quick_options();
  o.watchdog_s = 0.5;
  const std::atomic<bool> stop{false};
  bool abandoned = false;
  const auto results = measure_together(b, specs_for({0, 1}), o, stop, abandoned);
  EXPECT_TRUE(abandoned);
  ASSERT_EQ(results.size(), 3u);
  for (const auto& r : results) {
    EXPECT_EQ(r.status, point_status::failed);
    EXPECT_NE(r.reason.find("watchdog"), std::string::npos) << r.reason;
  }
  released = true;  // let the left-behind thread finish
  std::this_thread::sleep_for(std::chrono::seconds(1));
}

TEST(Together, AGroupStoppedBySignalIsNoResult) {
  test::fake_backend b;
  b.make = [&](const point_spec&) { return std::make_unique<timed_fake>(); };
  auto o = quick_options();
  o.target_ci = 1e-9;  // never converges: only the stop ends it
  o.max_time_s = 10;
  std::atomic<bool> stop{false};
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    stop = true;
  });
  bool abandoned = false;
  const auto results = measure_together(b, specs_for({0, 1}), o, stop, abandoned);
  stopper.join();
  ASSERT_EQ(results.size(), 3u);
  for (const auto& r : results) {
    EXPECT_EQ(r.status, point_status::failed);
    EXPECT_NE(r.reason.find("interrupted"), std::string::npos) << r.reason;
  }
}

TEST(Together, GroupsCollectTheSamePointAcrossDevices) {
  std::vector<planned_point> pts;
  for (std::uint64_t bytes : {4096u, 65536u})
    for (int d : {0, 1, 2}) pts.push_back({{"fake", d, route_kind::copy_sync, direction::h2d, "pageable", bytes, -1}, ""});
  const auto groups = group_across_devices(pts);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].size(), 3u);
  EXPECT_EQ(groups[0][2].spec.device, 2);
  EXPECT_EQ(groups[1][0].spec.bytes, 65536u);
}

// The host backend's stand-in devices, driven at once for real.
TEST(Together, HostStandInDevicesMoveAndVerifyTheirDataAtOnce) {
  host::host_backend b(1, mem::kind_options{}, 3);
  ASSERT_EQ(b.devices().size(), 3u);
  for (direction d : {direction::h2d, direction::d2h, direction::bidir}) {
    std::vector<point_spec> specs;
    for (int dev : {0, 1, 2}) specs.push_back({"host", dev, route_kind::memcpy, d, "pageable", 1 << 20, -1});
    const std::atomic<bool> stop{false};
    bool abandoned = false;
    const auto results = measure_together(b, specs, quick_options(), stop, abandoned);
    ASSERT_EQ(results.size(), 4u);
    for (const auto& r : results) {
      EXPECT_EQ(r.status, point_status::ok) << to_string(d) << ": " << r.reason;
      EXPECT_TRUE(r.verified);
      EXPECT_GE(r.samples_checked, 1u);
    }
    EXPECT_GT(results[3].gbps(), 0);
  }
}

TEST(PeerMatrix, HostStandInsCopyBetweenEveryPairAndSayHow) {
  host::host_backend b(1, mem::kind_options{}, 2);
  collecting_reporter out;
  std::vector<point_result> results;
  const std::atomic<bool> stop{false};
  const auto o = run_peer_matrix(b, peer_points("host", {0, 1}, {65536}), quick_options(), out, stop, results);
  EXPECT_EQ(o.ok, 4u);
  ASSERT_EQ(results.size(), 4u);
  for (const auto& r : results) {
    EXPECT_EQ(r.status, point_status::ok) << r.reason;
    EXPECT_EQ(r.spec.route, route_kind::peer);
    EXPECT_TRUE(r.verified);
    EXPECT_NE(r.peer_path.find("peer"), std::string::npos);
  }
  EXPECT_EQ(results[1].spec.device, 0);
  EXPECT_EQ(results[1].spec.peer, 1);
  const std::string text = peer_matrix_text(results);
  EXPECT_NE(text.find("host peer matrix, 64K"), std::string::npos) << text;
  EXPECT_NE(text.find("0->1"), std::string::npos) << text;
}

TEST(PeerMatrix, ABackendWithoutPeerCopiesSkipsWithTheReason) {
  test::fake_backend b;
  collecting_reporter out;
  std::vector<point_result> results;
  const std::atomic<bool> stop{false};
  const auto o = run_peer_matrix(b, peer_points("fake", {0, 1}, {4096}), quick_options(), out, stop, results);
  EXPECT_EQ(o.skipped, 4u);
  EXPECT_NE(results[0].reason.find("does not copy between its devices"), std::string::npos);
}

// A pair that cannot fit is skipped with the reason before anything is
// allocated (peer -b host --host-devices 2 --sizes 20G was ended by the
// kernel's OOM killer with nothing written): the sweep's check, per device.
TEST(PeerMatrix, APairAboveADevicesLargestAllocationIsSkippedWithTheReason) {
  test::fake_backend b;
  for (auto& d : b.device_list) d.max_alloc_bytes = 1 << 20;
  collecting_reporter out;
  std::vector<point_result> results;
  const std::atomic<bool> stop{false};
  const auto o = run_peer_matrix(b, peer_points("fake", {0, 1}, {2 << 20}), quick_options(), out, stop, results);
  EXPECT_EQ(o.skipped, 4u);
  ASSERT_EQ(out.points.size(), 4u);  // reported, so written
  EXPECT_NE(results[0].reason.find("exceeds the largest allocation device 0"), std::string::npos) << results[0].reason;
}

// Host stand-ins share the host's memory: each buffer may fit alone while the
// pair does not.
TEST(PeerMatrix, HostStandInsNeedBothBuffersInTheHostsMemory) {
  std::vector<device_info> devices(2);
  for (int i : {0, 1}) {
    devices[i].index = i;
    devices[i].type = "cpu";
    devices[i].max_alloc_bytes = 30ull << 30;
  }
  auto p = peer_points("host", {0, 1}, {20ull << 30})[1];
  EXPECT_EQ(peer_unfit_reason(p, devices, 30ull << 30),
            "needs 2 buffers of 20G (21474836480 B each) in host memory; only 32212254720 B of memory is available");
  EXPECT_EQ(peer_unfit_reason(p, devices, 0), "");  // unknown: not guessed
  devices[1].type = "gpu";  // a device's own memory for the destination
  EXPECT_EQ(peer_unfit_reason(p, devices, 30ull << 30), "");
  p.bytes = 40ull << 30;
  EXPECT_NE(peer_unfit_reason(p, devices, 0).find("exceeds the largest allocation device 0"), std::string::npos);
}

// The real host backend, asked for three quarters of the available memory
// per buffer: skipped, nothing allocated.
TEST(PeerMatrix, HostStandInsSkipAPairThatWouldExhaustMemory) {
  const std::uint64_t available = available_memory_bytes();
  if (!available) GTEST_SKIP() << "MemAvailable unknown here";
  host::host_backend b(1, mem::kind_options{}, 2);
  collecting_reporter out;
  std::vector<point_result> results;
  const std::atomic<bool> stop{false};
  const auto o = run_peer_matrix(b, peer_points("host", {0, 1}, {available / 4 * 3}), quick_options(), out, stop,
                                 results);
  EXPECT_EQ(o.skipped, 4u);
  EXPECT_EQ(o.ok + o.failed, 0u);
}

// ---- devices at once: the drift fixed ------------------------------------------------

// A route whose transfer moves nothing that could be checked (XRT's bo.sync
// under its no-op emulation shim): it says so, and says how it runs.
struct counts {
  std::atomic<int> verifies{0}, poisons{0}, checks{0};
};
struct unverifiable final : transfer {
  counts* seen = nullptr;
  sample run(std::size_t reps) override {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    const double t = 1e-4 * static_cast<double>(reps);
    return {t, t, {}, {}};
  }
  void verify() override { ++seen->verifies; }
  void poison_sample() override { ++seen->poisons; }
  void check_sample() override { ++seen->checks; }
  bool verifies_data() const override { return false; }
  std::string note() const override { return "the shim's bo.sync moves nothing"; }
  first_use setup_costs() const override { return {}; }
  clock_kind timer_kind() const override { return clock_kind::wall; }
  double timer_resolution_s() const override { return 1e-7; }
  std::uint64_t bytes_per_rep() const override { return 4096; }
};

// Devices 0 and 1 of `b` at once, a group that must come back whole.
std::vector<point_result> two_at_once(test::fake_backend& b) {
  const std::atomic<bool> stop{false};
  bool abandoned = true;
  auto results = measure_together(b, specs_for({0, 1}), quick_options(), stop, abandoned);
  EXPECT_FALSE(abandoned);
  EXPECT_EQ(results.size(), 3u);
  for (const auto& r : results) EXPECT_EQ(r.status, point_status::ok) << r.reason;
  return results;
}

TEST(Together, ARouteThatMovesNothingCheckableIsNeverMarkedVerified) {
  test::fake_backend b;
  counts seen;
  b.make = [&](const point_spec&) {
    auto t = std::make_unique<unverifiable>();
    t->seen = &seen;
    return t;
  };
  const auto results = two_at_once(b);
  ASSERT_EQ(results.size(), 3u);
  for (const auto& r : results) {
    EXPECT_FALSE(r.verified) << r.device_name;
    EXPECT_EQ(r.samples_checked, 0u) << r.device_name;
    EXPECT_EQ(r.note, "the shim's bo.sync moves nothing") << r.device_name;
  }
  EXPECT_TRUE(results[2].together->aggregate);
  EXPECT_EQ(seen.verifies + seen.poisons + seen.checks, 0);
}

TEST(Together, AnEmulatedDeviceKeepsItsLabelAndSoDoesTheAggregate) {
  test::fake_backend b;
  for (auto& d : b.device_list) d.details["emulation"] = "noop";
  const auto results = two_at_once(b);
  ASSERT_EQ(results.size(), 3u);
  for (const auto& r : results) {
    EXPECT_EQ(r.emulation, "noop") << r.device_name;
    EXPECT_NE(r.reason.find("emulated (noop)"), std::string::npos) << r.reason;
  }
  // A plan's skip keeps the label beside its own reason.
  std::vector<planned_point> planned;
  for (const auto& p : specs_for({0, 1})) planned.push_back({p, "no pinned memory here"});
  collecting_reporter out;
  const std::atomic<bool> stop{false};
  run_together(b, planned, quick_options(), out, stop);
  ASSERT_EQ(out.points.size(), 3u);
  for (const auto& r : out.points) {
    EXPECT_EQ(r.status, point_status::skipped);
    EXPECT_EQ(r.emulation, "noop") << r.device_name;
  }
}

// ---- the peer matrix under the watchdog -----------------------------------------------

// A backend whose copy from device 0 to device 1 never returns until
// released; the test waits for that thread before the backend goes away.
struct hanging_peer final : backend {
  test::fake_backend base;
  std::atomic<bool> released{false}, hung_one_gone{false};
  ~hanging_peer() override {
    released = true;
    while (!hung_one_gone) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::string name() const override { return base.name(); }
  std::string description() const override { return base.description(); }
  std::vector<device_info> devices() const override { return base.devices(); }
  std::vector<route_info> routes() const override { return base.routes(); }
  std::vector<kind_support> host_memory_kinds() const override { return base.host_memory_kinds(); }
  std::unique_ptr<transfer> prepare(const point_spec& p) override { return base.prepare(p); }
  peer_copy prepare_peer(const point_spec& p) override {
    auto t = std::make_unique<test::fake_transfer>();
    if (p.device == 0 && p.peer == 1) {
      t->released = &released;
      t->on_destroy = [this] { hung_one_gone = true; };
    }
    return {std::move(t), "peer"};
  }
};

TEST(PeerMatrix, ACopyThatNeverReturnsFailsAtTheWatchdogsBoundAndTheBackendIsLeftBehind) {
  const std::atomic<bool> stop{false};  // outlives the abandoned thread, which reads it once released
  hanging_peer b;
  collecting_reporter out;
  std::vector<point_result> results;
  auto o = quick_options();
  o.watchdog_s = 0.3;
  const auto t0 = std::chrono::steady_clock::now();
  const auto outcome = run_peer_matrix(b, peer_points("fake", {0, 1}, {4096}), o, out, stop, results);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  // One copy done, the hung one failed, the two after it skipped; the backend is left behind.
  EXPECT_EQ((std::array{outcome.ok, outcome.failed, outcome.skipped}), (std::array<std::size_t, 3>{1, 1, 2}));
  EXPECT_TRUE(outcome.abandoned && !outcome.interrupted);
  ASSERT_EQ(results.size(), 4u);
  EXPECT_EQ(results[0].status, point_status::ok) << results[0].reason;
  EXPECT_EQ(results[0].peer_path, "peer");
  EXPECT_EQ(results[1].status, point_status::failed);
  EXPECT_NE(results[1].reason.find("no result after 0.3 s, the watchdog's bound"), std::string::npos)
      << results[1].reason;
  for (std::size_t i : {2u, 3u}) {
    EXPECT_EQ(results[i].status, point_status::skipped);
    EXPECT_NE(results[i].reason.find("still stuck in an earlier point (peer d2d none 4096 B)"), std::string::npos)
        << results[i].reason;
  }
  EXPECT_EQ(out.points.size(), 4u);
}

}  // namespace
}  // namespace xfer

namespace xfer {
namespace {

// Which devices the peer matrix measures: the named ones each backend has.
TEST(PeerDevices, NamedIndicesPickEachBackendsDevicesAndAnUnknownOneIsBadInput) {
  test::fake_backend a, b;
  a.backend_name = "a";
  b.backend_name = "b";
  b.device_list.resize(1);  // b has only device 0
  auto runs = select_peer_devices({&a, &b}, {});
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].devices, (std::vector<int>{0, 1}));
  EXPECT_EQ(runs[1].devices, (std::vector<int>{0}));
  runs = select_peer_devices({&a, &b}, {1});
  ASSERT_EQ(runs.size(), 1u) << "a backend with none of the named devices is left out";
  EXPECT_EQ(runs[0].impl, &a);
  EXPECT_EQ(runs[0].devices, (std::vector<int>{1}));
  try {
    select_peer_devices({&a, &b}, {0, 7});
    ADD_FAILURE() << "no usage_error";
  } catch (const usage_error& e) {
    EXPECT_STREQ(e.what(), "--device 7: no chosen backend has a device 7");
  }
  EXPECT_THROW(check_device_indices({0, -1}), usage_error);
  EXPECT_THROW(select_peer_devices({&a}, {-1}), usage_error);
}

}  // namespace
}  // namespace xfer
