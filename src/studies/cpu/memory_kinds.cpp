#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <xfer/core/errors.hpp>
#include <xfer/cpu/memory_kinds.hpp>
#include <xfer/mem/kind_registry.hpp>
#include <xfer/mem/kinds.hpp>

namespace xfer::cpu {

const std::vector<std::string>& default_kind_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const auto& k : mem::host_kinds())
      if (k.roles.cpu_default) n.emplace_back(k.name);
    return n;
  }();
  return names;
}

std::vector<std::string> known_kind_names(const std::vector<backend_entry>& backends) {
  std::vector<std::string> out = default_kind_names();
  auto add = [&](const std::string& n) {
    if (std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
  };
  for (const auto& n : mem::host_kind_names()) add(n);
  for (const auto& e : backends)
    if (e.impl)
      for (const auto& k : e.impl->host_memory_kinds()) add(k.name);
  return out;
}

std::string uncached_unavailable_reason() {
#if defined(__linux__)
  return "Linux gives a user program no uncached mapping of ordinary RAM (the UC page attribute is set only "
         "inside the kernel, by drivers: ioremap_uc, set_memory_uc), and no backend here offers one";
#else
  return "this platform gives a user program no uncached memory, and no backend here offers one";
#endif
}

std::vector<kind_slot> resolve_kinds(const std::vector<std::string>& names,
                                     const std::vector<backend_entry>& backends) {
  std::vector<kind_slot> out;
  for (const auto& raw : names) {
    kind_slot slot;
    slot.info.name = mem::canonical_kind_name(raw);  // "regular" is the seed's word for it
    std::vector<std::string> why_not;
    // Backends absent for the same reason (cuda-rt and cuda-drv: not compiled in) share one mention.
    std::vector<std::pair<std::vector<std::string>, std::string>> absent;
    for (const auto& e : backends) {
      if (!e.impl) {
        auto same = std::find_if(absent.begin(), absent.end(), [&](const auto& a) { return a.second == e.reason; });
        if (same == absent.end())
          absent.push_back({{e.name}, e.reason});
        else
          same->first.push_back(e.name);
        continue;
      }
      try {
        slot.resource = e.impl->host_memory(slot.info.name);
      } catch (const skip_point& s) {
        why_not.push_back(s.what());
        continue;
      }
      if (!slot.resource) continue;  // a backend that answers with nothing offers nothing
      slot.info.available = true;
      slot.info.provider = e.name;
      slot.info.description = slot.resource->describe();
      slot.info.props = slot.resource->props();
      break;
    }
    for (const auto& [names_absent, reason] : absent)
      why_not.push_back(fmt::format("{}: {}", fmt::join(names_absent, ", "), reason));
    if (!slot.info.available) {
      if (slot.info.name == "uncached")
        slot.info.reason = uncached_unavailable_reason();
      else if (why_not.empty())
        slot.info.reason = "no backend is available to provide it";
      else
        slot.info.reason = fmt::format("no backend here offers it ({})", fmt::join(why_not, "; "));
    }
    out.push_back(std::move(slot));
  }
  return out;
}

}  // namespace xfer::cpu
