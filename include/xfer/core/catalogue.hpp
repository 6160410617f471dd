#pragma once
// The result file's catalogue (docs/result-schema.md): every route of the
// backends a run used, and every host memory kind this build knows, with what
// core knows of each (a route's family, role and directions; a kind's maker,
// properties and traits). The report selects curves by these, never by a
// route's or a kind's name, so a new route or kind needs no edit there.
#include <xfer/core/backend.hpp>
#include <xfer/core/value.hpp>

namespace xfer {

// A catalogue holding every host memory kind of mem::host_kinds() and no
// routes yet.
value make_catalogue();
// Adds the routes `b` declares (once each: two backends may share a route).
void add_routes(value& catalogue, const backend& b);

}  // namespace xfer
