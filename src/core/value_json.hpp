#pragma once
// value (core/value.hpp) to nlohmann::json: the one place that converts, kept
// out of the public headers.
#include <nlohmann/json.hpp>
#include <xfer/core/value.hpp>

namespace xfer::detail {

nlohmann::json to_nlohmann(const value& v);

}  // namespace xfer::detail
