#include <fmt/format.h>

#include "api.hpp"

namespace xfer::cuda {

api_error::api_error(const std::string& call, int code, const std::string& error, const std::string& context)
    : std::runtime_error(context.empty() ? fmt::format("{} failed: {}", call, error)
                                         : fmt::format("{} failed ({}): {}", call, context, error)),
      code_(code),
      error_(error) {}

}  // namespace xfer::cuda
