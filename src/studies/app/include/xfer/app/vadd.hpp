#pragma once
// The vector-add study's vocabulary (seeds 000/003): a vector add offloaded
// to a device, timed phase by phase, for one host allocation strategy at a
// time. Each backend that can run it has its part beside it
// (src/backends/<name>/vadd_app.*), and make_vadd_app() in
// xfer/backends/vadd_registry.hpp returns a backend's; the study
// (app_study.hpp) runs and tabulates them. Only this header is shared with
// the backends' parts, so they depend on the vocabulary, never on the study.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>
#include <xfer/core/backend.hpp>

namespace xfer {

enum class vadd_phase : std::size_t {
  init,      // getting the runtime/context ready (the first run in a process pays creation)
  allocate,  // allocating the host buffers (and device buffers) with the strategy
  populate,  // writing the inputs on the host
  cpu_vadd,  // the CPU baseline loop
  map,       // mapping/registering host buffers for the device (buffer objects, pinning)
  write,     // moving the inputs to the device
  launch,    // setting kernel arguments and enqueueing the kernel
  kernel,    // the kernel itself, to completion
  read,      // moving the result back
  verify,    // checking the device's result against the CPU's
};
inline constexpr std::size_t vadd_phase_count = 10;
inline constexpr std::array<const char*, vadd_phase_count> vadd_phase_names{
    "init", "allocate", "populate", "cpu_vadd", "map", "write", "launch", "kernel", "read", "verify"};
inline constexpr std::array<const char*, vadd_phase_count> vadd_phase_labels{
    "Runtime initialisation", "Buffer allocation", "Buffer population", "CPU vadd (baseline)", "Buffer mapping",
    "Write inputs out", "Set args + launch", "Kernel runtime", "Read result back", "Verify"};

// Seconds per phase; a negative value means the phase does not apply (a
// zero-copy strategy writes nothing out; the host backend launches nothing).
struct vadd_times {
  std::array<double, vadd_phase_count> seconds{-1, -1, -1, -1, -1, -1, -1, -1, -1, -1};
  bool verified = false;
  double& operator[](vadd_phase p) { return seconds[static_cast<std::size_t>(p)]; }
  double operator[](vadd_phase p) const { return seconds[static_cast<std::size_t>(p)]; }
};

// The CPU side every backend shares, so the baseline is the same code everywhere.
void vadd_populate(std::uint32_t* a, std::uint32_t* b, std::size_t n);
void vadd_cpu(const std::uint32_t* a, const std::uint32_t* b, std::uint32_t* out, std::size_t n);
// Index of the first element where got != expected, or n when all agree.
std::size_t vadd_first_mismatch(const std::uint32_t* got, const std::uint32_t* expected, std::size_t n);

class vadd_app {
 public:
  virtual ~vadd_app() = default;
  // The allocation strategies (host memory kinds) this backend can run it with.
  virtual std::vector<kind_support> strategies() const = 0;
  // One whole run of n-element vectors. Throws skip_point when the strategy
  // cannot run here (with the reason); verified says whether the device's
  // result matched the CPU's.
  virtual vadd_times run(const std::string& strategy, std::size_t n) = 0;
};

}  // namespace xfer
