#pragma once
// What one sample of a transfer writes, by direction, and the pattern each of
// those places must hold afterwards. Core's verification (src/core/verify.cpp)
// poisons these before a checked sample and checks them after it, through
// what each transfer says about reaching them (transfer::reach_place and
// friends in backend.hpp); the table of which place holds what lives here, once.
#include <cstddef>
#include <cstdint>
#include <span>
#include <xfer/core/backend.hpp>
#include <xfer/core/pattern.hpp>

namespace xfer {

// Pattern seeds: each source gets its own, so a copy from the wrong buffer is caught.
inline constexpr std::uint64_t seed_h2d = 1, seed_d2h = 2;

struct sample_destination {
  bool on_device;      // a device buffer, else host memory
  int buffer;          // 0: the side's first buffer ("a"), 1: its second ("b")
  std::uint64_t seed;  // the pattern it holds after the sample
  // Poisoned before the sample. rw's read-back lands in its own source, which
  // must keep the pattern: only its write side can be poisoned.
  bool poisoned;
  const char* what;    // names the place in a failed check
};

// h2d: device a; d2h: host a; rw: device a, then host a (not poisoned);
// bidir: device a (from host a) and host b (from device b); d2d: device b.
std::span<const sample_destination> sample_destinations(direction d);

// Where a sample reads from, by direction, and the pattern a transfer fills
// it with before sampling: h2d and rw: host a (seed_h2d); d2h: device a
// (seed_d2h); bidir: host a (seed_h2d) and device b (seed_d2h); d2d: device a
// (seed_d2h). What sample_destinations checks follows from these.
struct sample_source {
  bool on_device;  // a device buffer, else host memory
  int buffer;      // 0: the side's first buffer ("a"), 1: its second ("b")
  std::uint64_t seed;
};
std::span<const sample_source> sample_sources(direction d);

// Fills each source of a sample in direction d with its pattern, before
// sampling: a device buffer through fill_device(buffer, seed), host memory
// (`bytes` of it) at host(buffer).
template <class FillDevice, class HostBytes>
void fill_sources(direction d, std::size_t bytes, FillDevice fill_device, HostBytes host) {
  for (const auto& s : sample_sources(d)) {
    if (s.on_device)
      fill_device(s.buffer, s.seed);
    else
      fill_pattern(host(s.buffer), bytes, s.seed);
  }
}

// For tests of the per-sample check: flips the byte at `offset` of place
// `which` of t.places(), through the transfer's own way of reaching it.
// False where the transfer has no such place.
bool corrupt_place_for_testing(transfer& t, std::size_t which, std::uint64_t offset);

}  // namespace xfer
