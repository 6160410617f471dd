// The staged copier for Python: a Copier owns a device step (CUDA on a device,
// or the host step, whose "device memory" is host memory, so the pipeline
// runs and is tested on a machine without a GPU) and a staged_copier over it.
// Arrays arrive through DLPack (any producer nanobind imports: NumPy, torch,
// CuPy), are checked for what the copy needs, and move with the GIL released
// while Ctrl-C still reaches Python (copier::await).
#include <chrono>
#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <initializer_list>
#include <vector>

#include <fmt/format.h>
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <xfer/config.hpp>
#include <xfer/mem/files.hpp>
#include <xfer/mem/registration_cache.hpp>
#include <xfer/mem/staged/host_step.hpp>
#include <xfer/mem/staged/staged_copier.hpp>
#include <xfer/mem/staged/tuning.hpp>
#if XFER_HAVE_CUDA
#include <xfer/mem/cuda/staged_step.hpp>

#include "cuda/api.hpp"  // src/mem/cuda, build tree only: stream synchronisation
#endif

#include "errors.hpp"
#include "settings.hpp"
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
    throw std::invalid_argument(fmt::format("dtypes differ: dst is {}, src is {}",
                                            dtype_name(dst.dtype().code, dst.dtype().bits),
                                            dtype_name(src.dtype().code, src.dtype().bits)));
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

// A tuning argument as libxfer's override text: None is not given; an int
// (not a bool) is its decimal digits, whatever its size (a negative one
// keeps its sign, which the bounds then refuse).
std::optional<std::string> override_text(const char* name, const nb::object& v) {
  if (v.is_none()) return std::nullopt;
  if (!nb::isinstance<nb::int_>(v) || nb::isinstance<nb::bool_>(v))
    throw nb::type_error(fmt::format("{} must be an int or None, not {}", name,
                                     nb::cast<std::string>(nb::str(v.type().attr("__name__"))))
                             .c_str());
  return nb::cast<std::string>(nb::str(v));
}

// The arrays, converted here rather than by the binding: nanobind's own
// refusal (a read-only dst, an object that is no array) is its three-line
// signature dump; these are one line naming the argument.
array readable(nb::handle h, const char* name) {
  array out;
  if (nb::try_cast(h, out)) return out;
  throw nb::type_error(
      fmt::format("{} is not an array (it has neither __dlpack__ nor the buffer protocol)", name).c_str());
}

nb::ndarray<> writable(nb::handle h, const char* name) {
  nb::ndarray<> out;
  if (nb::try_cast(h, out)) return out;
  (void)readable(h, name);  // not an array at all: that message
  throw nb::type_error(fmt::format("{} is read-only (pass a writable array)", name).c_str());
}

class copier;

// A copy on the caller's stream (non_blocking): its completion, and the
// arrays it reads and writes, kept alive until it has ended, whether the
// caller waits or drops the handle (a dropped one waits in its destructor,
// without the GIL: the copier's threads need none). It keeps its Copier
// alive too: wait() is the Copier's await, so Ctrl-C interrupts it as it
// does a blocking copy.
class pending {
 public:
  pending(copier& c, nb::object owner, mem::staged_completion done, nb::object dst, nb::object src, nb::ndarray<> d,
          array s)
      : copier_(c), owner_(std::move(owner)), done_(std::move(done)), dst_(std::move(dst)), src_(std::move(src)),
        d_(std::move(d)), s_(std::move(s)) {}
  pending(const pending&) = delete;
  pending& operator=(const pending&) = delete;
  ~pending();
  // Blocks (without the GIL, Ctrl-C still reaching Python) until the copy
  // has ended; raises its error (CopyError, ValueError) every time it is
  // called.
  void wait() const;
  bool ready() const { return done_.ready(); }
  std::size_t nbytes() const noexcept { return done_.bytes(); }

 private:
  copier& copier_;
  nb::object owner_;  // the Python Copier: copier_ outlives this copy
  mem::staged_completion done_;
  nb::object dst_, src_;  // the Python objects, so their memory outlives the copy
  nb::ndarray<> d_;
  array s_;
};

