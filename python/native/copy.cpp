// The staged copier for Python: a Copier owns a device step (CUDA on a device,
// or the host step, whose "device memory" is host memory, so the pipeline
// runs and is tested on a machine without a GPU) and a staged_copier over it.
// Arrays arrive through DLPack (any producer nanobind imports: NumPy, torch,
// CuPy), are checked for what the copy needs, and move with the GIL released.
#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include <fmt/format.h>
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <xfer/config.hpp>
#include <xfer/mem/staged/host_step.hpp>
#include <xfer/mem/staged/staged_copier.hpp>
#if XFER_HAVE_CUDA
#include <xfer/mem/cuda/staged_step.hpp>

#include "cuda/api.hpp"  // src/mem/cuda, build tree only: stream synchronisation
#endif

#include "errors.hpp"
#include "pool.hpp"

namespace nb = nanobind;

namespace xfer::python {
namespace {

using array = nb::ndarray<nb::ro>;

bool host_side(int device_type) {
  return device_type == dl_cpu || device_type == dl_cuda_host || device_type == dl_cuda_managed;
}

// C order without gaps: the copy moves one run of bytes.
bool contiguous(const array& a) {
  if (!a.stride_ptr() || a.size() == 0) return true;  // an empty array has no bytes to lay out
  std::int64_t expect = 1;
  for (std::size_t i = a.ndim(); i-- > 0;) {
    if (a.shape(i) != 1 && a.stride(i) != expect) return false;
    expect *= static_cast<std::int64_t>(a.shape(i));
  }
  return true;
}

void check_pair(const array& dst, const array& src) {
  if (!contiguous(dst)) throw std::invalid_argument("dst is not C-contiguous (pass a contiguous array)");
  if (!contiguous(src)) throw std::invalid_argument("src is not C-contiguous (pass a contiguous array)");
  if (dst.dtype() != src.dtype())
    throw std::invalid_argument(fmt::format("dtypes differ: dst (code {}, {} bits), src (code {}, {} bits)",
                                            dst.dtype().code, dst.dtype().bits, src.dtype().code,
                                            src.dtype().bits));
  if (dst.nbytes() != src.nbytes())
    throw std::invalid_argument(fmt::format("sizes differ: dst {} bytes, src {} bytes", dst.nbytes(), src.nbytes()));
}

// The caller's stream as a handle: an int, or an object with the attribute
// torch (cuda_stream) or CuPy (ptr) gives a stream's handle.
std::optional<std::uintptr_t> stream_handle(nb::handle s) {
  if (s.is_none()) return std::nullopt;
  if (nb::hasattr(s, "cuda_stream")) s = s.attr("cuda_stream");
  else if (nb::hasattr(s, "ptr")) s = s.attr("ptr");
  if (!nb::isinstance<nb::int_>(s)) throw std::invalid_argument("stream must be None, an int handle, or a torch/CuPy stream");
  return nb::cast<std::uintptr_t>(s);
}

class copier {
 public:
  // device: -1 for the host step, else a CUDA device.
  copier(int device, const std::string& api, std::optional<std::size_t> chunk_bytes,
         std::optional<unsigned> ring_depth, std::optional<unsigned> threads,
         std::optional<std::size_t> handoff_bytes, bool calibrate)
      : device_(device) {
    if (device < 0) {
      step_ = std::make_unique<mem::host_step>();
    } else {
#if XFER_HAVE_CUDA
      if (api != "runtime" && api != "driver")
        throw std::invalid_argument(fmt::format("api must be 'runtime' or 'driver', not '{}'", api));
      try {
        step_ = cuda::make_staged_step(device, api == "driver" ? cuda::allocating_api::driver
                                                                : cuda::allocating_api::runtime);
        sync_api_ = cuda::make_runtime_api();
      } catch (const std::runtime_error& e) {
        throw cuda_unavailable(fmt::format("no CUDA copier on device {}: {}", device, e.what()));
      }
#else
      (void)api;
      throw cuda_unavailable("this build of xferbench has no CUDA (built without a CUDA toolkit)");
#endif
    }
    mem::staged_copier_options o;
    if (chunk_bytes || ring_depth || threads || handoff_bytes) {
      mem::staged_tuning t = mem::tuning_for(*step_);
      if (chunk_bytes) t.chunk_bytes = *chunk_bytes;
      if (ring_depth) t.ring_depth = *ring_depth;
      if (threads) t.threads = *threads;
      // One handoff for both directions, as XFER_STAGED_HANDOFF_BYTES.
      if (handoff_bytes) t.handoff_to_device_bytes = t.handoff_to_host_bytes = *handoff_bytes;
      t.validate();
      o.tuning = t;
    } else if (calibrate) {
      // The machine's tuning: cached per machine and device, else measured
      // now (about half a second, once; issue 15). Without it a Python
      // user's first copier would run libxfer's defaults, which are not this
      // machine's best.
      nb::gil_scoped_release release;
      o.tuning = mem::tuning_for(*step_, [](mem::device_step& s) { return mem::calibrate_staged(s); });
    }
    copier_ = std::make_unique<mem::staged_copier>(*step_, std::move(o));
  }

