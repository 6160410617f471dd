// The block copier for Python (issue 38): arrays of blocks, one block per
// row, through DLPack; a mapping of (source block, destination block)
// pairs as an int64 [n, 2] host array. The checks that belong to libxfer
// (indices, overlaps, an empty list) are libxfer's (check_block_job); what
// is checked here is only what DLPack carries: devices, layout, the rows'
// size, the mapping's shape and dtype. Every refusal is a ValueError.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include <fmt/format.h>
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <xfer/config.hpp>
#include <xfer/mem/blocks/block_copier.hpp>
#include <xfer/mem/files.hpp>
#if XFER_HAVE_CUDA
#include <xfer/mem/cuda/block_step.hpp>

#include "cuda/api.hpp"  // src/mem/cuda, build tree only: the device-wide wait for stream=None
#endif

#include "errors.hpp"
#include "settings.hpp"
#include "pool.hpp"

namespace nb = nanobind;

namespace xfer::python {
namespace {

// One array of blocks as the copy needs it: its bytes, where they are, and
// its rows' size (a block is one row).
struct blocks_array {
  void* data;
  std::size_t nbytes, row;
  int device_type, device_id;
  nb::dlpack::dtype dtype;
  bool on_host() const {
    return device_type == dl_cpu || device_type == dl_cuda_host || device_type == dl_cuda_managed;
  }
};

// Bytes per row of an array of blocks: it must have a first dimension and
// its rows must lie one after another (C order within a row, no gaps).
template <class Array>
blocks_array blocks_of(const Array& a, const char* name) {
  if (a.ndim() < 1) throw std::invalid_argument(fmt::format("{} must have a first dimension of blocks (it is 0-d)", name));
  const std::size_t item = (a.dtype().bits * a.dtype().lanes + 7) / 8;
  std::size_t row = item;
  for (std::size_t i = 1; i < a.ndim(); ++i) row *= a.shape(i);
  if (a.stride_ptr()) {
    std::int64_t expect = 1;
    for (std::size_t i = a.ndim(); i-- > 0;) {
      if (a.shape(i) != 1 && a.stride(i) != expect)
        throw std::invalid_argument(fmt::format("{} is not C-contiguous (pass a contiguous array)", name));
      expect *= static_cast<std::int64_t>(a.shape(i));
    }
  }
  return {const_cast<void*>(static_cast<const void*>(a.data())), a.nbytes(), row, a.device_type(), a.device_id(),
          a.dtype()};
}

// The destination must be writable, the source only readable.
blocks_array destination(nb::handle h) {
  nb::ndarray<> out;
  if (nb::try_cast(h, out)) return blocks_of(out, "dst");
  nb::ndarray<nb::ro> ro;
  if (nb::try_cast(h, ro)) throw nb::type_error("dst is read-only (pass a writable array)");
  throw nb::type_error("dst is not an array (it has neither __dlpack__ nor the buffer protocol)");
}

blocks_array source(nb::handle h) {
  nb::ndarray<nb::ro> in;
  if (nb::try_cast(h, in)) return blocks_of(in, "src");
  throw nb::type_error("src is not an array (it has neither __dlpack__ nor the buffer protocol)");
}

// The mapping's pairs, copied (a snapshot: what is checked is what moves,
// whatever another thread does to the array meanwhile) into this thread's
// buffer, kept from call to call (at its largest mapping's size), with one
// memcpy where the rows lie as block_pairs do. With a new vector filled pair
// by pair each call the native call ran 8 us behind C++'s block_copier::copy
// at 4096 pairs on the host step and 25 at 16384; 6.5 and 19 this way
// (python/benchmarks/blocks_call_overhead.py).
static_assert(std::is_trivially_copyable_v<mem::block_pair> && sizeof(mem::block_pair) == 2 * sizeof(std::int64_t) &&
                  offsetof(mem::block_pair, src) == 0 && offsetof(mem::block_pair, dst) == sizeof(std::int64_t),
              "a C-contiguous mapping row must have a block_pair's layout");
// At most `max_pairs` rows (the destination's blocks: no destination block is
// written twice), checked before anything is sized by the row count: a
// 16-byte broadcast view can claim 10^9 rows.
std::span<const mem::block_pair> pairs_of(nb::handle h, std::size_t max_pairs) {
  thread_local std::vector<mem::block_pair> out;
  nb::ndarray<nb::ro> m;
  if (!nb::try_cast(h, m)) throw std::invalid_argument("mapping is not an array (pass an int64 [n, 2] array)");
  if (m.device_type() != dl_cpu && m.device_type() != dl_cuda_host)
    throw std::invalid_argument("mapping must be in host memory (an int64 [n, 2] NumPy array or CPU tensor)");
  if (m.dtype() != nb::dtype<std::int64_t>())
    throw std::invalid_argument(
        fmt::format("mapping must be int64 (it is {})", dtype_name(m.dtype().code, m.dtype().bits)));
  if (m.ndim() != 2 || m.shape(1) != 2)
    throw std::invalid_argument(fmt::format("mapping must have shape [n, 2] (its shape has {} dimension{}{})",
                                            m.ndim(), m.ndim() == 1 ? "" : "s",
                                            m.ndim() == 2 ? fmt::format(": [{}, {}]", m.shape(0), m.shape(1)) : ""));
  if (m.shape(0) > max_pairs)
    throw std::invalid_argument(fmt::format("mapping has {} pairs, more than dst's {} blocks (each destination block "
                                            "is written once)",
                                            m.shape(0), max_pairs));
  const auto* p = static_cast<const std::int64_t*>(m.data());
  const std::int64_t s0 = m.stride_ptr() ? m.stride(0) : 2, s1 = m.stride_ptr() ? m.stride(1) : 1;
  out.resize(m.shape(0));
  if ((s0 == 2 || out.size() <= 1) && s1 == 1)  // rows of two int64 one after another: block_pairs as they lie
    std::memcpy(static_cast<void*>(out.data()), p, out.size() * sizeof(mem::block_pair));
  else
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = {p[i * s0], p[i * s0 + s1]};
  return out;
}

class block_copier_binding {
 public:
  // device: -1 for the host block step, else a CUDA device.
  // cache: the rankings' file (None: the environment's or the default; "off": none).
  // policy: "alone" or "beside_compute" (None: the environment's, else alone).
  block_copier_binding(int device, std::optional<std::string> way, bool calibrate, std::optional<std::string> cache,
                       std::optional<std::string> policy)
      : device_(device) {
    install_front_door();
    mem::block_copier_options o;
    if (cache) o.cache_file = mem::cache_turned_off(*cache) ? "" : *cache;
    if (way) o.way = mem::parse_block_way(*way);
    if (policy) o.policy = mem::parse_block_policy(*policy);
    o.calibrate = calibrate;
    if (device < 0) {
      step_ = std::make_unique<mem::host_block_step>();
    } else {
#if XFER_HAVE_CUDA
      try {
        step_ = cuda::make_block_step(device);
        device_api_ = cuda::make_runtime_api();
      } catch (const std::runtime_error& e) {
        throw cuda_unavailable(fmt::format("no CUDA block copier on device {}: {}", device, e.what()));
      }
#else
      throw cuda_unavailable("this build of xferbench has no CUDA (built without a CUDA toolkit)");
#endif
    }
    copier_ = std::make_unique<mem::block_copier>(*step_, o);
  }

