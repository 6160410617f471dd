#pragma once
// `xferbench beside` on a CUDA device: the ways over libxfer's CUDA steps
// (the staged step and the block step of the runtime API), and the GPU
// workloads beside them, each on a stream of its own:
//   gpu-compute  a kernel of multiply-adds in registers over every
//                multiprocessor (FLOP/s): what a copy kernel's blocks take
//                from a compute-bound model;
//   gpu-memory   a kernel reading and writing `work_bytes` of device memory
//                (bytes/s): what a copy takes from a memory-bound one.
// The CPU workloads stay available (the staged copier's threads beside them).
// Built where xferbench has CUDA (XFER_HAVE_CUDA).
#include <memory>
#include <string>
#include <vector>
#include <xfer/beside/study.hpp>

namespace xfer::beside {

std::vector<std::string> gpu_workload_names();  // {"gpu-compute", "gpu-memory"}
// Throws std::runtime_error saying why where CUDA cannot start or there is
// no such device.
sides cuda_sides(int device);

}  // namespace xfer::beside
