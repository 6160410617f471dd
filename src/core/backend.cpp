#include <stdexcept>
#include <fmt/format.h>
#include <xfer/core/backend.hpp>
#include <xfer/core/errors.hpp>
#include <xfer/mem/kinds.hpp>

namespace xfer {

const char* to_string(direction d) {
  switch (d) {
    case direction::h2d: return "h2d";
    case direction::d2h: return "d2h";
    case direction::bidir: return "bidir";
    case direction::rw: return "rw";
    case direction::d2d: return "d2d";
  }
  return "?";
}

const char* to_string(clock_kind c) { return c == clock_kind::event ? "event" : "wall"; }

clock_kind parse_clock_kind(const std::string& name) {
  if (name == "event") return clock_kind::event;
  if (name == "wall") return clock_kind::wall;
  throw std::invalid_argument("unknown timer '" + name + "' (known: event, wall)");
}

const std::vector<direction>& all_directions() {
  static const std::vector<direction> all{direction::h2d, direction::d2h, direction::bidir, direction::rw,
                                          direction::d2d};
  return all;
}

direction parse_direction(const std::string& name) {
  for (direction d : all_directions())
    if (name == to_string(d)) return d;
  throw usage_error(fmt::format("unknown direction '{}' (known: h2d, d2h, bidir, rw, d2d)", name));
}

std::unique_ptr<mem::host_resource> backend::host_memory(const std::string& kind) const {
  if (auto r = mem::make_host_kind(kind)) return r;
  throw skip_point(fmt::format("backend {} has no host memory kind '{}'", name(), kind));
}

}  // namespace xfer
