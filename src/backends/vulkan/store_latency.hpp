#pragma once
// Routes cpu-store-latency / cpu-store-nt-latency: how long a small CPU store
// into device memory the CPU maps (device-local-host-visible: the BAR on a
// discrete GPU) takes to be seen by a reader on the device, measured as a
// round trip (store_latency.cpp says how, and why it is an upper bound).
#include <cstdint>
#include <memory>
#include <xfer/core/backend.hpp>

#include "device.hpp"

namespace xfer::vulkan {

class compute_pipeline;

// A store of at most a page: the route times a message, not a stream
// (cpu-store gives the bandwidth by size).
inline constexpr std::uint64_t store_latency_max_bytes = 4096;

bool is_store_latency_route(route_kind r);
// skip_point where the route cannot take the point (a kind other than
// device-local-host-visible, a size out of 1..4096 B, no SPIR-V).
void require_store_latency(const point_spec& p);
// Why a store-latency route can never take `kind` (only the BAR), or "".
std::string store_latency_kind_gap(route_kind route, const std::string& kind);

// The bounds on every wait (none may hang a test or a sweep), and the test
// hooks that break one round on purpose. Rounds count from 1 within a run().
struct store_latency_limits {
  std::uint32_t max_polls = 1u << 28;  // the shader's polls of one round before it gives up
  double answer_timeout_s = 2.0;       // the CPU's wait for one round's answer
  double start_timeout_s = 10.0;       // the CPU's wait for the dispatch to start
  std::uint32_t corrupt_round = 0;     // hook: this round stores a wrong first word
  std::uint32_t skip_round = 0;        // hook: this round stores nothing
};

class store_latency_transfer : public transfer {
 public:
  virtual store_latency_limits limits() const = 0;
  virtual void set_limits(const store_latency_limits& l) = 0;
};

std::unique_ptr<store_latency_transfer> make_store_latency_transfer(const point_spec& p, const device_context& dev,
                                                                    compute_pipeline& pipe);

}  // namespace xfer::vulkan
