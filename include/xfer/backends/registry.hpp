#pragma once
// Every backend this build contains, constructed or with the reason it cannot
// run here. The only file that knows the list is registry.cpp.
#include <string>
#include <vector>
#include <xfer/core/backend.hpp>
#include <xfer/core/plan.hpp>  // choosing among them: select_backends, backend_matches
#include <xfer/mem/kinds.hpp>

namespace xfer {

struct backend_options {
  unsigned threads = 0;  // memcpy-mt workers; 0 = one per logical CPU
  int host_devices = 1;  // stand-in devices of the host backend (host_backend's constructor)
  mem::kind_options kinds;
};

std::vector<backend_entry> make_backends(const backend_options& options);
// What -b takes, for --help: every backend and family this tool knows, compiled in or not.
std::string backend_names_help();

}  // namespace xfer
