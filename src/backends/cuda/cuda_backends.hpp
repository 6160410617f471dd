#pragma once
// The CUDA backends as the registry sees them. No CUDA header here: the core
// and the registry never see one.
#include <vector>
#include <xfer/core/backend.hpp>
#include <xfer/mem/kinds.hpp>

namespace xfer::cuda {

// "cuda-rt" (runtime API) and "cuda-drv" (driver API), each with impl null and
// the reason when no driver or device can be used here.
std::vector<backend_entry> make_cuda_backends(const mem::kind_options& kinds);

}  // namespace xfer::cuda
