#pragma once
// The device-to-device peer matrix: a copy from every selected device's
// memory to every other's (and to its own, the diagonal), through the
// backend's prepare_peer, which says how each pair's copy travels (peer
// access, or staged via host where the API gives no direct path).
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>
#include <xfer/core/backend.hpp>
#include <xfer/core/result.hpp>
#include <xfer/core/runner.hpp>

namespace xfer {

class reporter;

// The points of the matrix: for each size, every (source, destination) pair
// of `devices` in row order. Route peer, direction d2d, no host memory.
std::vector<point_spec> peer_points(const std::string& backend, const std::vector<int>& devices,
                                    const std::vector<std::uint64_t>& sizes);

// Why a pair's copy cannot fit, before anything is allocated (empty: it
// fits): the sweep's check (unavailable_reason: a buffer above the largest
// allocation a device offers) for the source's buffer and the destination's,
// and, where both devices are the host's memory (host stand-ins), both
// buffers against `available_host` bytes (MemAvailable; 0: unknown). A peer
// matrix of sizes that do not fit is then skipped with the reason and
// written, not ended by the kernel's OOM killer.
std::string peer_unfit_reason(const point_spec& p, const std::vector<device_info>& devices,
                              std::uint64_t available_host);

// Measures each point (prepare_peer, then measure) and reports it as it
// completes, with peer_path set; a point that cannot fit (peer_unfit_reason)
// is skipped with the reason instead. Returns the counts; stops between points on
// `stop`. `results` receives every reported point (for the matrix text).
// Each point runs under the watchdog as a sweep's does (core/watchdog.hpp):
// a copy that never returns fails at its bound, the backend's later points
// are skipped, and outcome.abandoned tells the caller to leave by _Exit.
sweep_outcome run_peer_matrix(backend& b, const std::vector<point_spec>& points, const measure_options& options,
                              reporter& out, const std::atomic<bool>& stop, std::vector<point_result>& results);

// A backend's part of the matrix: the devices it measures.
struct peer_run {
  backend* impl = nullptr;
  std::vector<int> devices;
};

// A negative device index is a usage_error.
void check_device_indices(const std::vector<int>& devices);

// Which devices of each chosen backend: those `devices` names that it has
// (all of them when `devices` is empty), each once; a backend with none is
// left out. An index no chosen backend has is a usage_error, as check_device_indices's.
std::vector<peer_run> select_peer_devices(const std::vector<backend*>& chosen, const std::vector<int>& devices);

// run_peer_matrix for each run in turn, the outcomes added up; stops at the
// first interrupted one.
sweep_outcome run_peer_matrices(const std::vector<peer_run>& runs, const std::vector<std::uint64_t>& sizes,
                                const measure_options& options, reporter& out, const std::atomic<bool>& stop,
                                std::vector<point_result>& results);

// The matrices as text, one per backend and size: rows are sources, columns
// destinations, cells GB/s ("-" not ok), then each distinct path and which
// pairs took it.
std::string peer_matrix_text(const std::vector<point_result>& results);

}  // namespace xfer
