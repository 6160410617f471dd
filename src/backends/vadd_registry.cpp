// Which backends have a vector add: the registry's twin for the app study
// (registry.cpp says which backends exist; this says which of them run vadd).
#include <xfer/app/vadd.hpp>
#include <xfer/backends/vadd_registry.hpp>
#include <xfer/config.hpp>

#include "host/host_backend.hpp"
#include "host/vadd_app.hpp"
#if XFER_HAVE_CUDA
#include "cuda/cuda_backend.hpp"
#include "cuda/vadd_app.hpp"
#endif
#if XFER_HAVE_OPENCL
#include "opencl/opencl_backend.hpp"
#include "opencl/vadd_app.hpp"
#endif

namespace xfer {

std::unique_ptr<vadd_app> make_vadd_app(backend& b, int device) {
  if (const auto* h = dynamic_cast<const host::host_backend*>(&b)) return host::make_vadd_app(*h, device);
#if XFER_HAVE_CUDA
  if (auto* c = dynamic_cast<cuda::cuda_backend*>(&b)) return cuda::make_vadd_app(*c, device);
#endif
#if XFER_HAVE_OPENCL
  if (const auto* o = dynamic_cast<const opencl::opencl_backend*>(&b)) return opencl::make_vadd_app(*o, device);
#endif
  return nullptr;
}

}  // namespace xfer