  void to_device(nb::ndarray<> dst, array src, nb::handle stream) {
    array d(dst);
    check_pair(d, src);
    check_device_side("dst", d);
    if (!host_side(src.device_type())) throw std::invalid_argument("src must be host memory for a copy to the device");
    auto s = stream_handle(stream);
    nb::gil_scoped_release release;
    wait_for_stream(s);
    // An empty array copies nothing, as NumPy's copyto does (the copier
    // refuses a size of 0: in C++ it is almost always a size gone wrong).
    if (src.nbytes() == 0) return;
    copier_->copy_to_device({dst.data(), dst.nbytes()}, 0, src.data(), src.nbytes());
  }

  void to_host(nb::ndarray<> dst, array src, nb::handle stream) {
    check_pair(array(dst), src);
    check_device_side("src", src);
    if (!host_side(dst.device_type())) throw std::invalid_argument("dst must be host memory for a copy to the host");
    auto s = stream_handle(stream);
    nb::gil_scoped_release release;
    wait_for_stream(s);
    if (src.nbytes() == 0) return;
    copier_->copy_to_host(dst.data(), {const_cast<void*>(src.data()), src.nbytes()}, 0, src.nbytes());
  }

  nb::dict tuning() const {
    const auto& t = copier_->tuning();
    nb::dict d;
    d["chunk_bytes"] = t.chunk_bytes;
    d["ring_depth"] = t.ring_depth;
    d["threads"] = t.threads;
    d["handoff_to_device_bytes"] = t.handoff_to_device_bytes;
    d["handoff_to_host_bytes"] = t.handoff_to_host_bytes;
    return d;
  }
  int device() const noexcept { return device_; }

 private:
  // The device side: the host step's "device memory" is host memory; a CUDA
  // copier's is memory of its own device.
  void check_device_side(const char* which, const array& a) const {
    if (device_ < 0) {
      if (!host_side(a.device_type()))
        throw std::invalid_argument(fmt::format("{} must be host memory for the host copier", which));
    } else if (a.device_type() != dl_cuda || a.device_id() != device_) {
      throw std::invalid_argument(fmt::format("{} must be CUDA memory of device {} (it is DLPack device ({}, {}))",
                                              which, device_, a.device_type(), a.device_id()));
    }
  }

  // The staged copier runs on streams of its own and does not wait for work
  // queued before the call. So the producer's work must be complete first:
  // the caller's stream when one is given, else the whole device (the DLPack
  // import ordered the producer's stream before the legacy default stream).
  void wait_for_stream(std::optional<std::uintptr_t> s) {
#if XFER_HAVE_CUDA
    if (!sync_api_) return;
    sync_api_->make_current(device_);
    if (s) sync_api_->synchronize_stream(reinterpret_cast<cuda::stream_t>(*s));
    else sync_api_->synchronize();
#else
    (void)s;
#endif
  }

  int device_;
  std::unique_ptr<mem::device_step> step_;
  std::unique_ptr<mem::staged_copier> copier_;
#if XFER_HAVE_CUDA
  std::unique_ptr<cuda::api> sync_api_;
#endif
};

// Host to host: no device involved, one memcpy without the GIL.
void host_copy(nb::ndarray<> dst, array src) {
  check_pair(array(dst), src);
  if (!host_side(dst.device_type()) || !host_side(src.device_type()))
    throw std::invalid_argument("host_copy needs host memory on both sides");
  nb::gil_scoped_release release;
  if (src.nbytes()) std::memmove(dst.data(), src.data(), src.nbytes());
}

// How many CUDA devices this process can use (0 when CUDA cannot start), and
// why not when none.
nb::tuple cuda_status() {
#if XFER_HAVE_CUDA
  try {
    auto a = cuda::make_runtime_api();
    int n = a->device_count();
    return nb::make_tuple(n, n ? std::string() : std::string("no CUDA device"));
  } catch (const std::exception& e) {
    return nb::make_tuple(0, std::string(e.what()));
  }
#else
  return nb::make_tuple(0, std::string("this build of xferbench has no CUDA (built without a CUDA toolkit)"));
#endif
}

}  // namespace

void bind_copy(nb::module_& m) {
  nb::class_<copier>(m, "Copier")
      .def(nb::init<int, const std::string&, std::optional<std::size_t>, std::optional<unsigned>,
                    std::optional<unsigned>, std::optional<std::size_t>, bool>(),
           nb::arg("device"), nb::arg("api"), nb::arg("chunk_bytes").none(), nb::arg("ring_depth").none(),
           nb::arg("threads").none(), nb::arg("handoff_bytes").none(), nb::arg("calibrate") = true)
      .def("to_device", &copier::to_device, nb::arg("dst"), nb::arg("src"), nb::arg("stream").none())
      .def("to_host", &copier::to_host, nb::arg("dst"), nb::arg("src"), nb::arg("stream").none())
      .def("tuning", &copier::tuning)
      .def_prop_ro("device", &copier::device);
  m.def("host_copy", &host_copy, nb::arg("dst"), nb::arg("src"));
  m.def("cuda_status", &cuda_status);
}

}  // namespace xfer::python
