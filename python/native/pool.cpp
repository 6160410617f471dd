#include "pool.hpp"

#include <algorithm>
#include <atomic>
#include <stdexcept>

#include <fmt/format.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>
#include <xfer/config.hpp>
#include <xfer/mem/kind_registry.hpp>
#include <xfer/mem/kinds.hpp>
#if XFER_HAVE_CUDA
#include <xfer/mem/cuda/host_kinds.hpp>
#endif

#include "errors.hpp"

namespace nb = nanobind;

namespace xfer::python {

struct pool_state {
  std::string kind;
  std::unique_ptr<mem::host_resource> upstream;
  std::unique_ptr<mem::caching_pool> pool;
  std::size_t max_cached_bytes = 0;
  std::size_t alignment = 64;
  int device_type = dl_cpu;
  std::atomic<bool> closed{false};
};

namespace {

std::unique_ptr<mem::host_resource> make_kind(const std::string& name, const std::string& api) {
  if (api != "runtime" && api != "driver")
    throw std::invalid_argument(fmt::format("api must be 'runtime' or 'driver', not '{}'", api));
  auto known = kind_names();
  if (std::find(known.begin(), known.end(), name) == known.end())
    throw std::invalid_argument(fmt::format("unknown memory kind '{}' (this build knows: {})", name,
                                            fmt::join(known, ", ")));
  if (auto r = mem::make_host_kind(name)) return r;
#if XFER_HAVE_CUDA
  std::unique_ptr<mem::host_resource> r;
  try {
    r = cuda::make_cuda_host_kind(name, api == "driver" ? cuda::allocating_api::driver
                                                        : cuda::allocating_api::runtime);
  } catch (const std::runtime_error& e) {
    throw cuda_unavailable(fmt::format("memory kind '{}' needs CUDA: {}", name, e.what()));
  }
  if (r) return r;
#endif
  throw std::invalid_argument(fmt::format("unknown memory kind '{}'", name));
}

}  // namespace

// The registry's host blocks (managed memory migrates: not one) that this
// build can make: the plain ones, and CUDA's where CUDA is compiled in.
std::vector<std::string> kind_names() {
  std::vector<std::string> names;
  for (const auto& k : mem::host_kinds())
    if (k.roles.host_block && (k.maker == mem::kind_maker::plain || (XFER_HAVE_CUDA && k.maker == mem::kind_maker::cuda)))
      names.emplace_back(k.name);
  return names;
}

// ---- block ------------------------------------------------------------------

block::block(std::shared_ptr<pool_state> pool, std::vector<std::size_t> shape, nb::dlpack::dtype dtype)
    : pool_(std::move(pool)), shape_(std::move(shape)), dtype_(dtype) {
  std::size_t items = 1;
  for (auto s : shape_) {
    if (s != 0 && items > SIZE_MAX / s) throw std::invalid_argument("shape's size overflows");
    items *= s;
  }
  std::size_t item = (dtype_.bits + 7) / 8;
  if (items > SIZE_MAX / item) throw std::invalid_argument("shape's size in bytes overflows");
  nbytes_ = items * item;
  allocated_ = std::max<std::size_t>(nbytes_, 1);  // a zero-size array still needs an address
  if (pool_->closed) throw pool_closed(fmt::format("pool of '{}' is closed", pool_->kind));
  p_ = pool_->pool->allocate(allocated_, pool_->alignment);
}

block::~block() {
  pool_->pool->deallocate(p_, allocated_, pool_->alignment);
  if (pool_->closed) pool_->pool->trim();
}

int block::device_type() const noexcept { return pool_->device_type; }

nb::object block::as_ndarray(nb::handle self, int device_type) const {
  // array_api: nanobind's own array object, which implements __dlpack__
  // (the framework-less cast would give a bare capsule).
  nb::ndarray<nb::array_api> nd(p_, shape_.size(), shape_.data(), self, nullptr, dtype_, device_type, 0);
  return nb::cast(nd);
}

// ---- pool -------------------------------------------------------------------

pool::pool(const std::string& kind, std::size_t max_cached_bytes, const std::string& api, bool pinned_as_cpu)
    : state_(std::make_shared<pool_state>()) {
  auto& s = *state_;
  s.kind = kind;
  s.upstream = make_kind(kind, api);
  s.max_cached_bytes = max_cached_bytes;
  s.pool = std::make_unique<mem::caching_pool>(*s.upstream, max_cached_bytes);
  // A cache line at least, so no two blocks share one; the kind's own
  // alignment where larger (a page for pinned and registered memory).
  s.alignment = std::min(std::max<std::size_t>(64, s.upstream->natural_alignment()), s.upstream->max_alignment());
  // Pinned and mapped blocks are host memory CUDA can DMA: DLPack's
  // kDLCUDAHost (NumPy accepts it as CPU memory; torch makes a pinned CPU
  // tensor of it). Everything else is plain CPU memory.
  // pinned_as_cpu: for consumers that take only kDLCPU.
  s.device_type = s.upstream->props().pinned && !pinned_as_cpu ? dl_cuda_host : dl_cpu;
}

block* pool::allocate(std::vector<std::size_t> shape, int code, int bits) {
  if (bits <= 0 || bits % 8 != 0 || bits > 128 || code < 0 || code > 255)
    throw std::invalid_argument(fmt::format("unsupported dtype ({})", dtype_name(code, bits)));
  nb::dlpack::dtype dt{static_cast<std::uint8_t>(code), static_cast<std::uint8_t>(bits), 1};
  nb::gil_scoped_release release;  // a miss may pin memory for a long time
  return new block(state_, std::move(shape), dt);
}

nb::dict pool::stats() const {
  auto st = state_->pool->stats();
  nb::dict d;
  d["requested_bytes"] = st.requested_bytes;
  d["handed_out_bytes"] = st.handed_out_bytes;
  d["cached_bytes"] = st.cached_bytes;
  d["reserved_bytes"] = st.reserved_bytes;
  d["peak_reserved_bytes"] = st.peak_reserved_bytes;
  d["hits"] = st.hits;
  d["misses"] = st.misses;
  d["upstream_frees"] = st.upstream_frees;
  d["upstream_seconds"] = st.upstream_seconds;
  d["rounding_waste_ratio"] = st.rounding_waste_ratio();
  d["waste_ratio"] = st.waste_ratio();
  return d;
}

void pool::trim() {
  nb::gil_scoped_release release;
  state_->pool->trim();
}

void pool::close() {
  state_->closed = true;
  trim();
}

bool pool::closed() const noexcept { return state_->closed; }
std::string pool::kind() const { return state_->kind; }
bool pool::pinned() const noexcept { return state_->upstream->props().pinned; }
int pool::device_type() const noexcept { return state_->device_type; }
std::size_t pool::max_cached_bytes() const noexcept { return state_->max_cached_bytes; }

void bind_pool(nb::module_& m) {
  nb::class_<block>(m, "Block")
      .def_prop_ro("nbytes", &block::nbytes)
      .def_prop_ro("shape", [](const block& b) { return b.shape(); })
      .def_prop_ro("ptr", [](const block& b) { return reinterpret_cast<std::uintptr_t>(b.data()); })
      .def("__dlpack_device__", [](const block& b) { return nb::make_tuple(b.device_type(), 0); })
      .def("__dlpack__", [](const block& b, nb::args args, nb::kwargs kwargs) {
        // A consumer may ask for the block as CPU memory (dl_device=(kDLCPU,
        // 0)): pinned host memory is CPU memory, so it is exported as such
        // without a copy (torch and CuPy label their own pinned memory kDLCPU).
        int device_type = b.device_type();
        if (kwargs.contains("dl_device") && !kwargs["dl_device"].is_none()) {
          auto want = nb::cast<nb::tuple>(kwargs["dl_device"]);
          if (want.size() == 2 && nb::cast<int>(want[0]) == dl_cpu && device_type == dl_cuda_host) {
            device_type = dl_cpu;
            kwargs["dl_device"] = nb::make_tuple(dl_cpu, nb::cast<int>(want[1]));
          }
        }
        return b.as_ndarray(nb::find(b), device_type).attr("__dlpack__")(*args, **kwargs);
      });

  nb::class_<pool>(m, "Pool")
      .def(nb::init<const std::string&, std::size_t, const std::string&, bool>(), nb::arg("kind"),
           nb::arg("max_cached_bytes"), nb::arg("api"), nb::arg("pinned_as_cpu"))
      .def("allocate", &pool::allocate, nb::arg("shape"), nb::arg("code"), nb::arg("bits"),
           nb::rv_policy::take_ownership)
      .def("stats", &pool::stats)
      .def("trim", &pool::trim)
      .def("close", &pool::close)
      .def_prop_ro("closed", &pool::closed)
      .def_prop_ro("kind", &pool::kind)
      .def_prop_ro("pinned", &pool::pinned)
      .def_prop_ro("dlpack_device_type", &pool::device_type)
      .def_prop_ro("max_cached_bytes", &pool::max_cached_bytes);

  // For the tests on machines without CUDA: the block exported as another
  // DLPack device type (kDLCUDAHost), to check what consumers make of it.
  m.def("_export_as", [](const block& b, int device_type) {
    nb::ndarray<nb::array_api> nd(b.data(), b.shape().size(), b.shape().data(), nb::find(b), nullptr, b.dtype(),
                                  device_type, 0);
    return nb::cast(nd);
  });
  m.def("kind_names", &kind_names);
  m.attr("cuda_compiled") = bool(XFER_HAVE_CUDA);
}

}  // namespace xfer::python
