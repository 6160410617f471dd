#include <algorithm>
#include <xfer/beside/cpu_workloads.hpp>
#include <xfer/beside/cuda_sides.hpp>
#include <xfer/mem/cuda/block_step.hpp>
#include <xfer/mem/cuda/staged_step.hpp>

#include "gpu_workloads.hpp"

namespace xfer::beside {

std::vector<std::string> gpu_workload_names() { return {"gpu-compute", "gpu-memory"}; }

sides cuda_sides(int device) {
  std::vector<std::string> names = gpu_workload_names();
  for (const auto& n : cpu_workload_names()) names.push_back(n);
  return {"cuda-rt", cuda::make_staged_step(device), cuda::make_block_step(device), names,
          [device](const std::string& name, const options& o, unsigned threads) -> std::unique_ptr<activity> {
            const auto gpu = gpu_workload_names();
            if (std::ranges::count(gpu, name)) return make_gpu_workload(name, device, o.work_bytes);
            return make_cpu_workload(name, threads, o.work_bytes);
          }};
}

}  // namespace xfer::beside
