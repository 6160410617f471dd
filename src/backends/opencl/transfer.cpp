// The one transfer class behind every OpenCL route: buffers, the commands one
// repetition enqueues, and the three ways of timing them (gated + events,
// blocking + wall clock, map/memcpy/unmap + wall clock per part).
#include <algorithm>
#include <chrono>
#include <cstring>
#include <exception>
#include <fmt/format.h>
#include <functional>
#include <stdexcept>
#include <xfer/core/errors.hpp>
#include <xfer/core/pattern.hpp>
#include <xfer/core/timing.hpp>

#include "gate.hpp"
#include "host_memory.hpp"
#include "program.hpp"
#include "routes.hpp"

namespace xfer::opencl {
namespace {

using clock = std::chrono::steady_clock;

constexpr std::uint64_t seed_h2d = 1, seed_d2h = 2;

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

bool uses_events(route_id r) {
  return r == route_id::copy_async || r == route_id::kernel_host || r == route_id::kernel_device;
}

class cl_transfer final : public transfer {
 public:
  cl_transfer(const point_spec& p, route_id route, const device_context& dev, const mem::kind_options& kinds)
      : spec_(p), route_(route), caps_(dev.caps), ctx_(dev.ctx), queues_{dev.queues[0], dev.queues[1]} {
    // Kernels need the host memory unmapped while they run; every other route
    // keeps it mapped (a plain host pointer) for its whole life.
    host_open_ = route != route_id::kernel_host;
    allocate(kinds);
    touch();
    if (!host_open_)
      for (auto* b : {host_a_.get(), host_b_.get()})
        if (b) b->close();
    if (route == route_id::kernel_host || route == route_id::kernel_device) make_kernels(dev.copy_program);
    build_ops();
    if (uses_events(route_)) gate_ = std::make_unique<user_event_gate>(ctx_, gate_deadline);
  }

  ~cl_transfer() override {
    // Nothing may still run on (or wait to run on) the buffers released below.
    if (gate_) gate_->open();
    for (auto& q : queues_) clFinish(q.get());
  }

  sample run(std::size_t reps) override {
    switch (route_) {
      case route_id::copy_sync: return run_blocking(reps);
      case route_id::map: return run_map(reps);
      default: return run_gated(reps);
    }
  }

  void verify() override {
    if (spec_.dir != direction::rw) {
      poison_sample();
      run(1);
      check_sample();
      return;
    }
    // rw: write, then clear the host side and read back: what returns can
    // only have come through the device buffer. A whole sample cannot be
    // checked this way (its read-back lands in its own source);
    // poison_sample/check_sample do what they can there.
    poison_device(dev_a_);
    run_step(0);
    poison_host(*host_a_);
    run_step(1);
    check_host(*host_a_, seed_h2d, "rw read-back destination (host memory)");
  }

  // What a sample writes, poisoned through the same helpers verify uses: a
  // map of the device buffer, or the host block (opened for the CPU and
  // closed again where the route keeps it unmapped, as kernel-host does).
  void poison_sample() override {
    switch (spec_.dir) {
      case direction::h2d:
      // rw reads back into its own source, which must keep the pattern: only
      // the write side can be poisoned.
      case direction::rw: poison_device(dev_a_); break;
      case direction::d2h: poison_host(*host_a_); break;
      case direction::bidir:
        poison_device(dev_a_);
        poison_host(*host_b_);
        break;
      case direction::d2d: poison_device(dev_b_); break;
    }
  }

  // What the batch's last transfer left; run() has waited for the batch
  // (every lane), so nothing still writes here.
  void check_sample() override {
    switch (spec_.dir) {
      case direction::h2d: check_device(dev_a_, seed_h2d, "h2d destination (device buffer)"); break;
      case direction::d2h: check_host(*host_a_, seed_d2h, "d2h destination (host memory)"); break;
      case direction::rw:
        // The device side tells a write that did not land; the host side a
        // read-back that brought something else (one that never ran leaves
        // the source there, which no check after the fact can tell).
        check_device(dev_a_, seed_h2d, "rw write destination (device buffer)");
        check_host(*host_a_, seed_h2d, "rw read-back destination (host memory)");
        break;
      case direction::bidir:
        check_device(dev_a_, seed_h2d, "bidir h2d destination (device buffer)");
        check_host(*host_b_, seed_d2h, "bidir d2h destination (host memory)");
        break;
      case direction::d2d: check_device(dev_b_, seed_d2h, "d2d destination (device buffer)"); break;
    }
  }