  // Returns the way used. stream: a stream handle (0: none), resolved from
  // torch/CuPy objects by the Python side.
  std::string copy(nb::handle dst_, nb::handle src_, nb::handle mapping, std::uintptr_t stream) {
    const blocks_array dst = destination(dst_), src = source(src_);
    const auto pairs = pairs_of(mapping, dst.row ? dst.nbytes / dst.row : 0);  // this thread's until the next call
    if (src.row != dst.row)
      throw std::invalid_argument(
          fmt::format("rows differ: dst's blocks are {} bytes, src's {} bytes (one block is one row)", dst.row, src.row));
    if (dst.dtype != src.dtype)
      throw std::invalid_argument(fmt::format("dtypes differ: dst is {}, src is {}",
                                              dtype_name(dst.dtype.code, dst.dtype.bits),
                                              dtype_name(src.dtype.code, src.dtype.bits)));
    // Which side is the device's: for the host step, dst (its "device
    // memory" is host memory); for CUDA, the CUDA array.
    // The list and the arrays as the caller named them: libxfer's own checks speak of host and device, which two
    // host arrays are not.
    if (pairs.empty()) throw std::invalid_argument("mapping: the block list is empty (it has no [src, dst] pair)");
    const auto* s = static_cast<const char*>(src.data);
    const auto* d = static_cast<const char*>(dst.data);
    if (device_ < 0 && s < d + dst.nbytes && d < s + src.nbytes)
      throw std::invalid_argument("src and dst overlap (a block read after another pair wrote it would depend on the "
                                  "order)");
    try {
      mem::check_block_pairs(pairs, src.row ? src.nbytes / src.row : 0, dst.row ? dst.nbytes / dst.row : 0,
                             "src", "dst");
    } catch (const mem::block_error& e) {
      throw std::invalid_argument(fmt::format("mapping: {}", e.what()));
    }
    const bool to_device = device_ < 0 ? true : dst.device_type == dl_cuda;
    const blocks_array& host = to_device ? src : dst;
    const blocks_array& dev = to_device ? dst : src;
    check_sides(host, dev);
    const mem::block_job job{to_device ? mem::staged_direction::to_device : mem::staged_direction::to_host,
                             host.data, host.nbytes, {dev.data, dev.nbytes}, dst.row, pairs,
                             reinterpret_cast<void*>(stream)};
    nb::gil_scoped_release release;
    if (!stream) wait_for_device();
    return std::string(to_string(copier_->copy(job)));
  }

