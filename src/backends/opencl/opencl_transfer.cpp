// The base every OpenCL route builds on (opencl_transfer.hpp), and the factory
// that picks the route family for a point.
#include "opencl_transfer.hpp"

#include <algorithm>
#include <chrono>
#include <fmt/format.h>
#include <stdexcept>
#include <utility>
#include <xfer/core/errors.hpp>
#include <xfer/core/pattern.hpp>
#include <xfer/core/sample_check.hpp>

namespace xfer::opencl {
namespace {

using clock = std::chrono::steady_clock;

// How long a gate may stay closed before we conclude an enqueue is blocked
// behind it. Enqueueing a full sub-batch takes a few milliseconds.
constexpr std::chrono::milliseconds gate_deadline{50};

// A device buffer mapped for the CPU (fill, poison, check), unmapped on scope exit.
class mapping {
 public:
  mapping(cl_command_queue q, cl_mem m, cl_map_flags flags, std::size_t n) : q_(q), m_(m), n_(n) {
    cl_int rc = CL_SUCCESS;
    p_ = clEnqueueMapBuffer(q, m, CL_TRUE, flags, 0, n, 0, nullptr, nullptr, &rc);
    check(rc, "clEnqueueMapBuffer", fmt::format("device buffer, {} B", n));
  }
  ~mapping() {
    if (p_) {
      clEnqueueUnmapMemObject(q_, m_, p_, 0, nullptr, nullptr);
      clFinish(q_);
    }
  }
  mapping(const mapping&) = delete;
  mapping& operator=(const mapping&) = delete;
  std::byte* data() const { return static_cast<std::byte*>(p_); }
  void unmap() {
    void* p = std::exchange(p_, nullptr);
    check(clEnqueueUnmapMemObject(q_, m_, p, 0, nullptr, nullptr), "clEnqueueUnmapMemObject",
          fmt::format("device buffer, {} B", n_));
    check(clFinish(q_), "clFinish", "after unmapping a device buffer");
  }

 private:
  cl_command_queue q_;
  cl_mem m_;
  std::size_t n_;
  void* p_ = nullptr;
};

// Opens a host block for the CPU for one scope, where the route keeps it closed.
class host_access {
 public:
  host_access(host_block& b, bool already_open) : b_(already_open ? nullptr : &b) {
    if (b_) b_->open();
  }
  ~host_access() {
    if (b_) try {
        b_->close();
      } catch (...) {
      }
  }
  host_access(const host_access&) = delete;
  host_access& operator=(const host_access&) = delete;

