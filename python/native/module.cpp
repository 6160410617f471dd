// xferbench._native: libxfer's caching pool over host memory kinds and its
// staged copier, for the Python package (python/xferbench wraps these in
// documented, type-hinted classes; use those).
#include <nanobind/nanobind.h>
#include <xfer/config.hpp>

#include "errors.hpp"
#include "pool.hpp"
#include "settings.hpp"

namespace nb = nanobind;

namespace xfer::python {
void bind_copy(nb::module_& m);
void bind_blocks(nb::module_& m);  // blocks.cpp: the block copier (issue 38)
}

NB_MODULE(_native, m) {
  xfer::python::register_errors();
  xfer::python::bind_pool(m);
  xfer::python::bind_copy(m);
  xfer::python::bind_blocks(m);
  xfer::python::bind_settings(m);
  m.attr("version") = XFER_VERSION;
}