class copier {
 public:
  // device: -1 for the host step, else a CUDA device.
  // The tuning arguments are Python ints of any size (or None): libxfer
  // bounds them, so 2**70 is a ValueError naming the bound rather than
  // nanobind's signature dump.
  // registration_cache_bytes: None, no cache; else the cache's bound (0:
  // libxfer's default). The cache registers only what pin() is given: the
  // Python side knows when an array goes (xferbench/_copy.py's weakref rule).
  // cache: the tuning cache file (None: the environment's or the default; "off": none).
  copier(int device, const std::string& api, nb::object chunk_bytes, nb::object ring_depth, nb::object threads,
         nb::object handoff_bytes, bool calibrate, bool shared, std::optional<std::size_t> registration_cache_bytes,
         std::optional<std::string> cache)
      : device_(device) {
    install_front_door();
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
    // libxfer's one rule (mem::tuning_for): the machine's tuning (calibrated
    // when asked and not cached: about half a second, once; issue 15), each
    // XFER_STAGED_* variable over it (the front door's inputs), each argument
    // given over those; a bad value is a ValueError naming the argument and
    // its bounds.
    std::vector<mem::staged_override> args;
    for (const auto& [field, name, value] : {std::tuple{mem::staged_field::chunk_bytes, "chunk_bytes", &chunk_bytes},
                                             std::tuple{mem::staged_field::ring_depth, "ring_depth", &ring_depth},
                                             std::tuple{mem::staged_field::threads, "threads", &threads},
                                             std::tuple{mem::staged_field::handoff_bytes, "handoff_bytes",
                                                        &handoff_bytes}})
      if (auto text = override_text(name, *value)) args.push_back({field, name, *text});
    mem::staged_copier_options o;
    {
      nb::gil_scoped_release release;
      mem::staged_calibration measure;
      if (calibrate) measure = [](mem::device_step& s) { return mem::calibrate_staged(s); };
      std::optional<std::string> file;
      if (cache) file = mem::cache_turned_off(*cache) ? "" : *cache;
      o.tuning = mem::tuning_for(*step_, measure, args, file);
    }
    // The process's staging budget: copiers of several devices take turns
    // on one team (issue 37); null where XFER_STAGED_SHARED=0, which (like a
    // bad XFER_STAGED_BUDGET_THREADS) is checked only for a shared copier.
    if (shared) o.budget = mem::process_staging_budget();
    if (registration_cache_bytes) {
      cache_ = std::make_unique<mem::registration_cache>(
          *step_, mem::registration_cache_options{.max_pinned_bytes = *registration_cache_bytes,
                                                  .when = mem::registration_cache_options::policy::explicit_only});
      o.registrations = cache_.get();
    }
    copier_ = std::make_unique<mem::staged_copier>(*step_, std::move(o));
  }

  // The host array's bytes: (address, size), for the weakref rule's keys.
  nb::tuple host_range(nb::handle a_) const {
    array a = readable(a_, "array");
    return nb::make_tuple(reinterpret_cast<std::uintptr_t>(a.data()), a.nbytes());
  }

  // Registers [address, address + bytes) for the copies after it, where the
  // copier would consult the cache (at or above the direction's handoff):
  // (registered, why not). A refusal is no error: the copy is staged.
  nb::tuple pin(std::uintptr_t address, std::size_t bytes, bool to_device) {
    if (!cache_ || bytes == 0 || bytes < copier_->tuning().handoff(to_device)) return nb::make_tuple(false, "");
    std::string why;
    {
      nb::gil_scoped_release release;
      try {
        cache_->pin(reinterpret_cast<const void*>(address), bytes);
      } catch (const mem::registration_error& e) {
        why = e.what();
      }
    }
    return nb::make_tuple(why.empty(), why);
  }

  std::size_t forget(std::uintptr_t address, std::size_t bytes) {
    if (!cache_) return 0;
    nb::gil_scoped_release release;
    return cache_->forget(reinterpret_cast<const void*>(address), bytes);
  }

  nb::object registration_stats() const {
    if (!cache_) return nb::none();
    const auto s = cache_->stats();
    nb::dict d;
    for (const auto& [name, count] : std::initializer_list<std::pair<const char*, std::size_t>>{
             {"max_pinned_bytes", cache_->max_pinned_bytes()}, {"pinned_bytes", s.pinned_bytes},
             {"registrations", s.registrations}, {"registered", s.registered}, {"hits", s.hits},
             {"evicted", s.evicted}, {"forgotten", s.forgotten}, {"stale", s.stale}, {"refused", s.refused}})
      d[name] = count;
    d["last_refusal"] = s.last_refusal;
    return d;
  }

