#include <fmt/format.h>
#include <xfer/mem/error.hpp>

namespace xfer::mem {

allocation_error::allocation_error(std::string kind, std::size_t bytes, std::string cause)
    : bytes_(bytes),
      cause_(std::move(cause)),
      message_(fmt::format("{}: cannot allocate {} bytes: {}", kind, bytes, cause_)) {}

}  // namespace xfer::mem
