#include <xfer/mem/host_resources.hpp>
#include <xfer/mem/kind_registry.hpp>
#include <xfer/mem/kinds.hpp>

namespace xfer::mem {

const std::vector<std::string>& host_kind_names() {
  static const std::vector<std::string> names = kind_names_of(kind_maker::plain);
  return names;
}

const std::vector<std::string>& overview_kind_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const auto& k : host_kinds())
      if (k.roles.overview) n.emplace_back(k.name);
    return n;
  }();
  return names;
}

std::string canonical_kind_name(std::string_view name) {
  if (name == "malloc" || name == "regular") return "pageable";
  return std::string(name);
}

std::unique_ptr<host_resource> make_host_kind(std::string_view name, const kind_options& options) {
  if (name == "pageable") return std::make_unique<pageable_resource>();
  if (name == "pageable-unaligned") return std::make_unique<unaligned_resource>(options.unaligned_offset);
  if (name == "aligned") return std::make_unique<aligned_resource>(options.alignment);
  if (name == "huge") return std::make_unique<huge_page_resource>();
  return nullptr;
}

}  // namespace xfer::mem
