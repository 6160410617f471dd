#include <xfer/core/catalogue.hpp>
#include <xfer/mem/kind_registry.hpp>

namespace xfer {
namespace {

// A property a kind's resources declare, or null where the device decides it.
value declared(const mem::kind_entry& k, bool mem::properties::*field) {
  return k.props ? value((*k.props).*field) : value(nullptr);
}

value kind_value(const mem::kind_entry& k) {
  const auto& r = k.roles;
  const auto& t = k.traits;
  return value::object{
      {"summary", k.summary},
      {"maker", mem::to_string(k.maker)},
      {"pinned", declared(k, &mem::properties::pinned)},
      {"device_accessible", declared(k, &mem::properties::device_accessible)},
      {"write_combined", declared(k, &mem::properties::write_combined)},
      {"dma_direct", t.dma_direct},
      {"api_pinned", t.api_pinned},
      {"program_default", t.program_default},
      {"offset_of", t.offset_of},
      {"device_memory", t.device_memory},
      {"roles", value::object{{"sweep", r.sweep},
                              {"overview", r.overview},
                              {"alloc", r.alloc},
                              {"cpu", r.cpu_default},
                              {"host_block", r.host_block}}},
  };
}

value route_value(const route_info& r) {
  value::array dirs;
  for (direction d : r.directions) dirs.emplace_back(to_string(d));
  return value::object{{"family", to_string(r.name.family())},
                       {"role", to_string(r.name.role())},
                       {"directions", std::move(dirs)},
                       {"description", r.description},
                       {"uses_host_memory", r.uses_host_memory},
                       {"block_workload", r.block_workload}};
}

}  // namespace

value make_catalogue() {
  value kinds = value::object{};
  for (const auto& k : mem::host_kinds()) kinds[k.name] = kind_value(k);
  return value::object{{"routes", value::object{}}, {"host_memory", std::move(kinds)}};
}

void add_routes(value& catalogue, const backend& b) {
  value& routes = catalogue["routes"];
  for (const auto& r : b.routes())
    if (!routes.find(r.name.name())) routes[r.name.name()] = route_value(r);
}

}  // namespace xfer
