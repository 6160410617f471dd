#pragma once
// The GPU workloads' factory (gpu_workloads.cu), for cuda_sides.cpp.
#include <cstddef>
#include <memory>
#include <string>
#include <xfer/beside/measure.hpp>

namespace xfer::beside {

std::unique_ptr<activity> make_gpu_workload(const std::string& name, int device, std::size_t bytes);

}  // namespace xfer::beside
