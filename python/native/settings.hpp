#pragma once
#include <nanobind/nanobind.h>

namespace xfer::python {

// Installs libxfer's inputs from the environment (the CLI's front door's
// rule); throws std::invalid_argument (a ValueError) naming a bad variable.
void install_front_door();
// xferbench._native.settings(): {"settings": [...], "notices": [...]}.
void bind_settings(nanobind::module_& m);

}  // namespace xfer::python
