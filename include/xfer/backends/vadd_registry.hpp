#pragma once
// The vector-add study's part of each backend that has one (src/backends/
// <name>/vadd_app.*), found for a constructed backend. Beside registry.hpp
// rather than in the backend interface, so a backend carries no study and
// the study (src/studies/app) knows no backend.
#include <memory>
#include <xfer/core/backend.hpp>

namespace xfer {

class vadd_app;  // xfer/app/vadd.hpp

// The vector add of `b` on `device` (b must outlive it); nullptr when that
// backend has none. usage_error for a device the backend does not have.
std::unique_ptr<vadd_app> make_vadd_app(backend& b, int device);

}  // namespace xfer
