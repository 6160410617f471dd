// The Python package's front door to libxfer's settings (xfer/mem/settings.hpp):
// each Copier and BlockCopier reads the environment when it is made (so a
// variable set since is seen, and a bad one is a ValueError naming it), and
// xferbench.settings() returns what the library resolved, with its sources.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <xfer/mem/settings.hpp>

#include "settings.hpp"

namespace nb = nanobind;

namespace xfer::python {

void install_front_door() { mem::install_inputs(mem::inputs_from_environment()); }

namespace {

nb::dict resolved_settings() {
  nb::list entries, notices;
  for (const auto& s : mem::recorded_settings()) {
    nb::dict e;
    e["component"] = s.component;
    e["scope"] = s.scope;
    e["name"] = s.name;
    e["value"] = s.value;
    e["source"] = std::string(mem::to_string(s.source));
    e["origin"] = s.origin;
    entries.append(e);
  }
  for (const auto& n : mem::recorded_notices()) notices.append(n);
  nb::dict out;
  out["settings"] = entries;
  out["notices"] = notices;
  return out;
}

}  // namespace

void bind_settings(nb::module_& m) { m.def("settings", &resolved_settings); }

}  // namespace xfer::python