  void to_device(nb::handle dst_, nb::handle src_, nb::handle stream) {
    nb::ndarray<> dst = writable(dst_, "dst");
    array src = readable(src_, "src"), d(dst);
    check_pair(d, src);
    check_device_side("dst", d);
    if (!host_side(src.device_type())) throw std::invalid_argument("src must be host memory for a copy to the device");
    auto s = stream_handle(stream);
    refuse_if_abandoned();
    mem::staged_completion done;
    {
      nb::gil_scoped_release release;
      wait_for_stream(s);
      // An empty array copies nothing, as NumPy's copyto does (the copier
      // refuses a size of 0: in C++ it is almost always a size gone wrong).
      if (src.nbytes() == 0) return;
      done = copier_->copy_to_device_async({dst.data(), dst.nbytes()}, 0, src.data(), src.nbytes());
    }
    await(done, {dst_, src_});
  }

  void to_host(nb::handle dst_, nb::handle src_, nb::handle stream) {
    nb::ndarray<> dst = writable(dst_, "dst");
    array src = readable(src_, "src");
    check_pair(array(dst), src);
    check_device_side("src", src);
    if (!host_side(dst.device_type())) throw std::invalid_argument("dst must be host memory for a copy to the host");
    auto s = stream_handle(stream);
    refuse_if_abandoned();
    mem::staged_completion done;
    {
      nb::gil_scoped_release release;
      wait_for_stream(s);
      if (src.nbytes() == 0) return;
      done = copier_->copy_to_host_async(dst.data(), {const_cast<void*>(src.data()), src.nbytes()}, 0, src.nbytes());
    }
    await(done, {dst_, src_});
  }

  ~copier() {
    if (!abandoned_) return;
    // A copy never returned: the staged copier's destructor would wait for
    // it. Leak it rather than hang the garbage collector.
    (void)copier_.release();
    (void)step_.release();
#if XFER_HAVE_CUDA
    (void)sync_api_.release();
#endif
  }

