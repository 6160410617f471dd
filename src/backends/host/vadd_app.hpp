#pragma once
// The vector-add study's part on the host backend (xfer/app/vadd.hpp): the
// host has no device, so its vadd is the CPU baseline alone (allocate with
// the strategy, populate, the CPU loop) that the other backends compare with.
#include <memory>
#include <xfer/app/vadd.hpp>

namespace xfer::host {

class host_backend;

// `b` must outlive the app. Any device index: the host has one "device".
std::unique_ptr<vadd_app> make_vadd_app(const host_backend& b, int device);

}  // namespace xfer::host
