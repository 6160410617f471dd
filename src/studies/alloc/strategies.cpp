#include "strategies.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <xfer/core/errors.hpp>
#include <xfer/mem/host_resources.hpp>
#include <xfer/mem/kind_registry.hpp>
#include <xfer/mem/kinds.hpp>
#include <xfer/mem/more_resources.hpp>

namespace xfer::alloc_study {
namespace {

// The kinds every build has, spelled and made as the sweep makes them
// (mem::make_host_kind), and the allocators only this study compares.
std::unique_ptr<mem::host_resource> library_resource(const std::string& name) {
  if (auto kind = mem::make_host_kind(name)) return kind;
  if (name == "over-aligned") return std::make_unique<mem::over_aligned_resource>(4096);
  if (name == "mmap") return std::make_unique<mem::mmap_resource>();
  if (name == "numa") return std::make_unique<mem::numa_resource>(0);
  return nullptr;
}

// A strategy of this study (mem::kind_registry), and whether a device API
// makes it (asked of the backends) rather than the library.
const mem::kind_entry* strategy_kind(const std::string& name) {
  const auto* k = mem::find_host_kind(name);
  return k && k->roles.alloc ? k : nullptr;
}

}  // namespace

std::vector<std::string> strategy_names() {
  std::vector<std::string> names;
  for (const auto& k : mem::host_kinds())
    if (k.roles.alloc) names.emplace_back(k.name);
  return names;
}

std::vector<std::string> default_strategy_names() {
  std::vector<std::string> names;
  for (const auto& k : mem::host_kinds())
    if (k.roles.alloc_default) names.emplace_back(k.name);
  // A pool over the plain kind and over the pinned one: what the pool saves on each.
  names.insert(names.end(), {"pool:aligned", "pool:pinned"});
  return names;
}

strategy make_strategy(const std::string& name, const std::vector<backend_entry>& backends) {
  strategy s;
  const bool pooled = name.rfind("pool:", 0) == 0;
  const std::string base = mem::canonical_kind_name(pooled ? name.substr(5) : name);
  s.name = pooled ? "pool:" + base : base;
  if ((s.upstream = library_resource(base))) {
    s.provider = library_provider;
  } else if (const auto* kind = strategy_kind(base); kind && kind->maker != mem::kind_maker::plain) {
    std::vector<std::string> reasons;
    for (const auto& b : backends) {
      if (!b.impl) {
        reasons.push_back(fmt::format("{}: {}", b.name, b.reason));
        continue;
      }
      try {
        s.upstream = b.impl->host_memory(base);
        s.provider = b.name;
        break;
      } catch (const skip_point& e) {
        reasons.push_back(e.what());
      }
    }
    if (!s.upstream) throw skip_point(fmt::format("no backend offers '{}' here ({})", base, fmt::join(reasons, "; ")));
  } else {
    auto known = strategy_names();
    known.emplace_back("pool:<any of these>");
    throw usage_error(fmt::format("unknown allocation strategy '{}' (known: {})", name, fmt::join(known, ", ")));
  }
  if (pooled) s.pool = std::make_unique<mem::caching_pool>(*s.upstream);
  return s;
}

}  // namespace xfer::alloc_study
