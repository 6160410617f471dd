// Routes where a kernel moves the data: kernel-host (a kernel reads or writes
// host memory across the link, zero copy) and kernel-device, -read, -write
// (the device's own memory bandwidth).
#include <chrono>
#include <cstring>
#include <fmt/format.h>
#include <xfer/core/timing.hpp>
#include <xfer/core/errors.hpp>
#include <xfer/core/pattern.hpp>

#include "cuda_routes.hpp"
#include "cuda_transfer.hpp"
#include "kernels.hpp"
#include "cuda/resources.hpp"

namespace xfer::cuda {
namespace {

using clock = std::chrono::steady_clock;

// What read_xor computes: little-endian 64-bit words, a partial last word zero-padded.
std::uint64_t xor_words(const void* p, std::size_t n) {
  const auto* b = static_cast<const unsigned char*>(p);
  std::uint64_t acc = 0;
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    std::uint64_t w;
    std::memcpy(&w, b + i, 8);
    acc ^= w;
  }
  for (; i < n; ++i) acc ^= std::uint64_t(b[i]) << (8 * (i % 8));
  return acc;
}

std::uint64_t pattern_xor(std::size_t n, std::uint64_t seed) {
  std::unique_ptr<std::byte[]> tmp(new std::byte[n ? n : 1]);
  fill_pattern(tmp.get(), n, seed);
  return xor_words(tmp.get(), n);
}

enum class op { read, write, copy };

class kernel_transfer final : public cuda_transfer {
 public:
  kernel_transfer(device_context& ctx, const point_spec& p, std::unique_ptr<mem::host_resource> kind)
      : cuda_transfer(ctx, p, std::move(kind)) {
    on_host_ = p.route == route_kind::kernel_host;
    if (on_host_) {
      op_ = p.dir == direction::h2d ? op::read : op::write;
    } else if (p.route == own_routes::kernel_device_read) {
      op_ = op::read;
    } else if (p.route == own_routes::kernel_device_write) {
      op_ = op::write;
    } else {
      op_ = op::copy;
    }

    std::uint64_t device_bytes = 0;
    if (on_host_) {
      if (kind_->props().device_accessible && !kind_->props().pinned) device_bytes = p.bytes;  // managed
      require_host_memory(1);
    } else {
      device_bytes = (op_ == op::copy ? 2 : 1) * p.bytes;
    }
    ctx_.require_device_memory(device_bytes, on_host_ ? "managed host buffer" : "device buffers");

    const auto t0 = clock::now();
    if (on_host_) {
      host_ = host_buffer();
      target_ = device_view(*kind_, ctx_.a, host_.data());
    } else {
      dev_a_ = device_buf();
      if (op_ == op::copy) dev_b_ = device_buf();
      target_ = dev_a_.data();
    }
    if (op_ == op::read) sink_ = device_buffer(ctx_.a, sizeof(std::uint64_t));
    costs_.alloc_s = seconds_since(t0);

    // Sources: what read and copy kernels read. Write kernels have none.
    const auto t1 = clock::now();
    if (op_ == op::read && on_host_) {
      fill_pattern(host_.data(), p.bytes, seed_h2d);
      costs_.touch_s = seconds_since(t1);
    } else if (op_ != op::write) {
      fill_device(dev_a_.data(), seed_device);
      costs_.touch_s = seconds_since(t1);
    }
    if (op_ == op::read) expected_xor_ = on_host_ ? xor_words(host_.data(), p.bytes) : pattern_xor(p.bytes, seed_device);
  }

  sample run(std::size_t reps) override {
    const int sms = ctx_.attrs.multiprocessors;
    const stream_t s = ctx_.s0.get();
    const std::size_t n = spec_.bytes;
    const std::uint64_t seed = on_host_ ? seed_d2h : seed_device;
    ctx_.make_current();
    event_timer timer(ctx_);
    // Kernel launches never block the host: always gated.
    return loop_.run(timer, reps, [&](std::size_t, std::size_t) {
      switch (op_) {
        case op::read:
          kernels::read_xor(s, target_, n, static_cast<std::uint64_t*>(sink_.data()), sms);
          ++reads_;
          break;
        case op::write: kernels::write_pattern(s, target_, n, seed, sms); break;
        case op::copy: kernels::copy(s, dev_b_.data(), dev_a_.data(), n, sms); break;
      }
    });
  }

  // Write and copy kernels leave a pattern in a buffer, which core verifies
  // (src/core/verify.cpp). A read kernel leaves only a checksum in its sink:
  // that is checked here, so read overrides the three.
  void verify() override {
    if (op_ != op::read) return transfer::verify();
    poison_sample();
    run(1);
    check_sample();
  }

  void poison_sample() override {
    if (op_ != op::read) return transfer::poison_sample();
    ctx_.a.fill_device(sink_.data(), 0, sizeof(std::uint64_t));
    reads_ = 0;
  }

  void check_sample() override {
    if (op_ != op::read) return transfer::check_sample();
    // Each read XORs the buffer's XOR into the sink: an odd count of
    // reads leaves it, an even count cancels it out.
    const std::uint64_t expected = reads_ % 2 ? expected_xor_ : 0;
    std::uint64_t got = 0;
    ctx_.a.copy(&got, sink_.data(), sizeof got, copy_kind::d2h);
    if (got != expected)
      throw verification_error(fmt::format("{} read kernel: after {} reads of {} bytes the XOR is 0x{:016x}, "
                                           "expected 0x{:016x}",
                                           to_string(spec_.route), reads_, spec_.bytes, got, expected));
  }

  std::span<const sample_destination> places() const override {
    static constexpr sample_destination host_written[] = {{false, 0, seed_d2h, true, "kernel-written host memory"}};
    static constexpr sample_destination device_written[] = {
        {true, 0, seed_device, true, "kernel-written device memory"}};
    static constexpr sample_destination copied[] = {{true, 1, seed_device, true, "kernel copy destination"}};
    if (op_ == op::read) return {};  // its checks are its own (above)
    if (op_ == op::copy) return copied;
    return on_host_ ? std::span<const sample_destination>(host_written) : device_written;
  }

  clock_kind timer_kind() const override { return clock_kind::event; }
  double timer_resolution_s() const override { return event_resolution_s; }
  std::uint64_t bytes_per_rep() const override { return spec_.bytes; }

 private:
  void* place_ptr(const sample_destination& d) override {
    if (on_host_) return host_.data();
    return d.buffer ? dev_b_.data() : dev_a_.data();
  }

  bool on_host_ = false;
  op op_ = op::copy;
  mem::buffer host_;
  device_buffer dev_a_, dev_b_, sink_;
  void* target_ = nullptr;  // the device's address of what the kernel reads or writes
  std::uint64_t expected_xor_ = 0;
  // Reads launched since the sink was cleared (its expected value depends on
  // it), counted where they are launched: a sub-batch the loop runs again
  // after its gate gave way counts too.
  std::size_t reads_ = 0;
  timed_batches loop_{ctx_.gate};
};

}  // namespace

std::unique_ptr<transfer> make_kernel_transfer(device_context& ctx, const point_spec& p,
                                               std::unique_ptr<mem::host_resource> kind) {
  if (p.route == route_kind::kernel_host) {
    if (!kind) throw skip_point("kernel-host needs a host memory kind");
    if (const std::string gap = device_access_gap(*kind, ctx.attrs); !gap.empty())
      throw skip_point(fmt::format("kernel-host needs host memory the device can address: {}", gap));
  }
  return std::make_unique<kernel_transfer>(ctx, p, std::move(kind));
}

}  // namespace xfer::cuda
