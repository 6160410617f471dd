#pragma once
// A scriptable backend for core tests: each transfer reports a fixed time per
// repetition (optionally with jitter) and can be told to fail.
#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <xfer/core/backend.hpp>
#include <xfer/core/errors.hpp>

namespace xfer::test {

struct fake_transfer final : transfer {
  std::function<double(std::size_t call)> seconds_per_rep = [](std::size_t) { return 1e-3; };
  bool fail_verify = false;
  bool throw_on_run = false;
  // A transfer that never returns: run() blocks until *released is true.
  std::atomic<bool>* released = nullptr;
  std::function<void()> on_destroy;
  std::size_t calls = 0;
  std::uint64_t bytes = 1000;
  // What note() says (how the point ran; it may change as it runs). Unset: nothing.
  std::function<std::string()> describe;

  ~fake_transfer() override {
    if (on_destroy) on_destroy();
  }
  sample run(std::size_t reps) override {
    if (throw_on_run) throw std::runtime_error("device fell off the bus");
    while (released && !released->load()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    const double t = seconds_per_rep(calls++) * reps;
    if (arms > 0 && runs_since_first_arm++ >= corrupt_after_runs) left_corrupt = true;
    return {t, t * 1.5, {}, {}};
  }
  // fail_check_from: the first timed sample (counting arm calls from 1)
  // whose check finds corrupted data; 0: none.
  std::size_t fail_check_from = 0;
  std::size_t arms = 0, checks = 0;
  // corrupt_after_runs: a transfer that goes bad late. The first this many
  // runs from the first timed sample on leave good data, every later one bad
  // data, poisoned or not (check_sample then throws). Unset: never.
  std::size_t corrupt_after_runs = std::size_t(-1), runs_since_first_arm = 0;
  bool left_corrupt = false;
  // How long poisoning and checking a sample take (a large buffer on one CPU core).
  double check_s = 0;
  void verify() override {
    if (fail_verify) throw verification_error("byte 3 differs");
  }
  void poison_sample() override { ++arms; }
  void check_sample() override {
    ++checks;
    if (check_s > 0) std::this_thread::sleep_for(std::chrono::duration<double>(check_s));
    if (left_corrupt) throw verification_error("sample's last transfer: byte 0 differs");
    if (fail_check_from && arms >= fail_check_from) throw verification_error("sample's last transfer: byte 7 differs");
  }
  std::string note() const override { return describe ? describe() : std::string(); }
  first_use setup_costs() const override { return {0.5, 0.25, -1}; }
  clock_kind timer_kind() const override { return clock_kind::event; }
  double timer_resolution_s() const override { return 1e-6; }
  std::uint64_t bytes_per_rep() const override { return bytes; }
};

struct fake_backend final : backend {
  std::function<std::unique_ptr<transfer>(const point_spec&)> make = [](const point_spec&) {
    return std::make_unique<fake_transfer>();
  };
  std::string name() const override { return backend_name; }
  std::string description() const override { return "test double"; }
  std::vector<device_info> device_list{
      {.index = 0, .name = "dev0", .type = "gpu", .memory_bytes = 0, .max_alloc_bytes = 0, .details = {}, .unavailable_kinds = {}},
      {.index = 1, .name = "dev1", .type = "gpu", .memory_bytes = 0, .max_alloc_bytes = 0, .details = {}, .unavailable_kinds = {}}};
  std::string backend_name = "fake";
  std::vector<device_info> devices() const override { return device_list; }
  std::vector<route_info> routes() const override {
    using enum direction;
    return {{route_kind::copy_sync, "", {h2d, d2h, bidir, rw, d2d}, true}, {route_kind::kernel_host, "", {h2d, d2h}, true}};
  }
  std::vector<kind_support> host_memory_kinds() const override {
    return {{"pageable", true, "", ""}, {"pinned", false, "no driver", ""}};
  }
  std::unique_ptr<transfer> prepare(const point_spec& p) override { return make(p); }
};

}  // namespace xfer::test
