#pragma once
// The reference backend: "device memory" is a second host allocation and a
// transfer is a memcpy. Every other part of xferbench is testable against it,
// and it is the CPU baseline in reports.
#include <memory>
#include <xfer/core/backend.hpp>
#include <xfer/core/thread_team.hpp>
#include <xfer/mem/kinds.hpp>
#include <xfer/mem/staged/host_step.hpp>
#include <xfer/mem/staged/staged_copier.hpp>

namespace xfer::host {


class host_backend final : public backend {
 public:
  // threads: workers for the memcpy-mt route (0 = one per logical CPU).
  host_backend(unsigned threads, mem::kind_options kinds);
  ~host_backend() override;

  std::string name() const override { return "host"; }
  std::string description() const override;
  std::vector<device_info> devices() const override;
  std::vector<route_info> routes() const override;
  std::vector<kind_support> host_memory_kinds() const override;
  std::unique_ptr<mem::host_resource> host_memory(const std::string& kind) const override;
  std::unique_ptr<transfer> prepare(const point_spec& point) override;

 private:
  unsigned threads_;
  mem::kind_options kinds_;
  std::unique_ptr<thread_team> pool_;    // memcpy-mt
  std::unique_ptr<thread_team> duplex_;  // bidir: one thread per direction
  // Route staged: libxfer's copier over the host step (its lanes are threads
  // standing in for a copy engine), made on first use.
  std::unique_ptr<mem::host_step> staged_step_;
  std::unique_ptr<mem::staged_copier> copier_;  // after the step: destroyed first
};

}  // namespace xfer::host
