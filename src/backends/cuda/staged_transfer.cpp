// Route staged: libxfer's staged copier (xfer/mem/staged/staged_copier.hpp)
// moving the point's host memory through a ring of pinned staging buffers,
// CPU threads and the copy engine overlapped. Measured beside copy-sync and
// copy-async on the pageable kinds, which are what it is for: below the
// copier's handoff size it hands the copy to the plain API, so at small sizes
// it should equal copy-sync (issue 15: never slower).
#include <xfer/core/errors.hpp>
#include <xfer/core/staged_route.hpp>
#include <xfer/mem/staged/staged_copier.hpp>

#include "wall_copy_transfer.hpp"

namespace xfer::cuda {
namespace {

// Blocking copies one after another, timed as copy-sync is.
class staged_transfer final : public wall_copy_transfer {
 public:
  staged_transfer(device_context& ctx, const point_spec& p, std::unique_ptr<mem::host_resource> kind)
      : wall_copy_transfer(ctx, p, std::move(kind)),
        copier_(ctx_.staged()) {}  // first use: the copier starts (and calibrates once per machine and device)

  std::string note() const override { return staged_route_note(copier_); }
  std::optional<settings_ref> settings_used() const override { return staged_route_settings(copier_); }

 private:
  void copy_once() override {
    const mem::device_ref dev{dev_.data(), spec_.bytes};
    if (spec_.dir == direction::h2d)
      copier_.copy_to_device(dev, 0, host_.data(), spec_.bytes);
    else
      copier_.copy_to_host(host_.data(), dev, 0, spec_.bytes);
  }
  mem::staged_copier& copier_;
};

}  // namespace

std::unique_ptr<transfer> make_staged_transfer(device_context& ctx, const point_spec& p,
                                               std::unique_ptr<mem::host_resource> kind) {
  if (!kind) throw skip_point("this route needs a host memory kind");
  require_pageable_for_staged(*kind);
  return std::make_unique<staged_transfer>(ctx, p, std::move(kind));
}

}  // namespace xfer::cuda
