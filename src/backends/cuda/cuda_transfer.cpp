#include "cuda_transfer.hpp"

#include <fmt/format.h>
#include <memory>
#include <xfer/core/errors.hpp>
#include <xfer/core/pattern.hpp>
#include <xfer/core/size.hpp>
#include <xfer/core/system_probe.hpp>

#include "kernels.hpp"
#include "cuda/resources.hpp"

namespace xfer::cuda {
namespace {

// Uninitialised pageable bytes: a staging copy needs no zeroing first.
std::unique_ptr<std::byte[]> staging(std::size_t n) { return std::unique_ptr<std::byte[]>(new std::byte[n ? n : 1]); }

bool is_managed(const mem::host_resource* k) { return k && dynamic_cast<const managed_resource*>(k); }

// Up to this size device memory is checked on the host (see check_device).
// Small, because every timed sample is checked: beyond it a kernel checks the
// buffer where it is, instead of a copy back and one CPU core reading it all.
constexpr std::size_t host_check_max = std::size_t{256} << 10;

// Below this, reading write-combined memory from the CPU (uncached reads)
// costs less than a round trip through the device.
constexpr std::size_t wc_readback_min = std::size_t{4} << 10;

}  // namespace

cuda_transfer::cuda_transfer(device_context& ctx, const point_spec& p, std::unique_ptr<mem::host_resource> kind)
    : ctx_(ctx), spec_(p), kind_(std::move(kind)), managed_(is_managed(kind_.get())) {
  ctx_.make_current();
}

void cuda_transfer::require_host_memory(std::uint64_t buffers) const {
  const std::uint64_t available = available_memory_bytes();
  const std::uint64_t needed = (buffers + 1) * spec_.bytes;  // + staging for checks
  if (available && needed > available)
    throw skip_point(fmt::format("needs {} host buffers of {} ({} B each, a staging copy included); only {} B of host "
                                 "memory is available",
                                 buffers + 1, format_size(spec_.bytes), spec_.bytes, available));
}


// The device writes its own source: the same bytes as fill_pattern (tests/cuda
// holds the two equal), without a staging buffer the size of the point.
void cuda_transfer::fill_device(void* dev, std::uint64_t seed) {
  kernels::write_pattern(ctx_.s0.get(), dev, spec_.bytes, seed, ctx_.attrs.multiprocessors);
  ctx_.a.synchronize_stream(ctx_.s0.get());
}

void cuda_transfer::poison_device(void* dev) { ctx_.a.fill_device(dev, 0, spec_.bytes); }

// Small buffers come back to the host and face the pattern there; large
// ones are checked in place by a kernel (copying a GiB back and checking it
// on one CPU core would cost more than measuring the point).
std::optional<place_mismatch> cuda_transfer::device_mismatch(const void* dev, std::uint64_t seed) {
  const std::size_t n = spec_.bytes;
  ctx_.a.synchronize();
  if (n <= host_check_max) {
    auto host = staging(n);
    ctx_.a.copy(host.get(), dev, n, copy_kind::d2h);
    if (const auto at = find_pattern_mismatch(host.get(), n, seed))
      return place_mismatch{*at, static_cast<unsigned char>(host[*at])};
    return std::nullopt;
  }
  if (!first_bad_.data()) first_bad_ = device_buffer(ctx_.a, sizeof(std::uint64_t));
  ctx_.a.fill_device(first_bad_.data(), 0xFF, sizeof(std::uint64_t));
  kernels::find_pattern_mismatch(ctx_.s0.get(), dev, n, seed, static_cast<std::uint64_t*>(first_bad_.data()),
                                 ctx_.attrs.multiprocessors);
  ctx_.a.synchronize_stream(ctx_.s0.get());
  std::uint64_t at = 0;
  ctx_.a.copy(&at, first_bad_.data(), sizeof at, copy_kind::d2h);
  if (at == ~std::uint64_t{0}) return std::nullopt;
  unsigned char got = 0;
  ctx_.a.copy(&got, static_cast<const unsigned char*>(dev) + at, 1, copy_kind::d2h);
  return place_mismatch{at, got};
}

// Large host buffers (and write-combined ones, whose CPU reads are uncached)
// go to the device by DMA and are checked there: checking a GiB on one CPU
// core takes longer than measuring the point.
std::optional<place_mismatch> cuda_transfer::host_mismatch(const void* host, std::uint64_t seed) {
  ctx_.a.synchronize();
  const std::size_t n = spec_.bytes;
  const bool write_combined = kind_ && kind_->props().write_combined;
  if ((n > host_check_max || (write_combined && n >= wc_readback_min)) && !host_copy_refused_) {
    if (!host_copy_) {
      try {
        host_copy_ = std::make_unique<device_buffer>(ctx_.a, n);
      } catch (const api_error&) {
        host_copy_refused_ = true;  // no room on the device: the CPU checks it, slowly
      }
    }
    if (host_copy_) {
      ctx_.a.copy(host_copy_->data(), host, n, up());
      return device_mismatch(host_copy_->data(), seed);
    }
  }
  if (const auto at = find_pattern_mismatch(host, n, seed))
    return place_mismatch{*at, static_cast<const unsigned char*>(host)[*at]};
  return std::nullopt;
}

// ---- core's verification ----

void cuda_transfer::poison_place(const sample_destination& d) {
  if (d.on_device) {
    poison_device(place_ptr(d));
    return;
  }
  poison(place_ptr(d), spec_.bytes);
}

std::optional<place_mismatch> cuda_transfer::find_mismatch(const sample_destination& d) {
  return d.on_device ? device_mismatch(place_ptr(d), d.seed) : host_mismatch(place_ptr(d), d.seed);
}

// Host memory as it is; device memory through a host copy (tests only: core
// poisons and checks through the two above).
void cuda_transfer::reach_place(const sample_destination& d, place_access a,
                                const std::function<void(std::span<std::byte>)>& use) {
  const std::size_t n = spec_.bytes;
  ctx_.a.synchronize();
  void* p = place_ptr(d);
  if (!d.on_device) {
    use({static_cast<std::byte*>(p), n});
    return;
  }
  auto host = staging(n);
  if (a != place_access::overwrite) ctx_.a.copy(host.get(), p, n, copy_kind::d2h);
  use({host.get(), n});
  if (a != place_access::read) ctx_.a.copy(p, host.get(), n, copy_kind::h2d);
  ctx_.a.synchronize();
}

}  // namespace xfer::cuda
