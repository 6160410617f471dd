#pragma once
// libxfer's CUDA host memory kinds for applications: page-locked memory from
// cudaHostAlloc (plain, write-combined, mapped), page-aligned memory
// registered in place, and managed memory kept on the host, each a
// mem::host_resource that a caching_pool or a std::pmr container can sit on.
// These are the very resources xferbench measures (cuda-rt and cuda-drv).
//
// No CUDA header and no CUDA type here: the resource owns the API it
// allocates through, and allocates on the calling thread's current device.
#include <memory>
#include <string>
#include <string_view>
#include <vector>
#include <xfer/mem/kinds.hpp>
#include <xfer/mem/resource.hpp>

namespace xfer::cuda {

// Which CUDA API allocates: the runtime (cudaHostAlloc, cudaHostRegister,
// cudaMallocManaged) or the driver (cuMemHostAlloc, cuMemHostRegister,
// cuMemAllocManaged), for programs that use one and not the other.
enum class allocating_api { runtime, driver };

// "registered", "pinned", "pinned-wc", "mapped", "managed", in report order,
// then "pinned-fast": huge pages faulted in by several threads, then
// registered whole (pinning a large buffer several times faster than
// cudaHostAlloc; the alloc study measures it; not a kind the sweep measures).
const std::vector<std::string>& cuda_host_kind_names();

// A resource of kind `name` (one of cuda_host_kind_names(), or a plain kind
// of mem::host_kind_names()). nullptr for any other name. Throws
// std::runtime_error saying why when CUDA cannot start (no driver, no
// device); allocation failures later throw mem::allocation_error with the
// byte count and CUDA's error.
std::unique_ptr<mem::host_resource> make_cuda_host_kind(std::string_view name,
                                                        allocating_api api = allocating_api::runtime,
                                                        const mem::kind_options& options = {});

}  // namespace xfer::cuda