  // On the caller's stream, without blocking: the copy waits on the device
  // for the work queued on the stream before the call, and the work queued
  // there after it waits for the copy. No stream (None) or 0 is the legacy
  // default stream (torch's and CuPy's default stream hand out 0).
  std::unique_ptr<pending> to_device_async(nb::handle dst, nb::handle src, nb::handle stream) {
    return start_async(true, dst, src, stream);
  }
  std::unique_ptr<pending> to_host_async(nb::handle dst, nb::handle src, nb::handle stream) {
    return start_async(false, dst, src, stream);
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
  bool shared() const noexcept { return copier_->budget() != nullptr; }
  unsigned team_threads() const noexcept { return copier_->team_threads(); }

 private:
  friend class pending;
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

  // Waits for a copy with the GIL released, as copy_to_device would, but
  // runs Python's signal handlers every 50 ms: Python only runs them in the
  // main thread between bytecodes, so a copy that never returns (a hung
  // driver) kept Ctrl-C from ever coming back. A copy interrupted that way is
  // abandoned: its arrays are kept alive for good (it may still write or read
  // them) and the Copier refuses further copies. A copy below the handoff
  // ran on this thread (the plain API's one call) and is already finished.
  void await(const mem::staged_completion& done, std::initializer_list<nb::handle> arrays) {
    for (;;) {
      {
        nb::gil_scoped_release release;
        if (done.wait_for(std::chrono::milliseconds(50))) return;
      }
      if (PyErr_CheckSignals() != 0) {
        abandoned_ = true;
        // The shared budget's threads inside the copy stay with it (a
        // non-blocking copy holds the copier's own, but its device may hold
        // the budget's too): copiers made from now on get a budget of their own.
        mem::retire_process_staging_budget(copier_->budget().get());
        for (auto a : arrays) a.inc_ref();
        throw nb::python_error();
      }
    }
  }

  void refuse_if_abandoned() const {
    if (abandoned_)
      throw std::runtime_error("this Copier's earlier copy was interrupted and never returned: make a new Copier");
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

  // Both directions of the non-blocking form: the same checks as the
  // blocking one, then the copy queued on the stream.
  std::unique_ptr<pending> start_async(bool to_device, nb::handle dst_, nb::handle src_, nb::handle stream) {
    nb::ndarray<> dst = writable(dst_, "dst");
    array src = readable(src_, "src"), d(dst);
    check_pair(d, src);
    const array& host = to_device ? src : d;
    check_device_side(to_device ? "dst" : "src", to_device ? d : src);
    if (!host_side(host.device_type()))
      throw std::invalid_argument(to_device ? "src must be host memory for a copy to the device"
                                            : "dst must be host memory for a copy to the host");
    void* q = queue_of(stream);
    refuse_if_abandoned();
    mem::staged_completion done;
    if (src.nbytes() != 0) {
      nb::gil_scoped_release release;
      const mem::device_ref dev{to_device ? dst.data() : const_cast<void*>(src.data()), src.nbytes()};
      done = to_device ? copier_->copy_to_device_on(dev, 0, src.data(), src.nbytes(), q)
                       : copier_->copy_to_host_on(dst.data(), dev, 0, src.nbytes(), q);
    }
    return std::make_unique<pending>(*this, nb::find(this), std::move(done), nb::borrow(dst_), nb::borrow(src_),
                                     std::move(dst), std::move(src));
  }

  // The stream as the copier's queue handle: the legacy default stream for
  // None and 0 (CU_STREAM_LEGACY; the copier refuses null).
  static void* queue_of(nb::handle stream) {
    const std::uintptr_t s = stream_handle(stream).value_or(0);
    return reinterpret_cast<void*>(s ? s : std::uintptr_t{1});
  }

  int device_;
  std::unique_ptr<mem::device_step> step_;
  std::unique_ptr<mem::registration_cache> cache_;  // before the copier: it outlives it
  std::unique_ptr<mem::staged_copier> copier_;
#if XFER_HAVE_CUDA
  std::unique_ptr<cuda::api> sync_api_;
#endif
  bool abandoned_ = false;
};

pending::~pending() {
  if (done_.ready()) return;
  if (copier_.abandoned_) {
    // A copy of this Copier never returned (Ctrl-C): this one may not
    // either. Leak its arrays rather than hang the garbage collector.
    (void)dst_.release();
    (void)src_.release();
    return;
  }
  nb::gil_scoped_release release;
  try {
    done_.wait();
  } catch (const std::exception&) {
    // Nobody asked: the failure goes with the handle.
  }
}

void pending::wait() const { copier_.await(done_, {dst_, src_}); }

// Host to host: no device involved, one memcpy without the GIL.
void host_copy(nb::handle dst_, nb::handle src_) {
  nb::ndarray<> dst = writable(dst_, "dst");
  array src = readable(src_, "src");
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
  nb::class_<pending>(m, "PendingCopy")
      .def("wait", &pending::wait)
      .def("ready", &pending::ready)
      .def_prop_ro("nbytes", &pending::nbytes);
  nb::class_<copier>(m, "Copier")
      .def(nb::init<int, const std::string&, nb::object, nb::object, nb::object, nb::object, bool, bool,
                    std::optional<std::size_t>, std::optional<std::string>>(),
           nb::arg("device"), nb::arg("api"), nb::arg("chunk_bytes").none(), nb::arg("ring_depth").none(),
           nb::arg("threads").none(), nb::arg("handoff_bytes").none(), nb::arg("calibrate") = true,
           nb::arg("shared") = true, nb::arg("registration_cache_bytes").none() = nb::none(),
           nb::arg("cache").none() = nb::none())
      .def("host_range", &copier::host_range, nb::arg("array"))
      .def("pin", &copier::pin, nb::arg("address"), nb::arg("bytes"), nb::arg("to_device"))
      .def("forget", &copier::forget, nb::arg("address"), nb::arg("bytes"))
      .def("registration_stats", &copier::registration_stats)
      .def("to_device", &copier::to_device, nb::arg("dst"), nb::arg("src"), nb::arg("stream").none())
      .def("to_host", &copier::to_host, nb::arg("dst"), nb::arg("src"), nb::arg("stream").none())
      .def("to_device_async", &copier::to_device_async, nb::arg("dst"), nb::arg("src"), nb::arg("stream").none())
      .def("to_host_async", &copier::to_host_async, nb::arg("dst"), nb::arg("src"), nb::arg("stream").none())
      .def("tuning", &copier::tuning)
      .def_prop_ro("device", &copier::device)
      .def_prop_ro("shared", &copier::shared)
      .def_prop_ro("team_threads", &copier::team_threads);
  m.def("host_copy", &host_copy, nb::arg("dst"), nb::arg("src"));
  m.def("cuda_status", &cuda_status);
}

}  // namespace xfer::python
