// The one file that knows which backends exist and were compiled in: a new
// backend is its folder (src/backends/<name>/, a class implementing
// xfer::backend) plus its entry here and its XFER_HAVE_ flag in config.hpp.
#include <xfer/backends/registry.hpp>
#include <xfer/config.hpp>

#include "host/host_backend.hpp"
#if XFER_HAVE_CUDA
#include "cuda/cuda_backends.hpp"
#endif
#if XFER_HAVE_OPENCL
#include "opencl/opencl_backends.hpp"
#endif
#if XFER_HAVE_XRT
#include "xrt/xrt_backend.hpp"
#endif
#if XFER_HAVE_VULKAN
#include "vulkan/vulkan_backends.hpp"
#endif

namespace xfer {

std::vector<backend_entry> make_backends(const backend_options& options) {
  std::vector<backend_entry> out;
  out.push_back({"host", std::make_unique<host::host_backend>(options.threads, options.kinds, options.host_devices), ""});
#if XFER_HAVE_CUDA
  for (auto& e : cuda::make_cuda_backends(options.kinds)) out.push_back(std::move(e));
#else
  out.push_back({"cuda-rt", nullptr, "not compiled in (configure with a CUDA toolkit, XFER_ENABLE_CUDA=ON)"});
  out.push_back({"cuda-drv", nullptr, "not compiled in (configure with a CUDA toolkit, XFER_ENABLE_CUDA=ON)"});
#endif
#if XFER_HAVE_OPENCL
  for (auto& e : opencl::make_opencl_backends(options.kinds)) out.push_back(std::move(e));
#else
  out.push_back({"opencl", nullptr, "not compiled in (configure with OpenCL headers and ICD loader)"});
#endif
#if XFER_HAVE_XRT
  out.push_back(xrt_backend::make_xrt_backend(options.kinds));
#else
  out.push_back({"xrt", nullptr, "not compiled in (configure with XRT: Debian's libxrt-dev, XFER_ENABLE_XRT=ON)"});
#endif
#if XFER_HAVE_VULKAN
  for (auto& e : vulkan::make_vulkan_backends(options.kinds)) out.push_back(std::move(e));
#else
  out.push_back({"vulkan", nullptr, "not compiled in (configure with the Vulkan headers: libvulkan-dev)"});
#endif
  return out;
}

std::string backend_names_help() {
  return "host, cuda-rt, cuda-drv, opencl, opencl:NAME, vulkan, vulkan:NAME, xrt (`xferbench list` shows which run "
         "here)";
}

}  // namespace xfer
