#pragma once
// libxfer's OpenCL host memory kinds for applications: buffers made with
// CL_MEM_ALLOC_HOST_PTR or CL_MEM_USE_HOST_PTR and coarse- or fine-grained
// SVM, each a mem::host_resource whose blocks stay mapped for the host until
// they are deallocated (the very resources xferbench measures).
//
// No OpenCL header and no OpenCL type here: the resource makes and owns its
// context and queue on the platform and device it is asked for.
#include <memory>
#include <string>
#include <string_view>
#include <vector>
#include <xfer/mem/kinds.hpp>
#include <xfer/mem/resource.hpp>

namespace xfer::opencl {

// "alloc-host-ptr", "use-host-ptr", "svm-coarse", "svm-fine", in report order.
const std::vector<std::string>& opencl_host_kind_names();

// A resource of kind `name` (one of opencl_host_kind_names(), or a plain kind
// of mem::host_kind_names()) on device `device` (its index on the platform)
// of the platform named `platform`: the token xferbench uses ("pocl",
// "nvidia", "amd", "intel", ...; `xferbench list` shows them) or, when empty,
// the first platform. nullptr for an unknown kind. Throws std::runtime_error
// saying why when there is no such platform or device, or the device cannot
// provide the kind (SVM on an OpenCL 1.2 device).
std::unique_ptr<mem::host_resource> make_opencl_host_kind(std::string_view name, std::string_view platform = {},
                                                          int device = 0, const mem::kind_options& options = {});

}  // namespace xfer::opencl