  int device() const noexcept { return device_; }
  mem::block_policy policy() const noexcept { return copier_->policy(); }

 private:
  void check_sides(const blocks_array& host, const blocks_array& dev) const {
    if (!host.on_host()) throw std::invalid_argument("one of dst and src must be host memory");
    if (device_ < 0) {
      if (!dev.on_host()) throw std::invalid_argument("the host block copier takes host arrays on both sides");
    } else if (dev.device_type != dl_cuda || dev.device_id != device_) {
      throw std::invalid_argument(fmt::format("the device side must be CUDA memory of device {} (it is DLPack device "
                                              "({}, {}))",
                                              device_, dev.device_type, dev.device_id));
    }
  }

  // With no stream named, the producer's work is not known: as copy() does,
  // everything queued on the device finishes first.
  void wait_for_device() {
#if XFER_HAVE_CUDA
    if (!device_api_) return;
    device_api_->make_current(device_);
    device_api_->synchronize();
#endif
  }

  int device_;
#if XFER_HAVE_CUDA
  std::unique_ptr<cuda::api> device_api_;
#endif
  std::unique_ptr<mem::block_step> step_;
  std::unique_ptr<mem::block_copier> copier_;
};

}  // namespace

void bind_blocks(nb::module_& m) {
  nb::class_<block_copier_binding>(m, "BlockCopier")
      .def(nb::init<int, std::optional<std::string>, bool, std::optional<std::string>, std::optional<std::string>>(),
           nb::arg("device"), nb::arg("way").none(), nb::arg("calibrate") = true, nb::arg("cache").none() = nb::none(),
           nb::arg("policy").none() = nb::none())
      .def_prop_ro("policy", [](const block_copier_binding& b) { return std::string(mem::to_string(b.policy())); })
      .def("copy", &block_copier_binding::copy, nb::arg("dst"), nb::arg("src"), nb::arg("mapping"),
           nb::arg("stream") = 0)
      .def_prop_ro("device", &block_copier_binding::device);
}

}  // namespace xfer::python
