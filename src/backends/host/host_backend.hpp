#pragma once
// The reference backend: "device memory" is a second host allocation and a
// transfer is a memcpy. Every other part of xferbench is testable against it,
// and it is the CPU baseline in reports.
#include <memory>
#include <xfer/core/backend.hpp>
#include <xfer/core/thread_team.hpp>
#include <xfer/mem/blocks/block_copier.hpp>
#include <xfer/mem/kinds.hpp>
#include <xfer/mem/staged/host_step.hpp>
#include <xfer/mem/staged/staged_copier.hpp>

namespace xfer::host {

// The route only this backend has (the rest are core's shared ones); a new
// one is declared here and described in host_backend::routes().
namespace own_routes {
inline const route_kind memcpy_mt = route_kind::declare("memcpy-mt", route_family::copy);
}  // namespace own_routes


class host_backend final : public backend {
 public:
  // threads: workers for the memcpy-mt route (0 = one per logical CPU).
  // devices: how many stand-in devices it shows (each a share of the same
  // host memory), so modes that drive several devices at once (sweep
  // --together, the peer matrix, fleet) run and are tested without a GPU.
  host_backend(unsigned threads, mem::kind_options kinds, int devices = 1);
  ~host_backend() override;

  std::string name() const override { return "host"; }
  std::string description() const override;
  std::vector<device_info> devices() const override;
  std::vector<route_info> routes() const override;
  std::vector<kind_support> host_memory_kinds() const override;
  std::unique_ptr<mem::host_resource> host_memory(const std::string& kind) const override;
  std::unique_ptr<transfer> prepare(const point_spec& point) override;
  std::string pairing_gap(route_kind route, const std::string& kind) const override;
  // Stand-in devices share the host's memory: a memcpy between two "device"
  // buffers, reported as a peer path.
  peer_copy prepare_peer(const point_spec& point) override;

 private:
  unsigned threads_;
  mem::kind_options kinds_;
  // Each stand-in device has its own workers, so devices driven at once
  // (core/concurrent.hpp) never share a team.
  struct device_state {
    std::unique_ptr<thread_team> pool;    // memcpy-mt
    std::unique_ptr<thread_team> duplex;  // bidir: one thread per direction
    // Route staged: libxfer's copier over the host step (its lanes are
    // threads standing in for a copy engine), made on first use.
    std::unique_ptr<mem::host_step> staged_step;
    std::unique_ptr<mem::staged_copier> copier;  // after the step: destroyed first
    // The block routes: libxfer's block copier over the host block step
    // (every way's path, its choice and its refusals, run for real).
    std::unique_ptr<mem::host_block_step> block_step;
    std::unique_ptr<mem::block_copier> blocks;  // after the step: destroyed first
  };
  std::vector<device_state> state_;
};

}  // namespace xfer::host
