#pragma once
// How the staged copier cuts a copy: chunk size, ring depth, thread count,
// and the size below which the plain API is faster. Defaults come from the
// H100 feasibility probe of issue 15 (8 MiB chunks, a ring of 4 pinned
// buffers per direction, parallel memcpy: 53 GB/s host-to-device); a
// calibration can replace them per machine and device, and the environment
// or the caller can override any field.
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace xfer::mem {

class device_step;

struct staged_tuning {
  std::size_t chunk_bytes = std::size_t{8} << 20;
  // Staging buffers in the ring, all threads together. Each thread owns
  // ring_depth / threads of them (at least one), so a thread fills one while
  // the device drains its others and no slot is ever shared between threads.
  unsigned ring_depth = 8;
  unsigned threads = 4;
  // Copies smaller than this go to the plain API (device_step::plain_*).
  std::size_t handoff_bytes = std::size_t{1} << 20;

  // Throws std::invalid_argument naming the field when a value is unusable
  // (0 chunk, depth or threads; chunk over 1 GiB; more than 256 threads).
  void validate() const;
  // threads = min(threads, ring_depth): a thread without a slot would idle.
  unsigned effective_threads() const noexcept;
  unsigned slots_per_thread() const noexcept;  // ring_depth / effective_threads(), at least 1
  bool operator==(const staged_tuning&) const = default;
};

// `base` with any of XFER_STAGED_CHUNK_BYTES, XFER_STAGED_RING_DEPTH,
// XFER_STAGED_THREADS, XFER_STAGED_HANDOFF_BYTES set in the environment
// applied over it. Throws std::invalid_argument naming the variable when one
// is not a positive integer.
staged_tuning tuning_from_environment(staged_tuning base = {});

// The tuning for `step`'s device on this machine: the cached one when this
// process already calibrated it, else calibrate() (when given; the
// defaults when not), cached under "<host name>/<step name>/<device key>".
// The environment overrides apply last. Thread-safe; calibrate() runs once
// per key even when several threads ask at once.
//
// The cache lives for the process (no file yet): a program pays the
// calibration once per run and device.
using staged_calibration = std::function<staged_tuning(device_step&)>;
staged_tuning tuning_for(device_step& step, const staged_calibration& calibrate = {});
std::string tuning_cache_key(device_step& step);
void forget_cached_tunings();  // for tests

}  // namespace xfer::mem
