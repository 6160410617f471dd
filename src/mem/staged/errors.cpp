#include <fmt/format.h>
#include <xfer/mem/staged/device_step.hpp>

namespace xfer::mem {

std::string_view to_string(staged_direction d) noexcept {
  return d == staged_direction::to_device ? "host-to-device" : "device-to-host";
}

namespace {
std::string message(staged_error::reason why, staged_direction dir, std::size_t bytes, std::size_t at,
                    const std::string& cause) {
  if (why == staged_error::reason::bad_argument)
    return fmt::format("staged {} copy of {} bytes refused: {}", to_string(dir), bytes, cause);
  if (why == staged_error::reason::device)
    return fmt::format("staged {} copy of {} bytes failed at byte {}: {}", to_string(dir), bytes, at, cause);
  return fmt::format("staged {} copy of {} bytes failed: {}", to_string(dir), bytes, cause);
}
}  // namespace

staged_error::staged_error(reason why, staged_direction dir, std::size_t bytes, std::size_t at_offset, std::string cause)
    : std::runtime_error(message(why, dir, bytes, at_offset, cause)),
      why_(why),
      dir_(dir),
      bytes_(bytes),
      offset_(at_offset),
      cause_(std::move(cause)) {}

}  // namespace xfer::mem

namespace xfer::mem {

std::unique_ptr<queue_mark> device_step::mark(void*) {
  throw device_step_error(fmt::format("the {} step cannot order a copy after a queue of the caller's", name()));
}

std::unique_ptr<queue_hold> device_step::hold(void*) {
  throw device_step_error(fmt::format("the {} step cannot make a queue of the caller's wait for a copy", name()));
}

std::string device_step::registration_unsupported() const {
  return fmt::format("the {} step cannot register host memory", name());
}

void device_step::register_host(void* p, std::size_t bytes) {
  throw device_step_error(fmt::format("registering {} bytes at {}: {}", bytes, p, registration_unsupported()));
}

void device_step::unregister_host(void*) noexcept {}

int device_step::registered(const void*, std::size_t) const noexcept { return -1; }

}  // namespace xfer::mem
