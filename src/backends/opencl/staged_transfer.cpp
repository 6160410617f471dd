// Route staged: libxfer's staged copier (xfer/mem/staged/staged_copier.hpp)
// moving pageable host memory to and from a device buffer through a ring of
// ALLOC_HOST_PTR staging buffers, CPU threads and one in-order queue per
// thread overlapped. Measured beside copy-sync and copy-async on the pageable
// kinds; below the copier's handoff size it is the plain blocking
// clEnqueueWrite/ReadBuffer, so it should equal copy-sync there. On PoCL (a
// CPU device) it tests the pipeline for real; its speed is a CPU stand-in.
#include <fmt/format.h>
#include <xfer/core/errors.hpp>
#include <xfer/core/staged_route.hpp>

#include "opencl_transfer.hpp"

namespace xfer::opencl {
namespace {

class staged_transfer final : public opencl_transfer {
 public:
  staged_transfer(const point_spec& p, const device_context& dev, const mem::kind_options& kinds,
                  mem::staged_copier& copier)
      : opencl_transfer(p, dev, kinds, /*host_open=*/true, /*events=*/false), copier_(copier) {}

  std::string note() const override { return staged_route_note(copier_); }
  std::optional<settings_ref> settings_used() const override { return staged_route_settings(copier_); }

  // Blocking copies one after another, by the wall clock, as copy-sync: a
  // copy returns once its bytes are at their destination.
  sample run(std::size_t reps) override {
    const std::size_t n = spec_.bytes;
    const mem::device_ref dev{dev_a_.get(), n};
    wall_timer timer;
    return loop_->run(timer, reps, [&](std::size_t, std::size_t) {
      if (spec_.dir == direction::h2d)
        copier_.copy_to_device(dev, 0, host_a_->data(), n);
      else
        copier_.copy_to_host(host_a_->data(), dev, 0, n);
    });
  }

 protected:
  void run_step(std::size_t) override { (void)run(1); }

 private:
  mem::staged_copier& copier_;
};

}  // namespace

std::unique_ptr<transfer> make_staged_transfer(const point_spec& p, const device_context& dev,
                                               const mem::kind_options& kinds, mem::staged_copier& copier) {
  if (p.dir != direction::h2d && p.dir != direction::d2h)
    throw skip_point(fmt::format("route staged moves data h2d and d2h, not {}", to_string(p.dir)));
  return std::make_unique<staged_transfer>(p, dev, kinds, copier);
}

}  // namespace xfer::opencl
