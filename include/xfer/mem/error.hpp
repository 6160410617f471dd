#pragma once
// Allocation failures carry the byte count and the cause, so a skipped point or
// an error line can say exactly what was refused.
#include <cstddef>
#include <new>
#include <string>

namespace xfer::mem {

class allocation_error : public std::bad_alloc {
 public:
  allocation_error(std::string kind, std::size_t bytes, std::string cause);
  const char* what() const noexcept override { return message_.c_str(); }
  std::size_t bytes() const noexcept { return bytes_; }
  const std::string& cause() const noexcept { return cause_; }

 private:
  std::size_t bytes_;
  std::string cause_;
  std::string message_;
};

}  // namespace xfer::mem