 private:
  host_block* b_;
};

}  // namespace

opencl_transfer::opencl_transfer(const point_spec& p, const device_context& dev, const mem::kind_options& kinds,
                                 bool host_open, bool events)
    : spec_(p),
      caps_(dev.caps),
      ctx_(dev.ctx),
      queues_{dev.queues[0], dev.queues[1]},
      events_(events),
      host_open_(host_open) {
  allocate(kinds);
  touch();
  if (!host_open_)
    for (auto* b : {host_a_.get(), host_b_.get()})
      if (b) b->close();
  if (events_) gate_ = std::make_unique<user_event_gate>(ctx_, gate_deadline);
  loop_ = std::make_unique<timed_batches>(events_ ? static_cast<gate&>(*gate_) : no_gate_);
}

opencl_transfer::~opencl_transfer() {
  // Nothing may still run on (or wait to run on) the buffers released below.
  if (gate_) gate_->open();
  for (auto& q : queues_) clFinish(q.get());
}

// Core verifies (src/core/verify.cpp) the places of the direction: a device
// buffer through a map, a host block as it is (opened for the CPU and closed
// again where the route keeps it unmapped, as kernel-host does). run() has
// waited for the batch (every lane), so nothing still writes there.
std::span<const sample_destination> opencl_transfer::places() const { return sample_destinations(spec_.dir); }

void opencl_transfer::reach_place(const sample_destination& d, place_access a,
                                  const std::function<void(std::span<std::byte>)>& use) {
  if (d.on_device) {
    const cl_map_flags flags = a == place_access::overwrite ? overwrite()
                               : a == place_access::read    ? CL_MAP_READ
                                                            : CL_MAP_READ | CL_MAP_WRITE;
    mapping map(queues_[0].get(), (d.buffer ? dev_b_ : dev_a_).get(), flags, spec_.bytes);
    use({map.data(), spec_.bytes});
    map.unmap();
    return;
  }
  host_block& b = d.buffer ? *host_b_ : *host_a_;
  host_access access(b, host_open_);
  use({b.data(), spec_.bytes});
}

double opencl_transfer::timer_resolution_s() const {
  return events_ ? caps_.timer_resolution_s() : wall_timer().resolution_s();
}

std::uint64_t opencl_transfer::bytes_per_rep() const {
  return spec_.dir == direction::bidir || spec_.dir == direction::rw ? 2 * spec_.bytes : spec_.bytes;
}

// ---- setup ----

void opencl_transfer::allocate(const mem::kind_options& kinds) {
  const std::size_t n = spec_.bytes;
  const auto t0 = clock::now();
  auto host = [&] {
    auto b = make_host_block(spec_.host_memory, n, ctx_, queues_[0], kinds);
    b->open();  // the CPU fills it next; maps (and, for ALLOC_HOST_PTR, pins) now
    return b;
  };
  auto device = [&] {
    cl_int rc = CL_SUCCESS;
    mem_object m(clCreateBuffer(ctx_.get(), CL_MEM_READ_WRITE, n, nullptr, &rc));
    check(rc, "clCreateBuffer", fmt::format("device buffer, {} B", n));
    return m;
  };
  switch (spec_.dir) {
    case direction::h2d:
    case direction::d2h:
    case direction::rw:
      host_a_ = host();
      dev_a_ = device();
      break;
    case direction::bidir:
      host_a_ = host();
      host_b_ = host();
      dev_a_ = device();
      dev_b_ = device();
      break;
    case direction::d2d:
      dev_a_ = device();
      dev_b_ = device();
      break;
  }
  costs_.alloc_s = seconds_since(t0);
}

// Sources get the pattern; device destinations are written too, because
// drivers allocate device memory lazily and a point that cannot have its
// memory should find out here (and be skipped), not in the middle of sampling.
void opencl_transfer::touch() {
  const auto t0 = clock::now();
  fill_sources(spec_.dir, spec_.bytes, [&](int b, std::uint64_t seed) { fill_device(b ? dev_b_ : dev_a_, seed); },
               [&](int b) { return (b ? host_b_ : host_a_)->data(); });
  for (const auto& d : sample_destinations(spec_.dir))
    if (d.poisoned && d.on_device) poison_device(d.buffer ? dev_b_ : dev_a_);
  costs_.touch_s = seconds_since(t0);
}

// ---- commands ----

void opencl_transfer::set_ops(std::vector<queue_op> ops) {
  ops_ = std::move(ops);
  lanes_ = 1;
  for (const auto& op : ops_) lanes_ = std::max(lanes_, op.lane + 1);
  // The gate holds each queue's commands: a sub-batch is bounded by the busiest queue.
  std::size_t ops_per_lane = 0;
  for (std::size_t l = 0; l < lanes_; ++l)
    ops_per_lane = std::max<std::size_t>(
        ops_per_lane, std::count_if(ops_.begin(), ops_.end(), [&](const queue_op& op) { return op.lane == l; }));
  loop_ = std::make_unique<timed_batches>(events_ ? static_cast<gate&>(*gate_) : no_gate_, ops_per_lane);
}

// ---- running ----

sample opencl_transfer::run_gated(std::size_t reps) {
  std::vector<cl_command_queue> lanes;
  for (std::size_t l = 0; l < lanes_; ++l) lanes.push_back(queues_[l].get());
  std::vector<std::string> lane_names;
  if (spec_.dir == direction::bidir) lane_names = {"h2d", "d2h"};
  event_span_timer timer(lanes, caps_.timer_resolution_s(), lane_names);
  // Per lane: which op of a repetition is its first and its last.
  std::size_t first_op[2] = {ops_.size(), ops_.size()}, last_op[2] = {0, 0};
  for (std::size_t k = 0; k < ops_.size(); ++k) {
    const std::size_t l = ops_[k].lane;
    if (first_op[l] == ops_.size()) first_op[l] = k;
    last_op[l] = k;
  }
  return loop_->run(timer, reps, [&](std::size_t i, std::size_t n) {
    for (std::size_t k = 0; k < ops_.size(); ++k) {
      const std::size_t l = ops_[k].lane;
      const bool first = i == 0 && k == first_op[l];
      const bool last = i + 1 == n && k == last_op[l];
      // Null while the gate is open (a batch the loop runs ungated).
      const cl_event hold = gate_->wait_event();
      const bool wait = first && hold;
      cl_event e = nullptr;
      ops_[k].enqueue(queues_[l].get(), CL_FALSE, wait ? 1 : 0, wait ? &hold : nullptr, first || last ? &e : nullptr);
      if (first || last) {
        event ev(e);
        if (first) timer.first(l, ev);
        if (last) timer.last(l, std::move(ev));
      }
    }
  });
}

// What a straightforward program does: blocking calls, timed by the clock on the wall.
sample opencl_transfer::run_blocking(std::size_t reps) {
  wall_timer timer;
  return loop_->run(timer, reps, [&](std::size_t, std::size_t) {
    for (auto& op : ops_) op.enqueue(queues_[op.lane].get(), CL_TRUE, 0, nullptr, nullptr);
  });
}

void opencl_transfer::run_step(std::size_t k) {
  const auto& op = ops_.at(k);
  op.enqueue(queues_[op.lane].get(), events_ ? CL_FALSE : CL_TRUE, 0, nullptr, nullptr);
  check(clFinish(queues_[op.lane].get()), "clFinish", "after one verification step");
}

// ---- data ----

cl_map_flags opencl_transfer::overwrite() const {
  return caps_.major > 1 || caps_.minor >= 2 ? CL_MAP_WRITE_INVALIDATE_REGION : CL_MAP_WRITE;
}

void opencl_transfer::fill_device(const mem_object& m, std::uint64_t seed) {
  mapping map(queues_[0].get(), m.get(), overwrite(), spec_.bytes);
  fill_pattern(map.data(), spec_.bytes, seed);
  map.unmap();
}

void opencl_transfer::poison_device(const mem_object& m) {
  mapping map(queues_[0].get(), m.get(), overwrite(), spec_.bytes);
  poison(map.data(), spec_.bytes);
  map.unmap();
}

// ---- the factory ----

bool corrupt_destination_for_testing(transfer& t, std::size_t which, std::size_t offset) {
  return corrupt_place_for_testing(t, which, offset);
}

std::unique_ptr<transfer> make_transfer(const point_spec& p, route_id route, const device_context& dev,
                                        const mem::kind_options& kinds) {
  if (route == route_id::copy_async || route == route_id::copy_sync) return make_copy_transfer(p, route, dev, kinds);
  if (route == route_id::kernel_host || route == route_id::kernel_device) return make_kernel_transfer(p, dev, kinds);
  if (route == own_routes::map) return make_map_transfer(p, dev, kinds);
  if (route == own_routes::blocks_list) return make_block_list_transfer(p, dev, kinds);
  // Any other backend's route: the plan never hands it here.
  throw std::logic_error(std::string("make_transfer: OpenCL has no route ") + to_string(route));
}

}  // namespace xfer::opencl
