#include <xfer/core/sample_check.hpp>

namespace xfer {

std::span<const sample_destination> sample_destinations(direction d) {
  static constexpr sample_destination h2d[] = {{true, 0, seed_h2d, true, "h2d destination (device buffer)"}};
  static constexpr sample_destination d2h[] = {{false, 0, seed_d2h, true, "d2h destination (host memory)"}};
  // The device side tells a write that did not land; the host side a
  // read-back that brought something else (one that never ran leaves the
  // source there, which no check after the fact can tell).
  static constexpr sample_destination rw[] = {{true, 0, seed_h2d, true, "rw write destination (device buffer)"},
                                              {false, 0, seed_h2d, false, "rw read-back destination (host memory)"}};
  static constexpr sample_destination bidir[] = {{true, 0, seed_h2d, true, "bidir h2d destination (device buffer)"},
                                                 {false, 1, seed_d2h, true, "bidir d2h destination (host memory)"}};
  static constexpr sample_destination d2d[] = {{true, 1, seed_d2h, true, "d2d destination (device buffer)"}};
  switch (d) {
    case direction::h2d: return h2d;
    case direction::d2h: return d2h;
    case direction::rw: return rw;
    case direction::bidir: return bidir;
    case direction::d2d: return d2d;
  }
  return {};
}

std::span<const sample_source> sample_sources(direction d) {
  static constexpr sample_source from_host[] = {{false, 0, seed_h2d}};  // h2d, rw
  static constexpr sample_source from_device[] = {{true, 0, seed_d2h}};  // d2h, d2d
  static constexpr sample_source bidir[] = {{false, 0, seed_h2d}, {true, 1, seed_d2h}};
  switch (d) {
    case direction::h2d:
    case direction::rw: return from_host;
    case direction::d2h:
    case direction::d2d: return from_device;
    case direction::bidir: return bidir;
  }
  return {};
}

}  // namespace xfer
