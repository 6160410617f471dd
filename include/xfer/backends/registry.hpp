#pragma once
// Every backend this build contains, constructed or with the reason it cannot
// run here. The only file that knows the list is registry.cpp.
#include <string>
#include <vector>
#include <xfer/core/backend.hpp>
#include <xfer/mem/kinds.hpp>

namespace xfer {

struct backend_options {
  unsigned threads = 0;  // memcpy-mt workers; 0 = one per logical CPU
  mem::kind_options kinds;
};

std::vector<backend_entry> make_backends(const backend_options& options);

// Names that select backends: an exact name ("opencl:pocl") or a family
// prefix before ':' ("opencl" selects every OpenCL platform).
bool backend_matches(const std::string& selector, const std::string& name);

}  // namespace xfer
