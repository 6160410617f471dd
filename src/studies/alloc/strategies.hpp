#pragma once
// The allocation strategies the study compares, by name: the library's own
// resources, any kind a backend offers (pinned, registered, ...), and
// "pool:<name>" for the caching pool over any of them.
#include <memory>
#include <string>
#include <vector>
#include <xfer/core/backend.hpp>
#include <xfer/mem/caching_pool.hpp>

namespace xfer::alloc_study {

// The provider of the strategies libxfer makes itself (plain memory).
inline constexpr const char* library_provider = "library";

struct strategy {
  std::string name;
  std::string provider;  // library_provider or the backend that supplied the memory
  std::unique_ptr<mem::host_resource> upstream;
  std::unique_ptr<mem::caching_pool> pool;  // set for "pool:<name>"
  mem::host_resource& resource() const { return pool ? *pool : *upstream; }
};

// Every strategy the study knows (mem::kind_registry's alloc role), in report
// order, without the "pool:" forms: what `xferbench alloc --help` lists and an
// unknown name's message names.
std::vector<std::string> strategy_names();

// The names the study runs when none are given, in report order.
std::vector<std::string> default_strategy_names();

// Resolves a name, in the sweep's spelling of its kind ("malloc", the old
// name, resolves to "pageable"). Throws usage_error for a name nobody knows, skip_point with
// the reasons when it is known but unavailable here (no GPU for "pinned").
strategy make_strategy(const std::string& name, const std::vector<backend_entry>& backends);

}  // namespace xfer::alloc_study
