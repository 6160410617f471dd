#include <xfer/app/vadd.hpp>

namespace xfer {

// Inputs that are never zero and differ by position, so a kernel that skips
// elements or reads the wrong index cannot pass.
void vadd_populate(std::uint32_t* a, std::uint32_t* b, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    a[i] = static_cast<std::uint32_t>(i * 2654435761u) | 1u;
    b[i] = static_cast<std::uint32_t>(i + 0x12345u);
  }
}

void vadd_cpu(const std::uint32_t* a, const std::uint32_t* b, std::uint32_t* out, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

std::size_t vadd_first_mismatch(const std::uint32_t* got, const std::uint32_t* expected, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i)
    if (got[i] != expected[i]) return i;
  return n;
}

}  // namespace xfer
