#pragma once
// What the pageable-memory routes staged and batch-any-order share: one host
// buffer of the point's kind and one device buffer, the source filled with
// its pattern, each timed copy blocking until the device is idle, timed by
// the wall clock (what a program waiting for its data sees), and the
// destination core poisons before and checks after a sample. A route
// supplies only the copy.
#include <string>
#include <xfer/core/timing.hpp>

#include "cuda_transfer.hpp"

namespace xfer::cuda {

class wall_copy_transfer : public cuda_transfer {
 public:
  sample run(std::size_t reps) override;
  std::span<const sample_destination> places() const override;
  clock_kind timer_kind() const override { return clock_kind::wall; }
  double timer_resolution_s() const override { return wall_timer().resolution_s(); }
  std::uint64_t bytes_per_rep() const override { return spec_.bytes; }

 protected:
  wall_copy_transfer(device_context& ctx, const point_spec& p, std::unique_ptr<mem::host_resource> kind);
  void* place_ptr(const sample_destination& d) override;
  // One copy of the point's bytes in its direction, returning once they
  // have arrived (or queued on ctx_.s0: run() waits for the device).
  virtual void copy_once() = 0;

  mem::buffer host_;
  device_buffer dev_;

 private:
  no_gate no_gate_;
  timed_batches loop_;
};

}  // namespace xfer::cuda
