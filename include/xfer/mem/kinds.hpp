#pragma once
// The catalogue of host memory kinds every build has, by CLI name.
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>
#include <xfer/mem/resource.hpp>

namespace xfer::mem {

struct kind_options {
  std::size_t alignment = 4096;      // for "aligned"
  std::size_t unaligned_offset = 16;  // for "pageable-unaligned"
};

// The kinds in the order reports list them.
const std::vector<std::string>& host_kind_names();
// The plain kinds of host_kind_names() an ordinary program hands to a copy
// API (what the default run measures beside each backend's own fast kind).
const std::vector<std::string>& overview_kind_names();

// One spelling per kind across the sweep, the CPU study and the allocator
// study: an older name ("malloc", the allocator study's, and "regular", the
// CPU study's, are both "pageable") gives the kind's name; any other name is
// returned as it is.
std::string canonical_kind_name(std::string_view name);

// nullptr when `name` is not one of host_kind_names(). Throws
// std::invalid_argument for options the kind cannot take.
std::unique_ptr<host_resource> make_host_kind(std::string_view name, const kind_options& options = {});

}  // namespace xfer::mem