  // For tests (corrupt_destination_for_testing): flips the byte at `offset`
  // of destination `which`, numbered as check_sample() checks them; false when
  // there is no such destination.
  bool corrupt_destination(std::size_t which, std::size_t offset) {
    if (offset >= spec_.bytes) throw std::out_of_range("corrupt_destination: offset past the buffer");
    const mem_object* dev = nullptr;
    host_block* host = nullptr;
    switch (spec_.dir) {
      case direction::h2d:
        if (which == 0) dev = &dev_a_;
        break;
      case direction::d2h:
        if (which == 0) host = host_a_.get();
        break;
      case direction::rw:
        if (which == 0) dev = &dev_a_;
        if (which == 1) host = host_a_.get();
        break;
      case direction::bidir:
        if (which == 0) dev = &dev_a_;
        if (which == 1) host = host_b_.get();
        break;
      case direction::d2d:
        if (which == 0) dev = &dev_b_;
        break;
    }
    if (dev) {
      mapping map(queues_[0].get(), dev->get(), CL_MAP_READ | CL_MAP_WRITE, spec_.bytes);
      map.data()[offset] ^= std::byte{0xff};
      map.unmap();
    } else if (host) {
      host_access access(*host, host_open_);
      host->data()[offset] ^= std::byte{0xff};
    }
    return dev || host;
  }

  first_use setup_costs() const override { return costs_; }
  std::string timer_kind() const override { return uses_events(route_) ? "event" : "wall"; }
  double timer_resolution_s() const override {
    return uses_events(route_) ? caps_.timer_resolution_s() : wall_timer().resolution_s();
  }
  std::uint64_t bytes_per_rep() const override {
    return spec_.dir == direction::bidir || spec_.dir == direction::rw ? 2 * spec_.bytes : spec_.bytes;
  }

 private:
  using enqueue_fn = std::function<void(cl_command_queue, cl_bool blocking, cl_uint n_wait, const cl_event* wait,
                                        cl_event* out)>;
  struct queue_op {
    std::size_t lane;
    enqueue_fn enqueue;
  };
  struct map_parts {
    double map = 0, memcpy = 0, unmap = 0;
  };
  using host_op = std::function<void(map_parts&)>;

  // ---- setup ----

