#pragma once
// The vector-add study's part (xfer/app/vadd.hpp, seeds 000/003) on one OpenCL device: a
// vector add run as a plain OpenCL program would run it, one phase at a time,
// with the host buffers allocated by the strategy under test.
//
// Two families of strategy, because OpenCL offers two ways to own memory:
// - the core kinds (pageable, pageable-unaligned, aligned, huge) are ordinary
//   host allocations that the map phase wraps in CL_MEM_USE_HOST_PTR buffers,
//   as seed 000 does: that is where unaligned memory makes the runtime copy;
// - OpenCL's own kinds (alloc-host-ptr, use-host-ptr, svm-coarse, svm-fine)
//   are born as OpenCL memory in the allocate phase and mapped for the host;
//   their map phase hands them to the device (unmap), their read phase maps
//   the result back.
#include <string>
#include <vector>
#include <memory>
#include <xfer/app/vadd.hpp>
#include <xfer/mem/kinds.hpp>

#include "opencl/platform.hpp"
#include "program.hpp"

namespace xfer::opencl {

class opencl_vadd final : public vadd_app {
 public:
  // `kernel_source` must define `vadd(a, b, c, n)`; tests hand in a broken one
  // to see the build log arrive in the error.
  opencl_vadd(device_caps device, mem::kind_options kinds, std::string kernel_source = std::string(vadd_kernel_source()));

  std::vector<kind_support> strategies() const override;
  // Throws skip_point for an unknown or unavailable strategy, a size of 0, and
  // sizes the device (CL_DEVICE_MAX_MEM_ALLOC_SIZE, CL_DEVICE_GLOBAL_MEM_SIZE)
  // or the host cannot hold; a kernel build failure throws with the build log.
  vadd_times run(const std::string& strategy, std::size_t n) override;

 private:
  std::string describe(const std::string& strategy) const;

  device_caps device_;
  mem::kind_options kinds_;
  std::string source_;
  // Set when the runtime refused clEnqueueSVMMigrateMem (it claims OpenCL
  // 2.1+ yet some drivers do not implement the call): svm-coarse then has no
  // write phase, the kernel pulls what it reads, and the description says why.
  std::string svm_migrate_refusal_;
};

class opencl_backend;

// The vector add on `device` of `b`; usage_error for a device index the
// platform does not have.
std::unique_ptr<vadd_app> make_vadd_app(const opencl_backend& b, int device);

}  // namespace xfer::opencl
