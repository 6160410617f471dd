#pragma once
// The one registry of host memory kinds: every kind any layer can make, by
// the name the CLI, result files and the Python package spell, in the order
// reports list them, with what each command does with it. The sweep (each
// backend's host_memory_kinds), the alloc and cpu studies and the Python
// native module read their lists from here.
//
// A new kind: an entry here (in report order) and its resource where its
// layer makes resources (mem::make_host_kind for plain memory, the CUDA,
// OpenCL, Vulkan or XRT layer's factory for theirs). No other list names it.
#include <optional>
#include <string>
#include <string_view>
#include <vector>
#include <xfer/mem/resource.hpp>

namespace xfer::mem {

// The layer whose resources make a kind.
enum class kind_maker {
  plain,   // libxfer's own (mem::make_host_kind): every build has them
  cuda,    // xfer/mem/cuda (cudaHostAlloc and friends)
  opencl,  // xfer/mem/opencl (cl_mem and SVM)
  vulkan,  // the Vulkan backend's mapped memory types
  xrt,     // XRT's buffer objects
  none,    // named so a study can say why no layer makes it here
};

// What each command does with a kind. A kind belongs to its maker's sweep
// unless `sweep` is false.
struct kind_roles {
  bool sweep = true;           // a host memory kind of its maker's backends' sweep
  bool overview = false;       // measured by the default run on every backend (a plain kind every program has)
  bool alloc = false;          // an allocation strategy of `xferbench alloc`
  bool alloc_default = false;  // ... measured when none are named
  bool cpu_default = false;    // measured by `xferbench cpu` when no kinds are named
  bool host_block = false;     // host memory the Python pool hands out (not memory that migrates)
};

// What the report's rules need to know of a kind beyond its properties
// (the result file's catalogue carries them, docs/result-schema.md): the
// report compares kinds by these, never by their names.
struct kind_traits {
  // A copy engine moves it in place, with no staging copy by the driver
  // (page-locked, whoever pinned it): the fast side of "pin or stage".
  bool dma_direct = false;
  // The API's own page-locked allocation: what a program gets when it asks
  // its API for pinned memory (the kind a pinned finding quotes).
  bool api_pinned = false;
  // What an ordinary program hands to a copy API: the baseline kinds are
  // measured against.
  bool program_default = false;
  // The same memory as the named kind, placed off a page boundary: the pair
  // the misalignment finding compares.
  std::string_view offset_of = {};
  // Device memory the CPU maps (a BAR), not host memory.
  bool device_memory = false;
};

struct kind_entry {
  std::string_view name;
  std::string_view summary;  // one line; the resource's describe() says how this build makes it
  kind_maker maker;
  // The properties every resource of the kind declares; nullopt where the
  // device decides them (an OpenCL or Vulkan driver's memory).
  std::optional<properties> props;
  kind_roles roles;
  kind_traits traits = {};
};

const char* to_string(kind_maker m);

// Every kind, in report order.
const std::vector<kind_entry>& host_kinds();
// nullptr for a name no kind has.
const kind_entry* find_host_kind(std::string_view name);
// The names of `maker`'s kinds in report order; with sweep_only, those its
// backends sweep.
std::vector<std::string> kind_names_of(kind_maker maker, bool sweep_only = true);

}  // namespace xfer::mem