  void allocate(const mem::kind_options& kinds) {
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
  void touch() {
    const auto t0 = clock::now();
    switch (spec_.dir) {
      case direction::h2d:
      case direction::rw:
        fill_pattern(host_a_->data(), spec_.bytes, seed_h2d);
        poison_device(dev_a_);
        break;
      case direction::d2h: fill_device(dev_a_, seed_d2h); break;
      case direction::bidir:
        fill_pattern(host_a_->data(), spec_.bytes, seed_h2d);
        poison_device(dev_a_);
        fill_device(dev_b_, seed_d2h);
        break;
      case direction::d2d:
        fill_device(dev_a_, seed_d2h);
        poison_device(dev_b_);
        break;
    }
    costs_.touch_s = seconds_since(t0);
  }

  // One kernel object per command, each with its own arguments.
  kernel copy_kernel(const program& prog, const std::function<void(cl_kernel, cl_uint)>& src,
                     const std::function<void(cl_kernel, cl_uint)>& dst) {
    kernel k = make_kernel(prog.get(), "copy_bytes");
    src(k.get(), 0);
    dst(k.get(), 1);
    const cl_ulong n = spec_.bytes;
    check(clSetKernelArg(k.get(), 2, sizeof n, &n), "clSetKernelArg", "arg 2: byte count");
    return k;
  }

  static std::function<void(cl_kernel, cl_uint)> arg(const mem_object& m) {
    const cl_mem mem = m.get();
    return [mem](cl_kernel k, cl_uint i) {
      check(clSetKernelArg(k, i, sizeof mem, &mem), "clSetKernelArg", fmt::format("arg {}: device buffer", i));
    };
  }
  static std::function<void(cl_kernel, cl_uint)> arg(const host_block& b) {
    return [&b](cl_kernel k, cl_uint i) { b.set_kernel_arg(k, i); };
  }

  void make_kernels(const program& prog) {
    if (!prog) throw std::logic_error("kernel route prepared without the copy program");
    switch (spec_.dir) {
      case direction::h2d: kernels_.push_back(copy_kernel(prog, arg(*host_a_), arg(dev_a_))); break;
      case direction::d2h: kernels_.push_back(copy_kernel(prog, arg(dev_a_), arg(*host_a_))); break;
      case direction::rw:
        kernels_.push_back(copy_kernel(prog, arg(*host_a_), arg(dev_a_)));
        kernels_.push_back(copy_kernel(prog, arg(dev_a_), arg(*host_a_)));
        break;
      case direction::bidir:
        kernels_.push_back(copy_kernel(prog, arg(*host_a_), arg(dev_a_)));
        kernels_.push_back(copy_kernel(prog, arg(dev_b_), arg(*host_b_)));
        break;
      case direction::d2d: kernels_.push_back(copy_kernel(prog, arg(dev_a_), arg(dev_b_))); break;
    }
    // Enough work items to fill the device, each striding over 16-byte vectors.
    std::size_t wg = 0;
    check(
        clGetKernelWorkGroupInfo(kernels_[0].get(), caps_.id, CL_KERNEL_WORK_GROUP_SIZE, sizeof wg, &wg, nullptr),
        "clGetKernelWorkGroupInfo", "CL_KERNEL_WORK_GROUP_SIZE");
    local_ = std::max<std::size_t>(1, std::min<std::size_t>({256, wg, caps_.max_work_group}));
    const std::size_t vectors = std::max<std::size_t>(1, spec_.bytes / 16);
    const std::size_t most = std::max<std::size_t>(1, caps_.compute_units) * 2048;
    const std::size_t items = std::min(vectors, most);
    global_ = (items + local_ - 1) / local_ * local_;
  }

  queue_op write_op(std::size_t lane, host_block& src, const mem_object& dst) {
    const std::size_t n = spec_.bytes;
    const cl_mem m = dst.get();
    return {lane, [&src, m, n](cl_command_queue q, cl_bool blocking, cl_uint nw, const cl_event* w, cl_event* e) {
              check(clEnqueueWriteBuffer(q, m, blocking, 0, n, src.data(), nw, w, e), "clEnqueueWriteBuffer",
                            fmt::format("{} B", n));
            }};
  }
  queue_op read_op(std::size_t lane, const mem_object& src, host_block& dst) {
    const std::size_t n = spec_.bytes;
    const cl_mem m = src.get();
    return {lane, [&dst, m, n](cl_command_queue q, cl_bool blocking, cl_uint nw, const cl_event* w, cl_event* e) {
              check(clEnqueueReadBuffer(q, m, blocking, 0, n, dst.data(), nw, w, e), "clEnqueueReadBuffer",
                            fmt::format("{} B", n));
            }};
  }
  queue_op kernel_op(std::size_t lane, const kernel& k) {
    const cl_kernel kk = k.get();
    const std::size_t* global = &global_;
    const std::size_t* local = &local_;
    const std::size_t n = spec_.bytes;
    return {lane, [kk, global, local, n](cl_command_queue q, cl_bool, cl_uint nw, const cl_event* w, cl_event* e) {
              check(clEnqueueNDRangeKernel(q, kk, 1, nullptr, global, local, nw, w, e),
                            "clEnqueueNDRangeKernel",
                            fmt::format("copy_bytes, {} B, {} x {} work items", n, *global / *local, *local));
            }};
  }

  // Map the device buffer, memcpy to (to_device) or from it, unmap: each part
  // timed apart, as a program using mapping would spend it.
  host_op map_op(host_block& host, const mem_object& dev, bool to_device) {
    const std::size_t n = spec_.bytes;
    const cl_mem m = dev.get();
    const cl_command_queue q = queues_[0].get();
    // WRITE_INVALIDATE_REGION (1.2+) spares the driver copying the old contents in.
    const cl_map_flags flags = !to_device ? CL_MAP_READ
                               : caps_.major > 1 || caps_.minor >= 2 ? CL_MAP_WRITE_INVALIDATE_REGION
                                                                     : CL_MAP_WRITE;
    return [&host, m, n, q, flags, to_device](map_parts& parts) {
      const auto t0 = clock::now();
      cl_int rc = CL_SUCCESS;
      void* p = clEnqueueMapBuffer(q, m, CL_TRUE, flags, 0, n, 0, nullptr, nullptr, &rc);
      check(rc, "clEnqueueMapBuffer", fmt::format("for {}, {} B", to_device ? "writing" : "reading", n));
      const auto t1 = clock::now();
      if (to_device)
        std::memcpy(p, host.data(), n);
      else
        std::memcpy(host.data(), p, n);
      const auto t2 = clock::now();
      check(clEnqueueUnmapMemObject(q, m, p, 0, nullptr, nullptr), "clEnqueueUnmapMemObject",
                    fmt::format("{} B", n));
      check(clFinish(q), "clFinish", "after unmap");
      const auto t3 = clock::now();
      parts.map += std::chrono::duration<double>(t1 - t0).count();
      parts.memcpy += std::chrono::duration<double>(t2 - t1).count();
      parts.unmap += std::chrono::duration<double>(t3 - t2).count();
    };
  }

  queue_op d2d_copy_op(const mem_object& src, const mem_object& dst) {
    const std::size_t n = spec_.bytes;
    const cl_mem s = src.get(), d = dst.get();
    return {0, [s, d, n](cl_command_queue q, cl_bool, cl_uint nw, const cl_event* w, cl_event* e) {
              check(clEnqueueCopyBuffer(q, s, d, 0, 0, n, nw, w, e), "clEnqueueCopyBuffer",
                            fmt::format("{} B", n));
            }};
  }

  void build_ops() {
    switch (route_) {
      case route_id::copy_async:
      case route_id::copy_sync:
        switch (spec_.dir) {
          case direction::h2d: ops_ = {write_op(0, *host_a_, dev_a_)}; break;
          case direction::d2h: ops_ = {read_op(0, dev_a_, *host_a_)}; break;
          case direction::rw: ops_ = {write_op(0, *host_a_, dev_a_), read_op(0, dev_a_, *host_a_)}; break;
          case direction::bidir: ops_ = {write_op(0, *host_a_, dev_a_), read_op(1, dev_b_, *host_b_)}; break;
          case direction::d2d: ops_ = {d2d_copy_op(dev_a_, dev_b_)}; break;
        }
        break;
      case route_id::kernel_host:
      case route_id::kernel_device:
        for (std::size_t i = 0; i < kernels_.size(); ++i)
          ops_.push_back(kernel_op(spec_.dir == direction::bidir ? i : 0, kernels_[i]));
        break;
      case route_id::map:
        switch (spec_.dir) {
          case direction::h2d: host_ops_ = {map_op(*host_a_, dev_a_, true)}; break;
          case direction::d2h: host_ops_ = {map_op(*host_a_, dev_a_, false)}; break;
          case direction::rw: host_ops_ = {map_op(*host_a_, dev_a_, true), map_op(*host_a_, dev_a_, false)}; break;
          default: throw skip_point(fmt::format("route map moves no data {}", to_string(spec_.dir)));
        }
        break;
    }
    lanes_ = 1;
    for (const auto& op : ops_) lanes_ = std::max(lanes_, op.lane + 1);
  }

  // ---- running ----

  struct chunk_time {
    double seconds = 0, wall_s = 0, queued_to_end_s = 0;
    double lane_s[2] = {0, 0};
  };

  chunk_time run_chunk(std::size_t reps, bool gated) {
    std::vector<cl_command_queue> lanes;
    for (std::size_t l = 0; l < lanes_; ++l) lanes.push_back(queues_[l].get());
    event_span_timer timer(lanes, caps_.timer_resolution_s());
    // Per lane: which op of a repetition is its first and its last.
    std::size_t first_op[2] = {ops_.size(), ops_.size()}, last_op[2] = {0, 0};
    for (std::size_t k = 0; k < ops_.size(); ++k) {
      const std::size_t l = ops_[k].lane;
      if (first_op[l] == ops_.size()) first_op[l] = k;
      last_op[l] = k;
    }
    no_gate open_gate;
    gate& g = gated ? static_cast<gate&>(*gate_) : open_gate;
    // A failed enqueue must not leave what was already enqueued held shut.
    struct open_on_throw {
      gate& g;
      int pending = std::uncaught_exceptions();
      ~open_on_throw() {
        if (std::uncaught_exceptions() > pending) g.open();
      }
    } guard{g};
    const batch_time t = time_gated_batch(g, timer, reps, [&](std::size_t i) {
      for (std::size_t k = 0; k < ops_.size(); ++k) {
        const std::size_t l = ops_[k].lane;
        const bool first = i == 0 && k == first_op[l];
        const bool last = i + 1 == reps && k == last_op[l];
        const cl_event hold = gated ? gate_->wait_event() : nullptr;
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
    chunk_time c{t.seconds, t.wall_seconds, timer.queued_to_end_s(), {0, 0}};
    for (std::size_t l = 0; l < lanes_; ++l) c.lane_s[l] = timer.lane_seconds(l);
    return c;
  }

  sample run_gated(std::size_t reps) {
    std::size_t ops_per_lane = 0;
    for (std::size_t l = 0; l < lanes_; ++l)
      ops_per_lane = std::max<std::size_t>(
          ops_per_lane, std::count_if(ops_.begin(), ops_.end(), [&](const queue_op& op) { return op.lane == l; }));
    chunk_time total;
    for (std::size_t part : split_reps(reps, ops_per_lane)) {
      chunk_time c = run_chunk(part, gated_);
      if (gated_ && gate_->forced()) {
        // The driver blocked an enqueue behind the closed gate: this batch
        // waited on the watchdog. Run ungated from now on and redo it.
        gated_ = false;
        c = run_chunk(part, false);
      }
      total.seconds += c.seconds;
      total.wall_s += c.wall_s;
      total.queued_to_end_s += c.queued_to_end_s;
      for (int l = 0; l < 2; ++l) total.lane_s[l] += c.lane_s[l];
    }
    sample s{total.seconds, total.wall_s, {{"queued_to_end", total.queued_to_end_s}}};
    if (spec_.dir == direction::bidir) {
      s.parts["h2d"] = total.lane_s[0];
      s.parts["d2h"] = total.lane_s[1];
    }
    return s;
  }

  // What a straightforward program does: blocking calls, timed by the clock on the wall.
  sample run_blocking(std::size_t reps) {
    wall_timer timer;
    no_gate g;
    const batch_time t = time_gated_batch(g, timer, reps, [&](std::size_t) {
      for (auto& op : ops_) op.enqueue(queues_[op.lane].get(), CL_TRUE, 0, nullptr, nullptr);
    });
    return {t.seconds, t.wall_seconds, {}};
  }

  sample run_map(std::size_t reps) {
    map_parts parts;
    wall_timer timer;
    no_gate g;
    const batch_time t = time_gated_batch(g, timer, reps, [&](std::size_t) {
      for (auto& op : host_ops_) op(parts);
    });
    return {t.seconds, t.wall_seconds, {{"map", parts.map}, {"memcpy", parts.memcpy}, {"unmap", parts.unmap}}};
  }

  // One step of a repetition on its own, ungated, finished before returning (rw verification).
  void run_step(std::size_t k) {
    if (route_ == route_id::map) {
      map_parts ignored;
      host_ops_.at(k)(ignored);
      return;
    }
    const auto& op = ops_.at(k);
    op.enqueue(queues_[op.lane].get(), route_ == route_id::copy_sync, 0, nullptr, nullptr);
    check(clFinish(queues_[op.lane].get()), "clFinish", "after one verification step");
  }

  // ---- data ----

  // Overwrites all of it: with WRITE_INVALIDATE_REGION (1.2+) a discrete
  // device need not copy the old contents to the host first, which matters
  // now that every timed sample is poisoned.
  cl_map_flags overwrite() const {
    return caps_.major > 1 || caps_.minor >= 2 ? CL_MAP_WRITE_INVALIDATE_REGION : CL_MAP_WRITE;
  }
  void fill_device(const mem_object& m, std::uint64_t seed) {
    mapping map(queues_[0].get(), m.get(), overwrite(), spec_.bytes);
    fill_pattern(map.data(), spec_.bytes, seed);
    map.unmap();
  }
  void poison_device(const mem_object& m) {
    mapping map(queues_[0].get(), m.get(), overwrite(), spec_.bytes);
    poison(map.data(), spec_.bytes);
    map.unmap();
  }
  void check_device(const mem_object& m, std::uint64_t seed, const char* what) {
    mapping map(queues_[0].get(), m.get(), CL_MAP_READ, spec_.bytes);
    check_pattern(map.data(), spec_.bytes, seed, what);
    map.unmap();
  }
  void poison_host(host_block& b) {
    host_access access(b, host_open_);
    poison(b.data(), spec_.bytes);
  }
  void check_host(host_block& b, std::uint64_t seed, const char* what) {
    host_access access(b, host_open_);
    check_pattern(b.data(), spec_.bytes, seed, what);
  }

  point_spec spec_;
  route_id route_;
  device_caps caps_;
  // Handles first: members are destroyed in reverse, so the buffers below are
  // released while their context and queues are still alive.
  context ctx_;
  command_queue queues_[2];
  std::unique_ptr<user_event_gate> gate_;
  bool gated_ = true;
  bool host_open_ = true;
  std::unique_ptr<host_block> host_a_, host_b_;
  mem_object dev_a_, dev_b_;
  std::vector<kernel> kernels_;
  std::size_t global_ = 1, local_ = 1;
  std::vector<queue_op> ops_;
  std::vector<host_op> host_ops_;
  std::size_t lanes_ = 1;
  first_use costs_;
};

}  // namespace

bool corrupt_destination_for_testing(transfer& t, std::size_t which, std::size_t offset) {
  return dynamic_cast<cl_transfer&>(t).corrupt_destination(which, offset);
}

std::unique_ptr<transfer> make_transfer(const point_spec& p, route_id route, const device_context& dev,
                                        const mem::kind_options& kinds) {
  return std::make_unique<cl_transfer>(p, route, dev, kinds);
}

}  // namespace xfer::opencl
