#pragma once
// The memory kinds the CPU study measures and where each comes from: the core
// kinds from the host backend, pinned and write-combined memory from whichever
// backend (CUDA, OpenCL) can give it on this machine, and uncached memory
// where a user program can have it at all. A kind nothing provides is kept,
// skipped, with the reason.
#include <memory>
#include <string>
#include <string_view>
#include <vector>
#include <xfer/core/backend.hpp>
#include <xfer/mem/resource.hpp>

namespace xfer::cpu {

// The default selection, in report order; the first is the baseline every
// other kind is compared with.
const std::vector<std::string>& default_kind_names();
inline constexpr const char* baseline_kind = "pageable";

// Every name --kinds accepts here: the defaults, the core kinds, and every
// kind an available backend lists.
std::vector<std::string> known_kind_names(const std::vector<backend_entry>& backends);

// Why this platform gives a user program no uncached memory.
std::string uncached_unavailable_reason();

struct kind_info {
  std::string name;
  bool available = false;
  std::string provider;  // the backend that provided it ("host", "cuda-rt", ...)
  std::string reason;    // why it is skipped, when not available
  std::string description;
  mem::properties props;
};

struct kind_slot {
  kind_info info;
  // Null when skipped. It may refer to its backend (a CUDA context): keep the
  // backends alive while it is.
  std::unique_ptr<mem::host_resource> resource;
};

// Asks each available backend in turn (registry order) for each named kind;
// the first that gives it provides it. A kind none gives is skipped, with
// every backend's reason.
std::vector<kind_slot> resolve_kinds(const std::vector<std::string>& names,
                                     const std::vector<backend_entry>& backends);

}  // namespace xfer::cpu
