#include "pocl.hpp"

#include "opencl/opencl_backends.hpp"

namespace xfer::opencl::testing {

opencl_backend* pocl_backend(std::string* why) {
  // Built once per process: every test in it shares the platform's contexts.
  static std::vector<backend_entry> entries = make_opencl_backends({});
  for (auto& e : entries)
    if (e.name == "opencl:pocl" && e.impl) return static_cast<opencl_backend*>(e.impl.get());
  if (why) {
    *why = "no opencl:pocl platform here; found:";
    for (auto& e : entries) *why += " " + e.name + (e.impl ? "" : " (" + e.reason + ")");
  }
  return nullptr;
}

}  // namespace xfer::opencl::testing
