#pragma once
// The staged copier's device step for OpenCL (xfer/mem/staged/staged_copier.hpp):
// each of the copier's threads gets an in-order command queue of its own and
// a marker event per staging slot; staging buffers are CL_MEM_ALLOC_HOST_PTR
// buffers kept mapped (the vendors' documented way to pinned memory), made in
// the step's context. Device memory is a cl_mem of that context (cast to
// void* in device_ref::handle), made by the step's allocate().
//
// No OpenCL header here, like the rest of libxfer's public interface.
#include <memory>
#include <string_view>
#include <xfer/mem/staged/device_step.hpp>

namespace xfer::opencl {

// A step with a context of its own on device `device` of the platform named
// `platform` (the token xferbench uses: "pocl", "nvidia", ...; empty: the
// first platform). Throws std::runtime_error saying why when there is no
// such platform or device.
std::unique_ptr<mem::device_step> make_staged_step(std::string_view platform = {}, int device = 0);

}  // namespace xfer::opencl
