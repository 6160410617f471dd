#include "vadd_app.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fmt/format.h>
#include <limits>
#include <memory>
#include <xfer/core/timing.hpp>
#include <xfer/core/errors.hpp>
#include <xfer/core/size.hpp>
#include <xfer/core/system_probe.hpp>
#include <xfer/mem/buffer.hpp>
#include <xfer/mem/error.hpp>
#include <xfer/mem/host_resources.hpp>
#include <xfer/mem/os.hpp>
#include <xfer/mem/cuda/staged_step.hpp>
#include <xfer/mem/staged/staged_copier.hpp>
#include <xfer/mem/staged/tuning.hpp>

#include "cuda_backend.hpp"
#include "kernels.hpp"
#include "cuda/resources.hpp"

namespace xfer::cuda {
namespace {

bool runtime(const api& a) { return a.name() == "runtime"; }

bool is_core_kind(const std::string& name) {
  const auto& names = mem::host_kind_names();
  return std::find(names.begin(), names.end(), name) != names.end();
}

// How the device reaches the host buffers.
enum class path {
  copy,        // device buffers, written and read with blocking copies
  registered,  // the same, after page-locking the host buffers in place (map)
  mapped,      // zero copy through the device's addresses of pinned host memory
  managed,     // zero copy: one address on both sides
  staged,      // pageable buffers, written and read through libxfer's staged copier
};

// Not a host memory kind: pageable memory moved by the staged copier.
constexpr const char* staged_strategy = "staged";

path path_of(const std::string& strategy) {
  if (strategy == staged_strategy) return path::staged;
  if (strategy == "registered") return path::registered;
  if (strategy == "mapped") return path::mapped;
  if (strategy == "managed") return path::managed;
  return path::copy;
}

constexpr std::uint64_t host_buffers = 4;  // a, b, c and the CPU's d
// Room left on the device for the context, the kernels and the allocator's rounding.
constexpr std::uint64_t device_margin = std::uint64_t{256} << 20;

// Device memory the run needs: a, b, c on the device for the copying paths;
// for managed, all four buffers, which the driver may place on the device
// despite the advice (an oversubscribed managed allocation can hang the GPU).
std::uint64_t device_bytes(path p, std::uint64_t bytes) {
  switch (p) {
    case path::copy:
    case path::registered:
    case path::staged: return 3 * bytes;
    case path::managed: return host_buffers * bytes;
    case path::mapped: return 0;
  }
  return 0;
}

// Out of memory: cudaErrorMemoryAllocation and CUDA_ERROR_OUT_OF_MEMORY are both 2.
constexpr int out_of_memory_code = 2;

std::size_t whole_pages(std::size_t bytes) {
  const std::size_t page = mem::page_size();
  return (std::max<std::size_t>(bytes, 1) + page - 1) / page * page;
}

// Page-locks a block in place; undone on destruction.
class registration {
 public:
  registration(api& a, void* p, std::size_t bytes) : api_(a), p_(p) { a.host_register(p, bytes); }
  ~registration() { api_.host_unregister(p_); }
  registration(const registration&) = delete;
  registration& operator=(const registration&) = delete;

 private:
  api& api_;
  void* p_;
};

// One run of the program, from nothing to a verified result. Members are
// declared so that destruction unregisters and frees the device buffers
// before the host memory under them goes.
class vadd_run {
 public:
  vadd_run(api& a, int device, const device_attributes& attrs, const mem::kind_options& kinds,
           const std::string& strategy, std::size_t n)
      : api_(a),
        device_(device),
        attrs_(attrs),
        kinds_(kinds),
        strategy_(strategy),
        path_(path_of(strategy)),
        n_(n),
        bytes_(n * sizeof(std::uint32_t)) {}
  vadd_run(const vadd_run&) = delete;
  vadd_run& operator=(const vadd_run&) = delete;

  // Nothing may still run on memory about to be freed.
  ~vadd_run() {
    if (!initialised_) return;
    try {
      api_.synchronize();
    } catch (...) {
    }
  }

  vadd_times go() {
    using P = vadd_phase;
    vadd_times t;
    t[P::init] = time_call([&] { do_init(); });
    require_free_device_memory();
    t[P::allocate] = time_call([&] { do_allocate(); });
    poison_result();
    auto* a = u32(ha_);
    auto* b = u32(hb_);
    auto* d = u32(hd_);
    t[P::populate] = time_call([&] { vadd_populate(a, b, n_); });
    t[P::cpu_vadd] = time_call([&] { vadd_cpu(a, b, d, n_); });
    if (path_ == path::registered || path_ == path::mapped || path_ == path::staged)
      t[P::map] = time_call([&] { do_map(); });
    if (copies()) t[P::write] = time_call([&] { do_write(); });
    t[P::launch] = time_call([&] { kernels::vadd(nullptr, ka_, kb_, kc_, n_, attrs_.multiprocessors); });
    t[P::kernel] = time_call([&] { api_.synchronize(); });
    if (copies()) t[P::read] = time_call([&] { do_read(); });
    t[P::verify] = time_call([&] { t.verified = vadd_first_mismatch(u32(hc_), d, n_) == n_; });
    return t;
  }

 private:
  static std::uint32_t* u32(const mem::buffer& b) { return static_cast<std::uint32_t*>(b.data()); }
  bool copies() const { return path_ == path::copy || path_ == path::registered || path_ == path::staged; }

  // Making the device's primary context current (cudaSetDevice /
  // cuDevicePrimaryCtxRetain + cuCtxSetCurrent), a device synchronize that
  // completes its initialisation, and loading the kernels (CUDA loads
  // modules lazily: without this the first launch would pay it). The primary
  // context lives as long as the process (runtime) or the backend (driver
  // API retains it), so only the first run in a process pays its creation,
  // and only if nothing created it before (listing devices does); later runs
  // measure what remains, a context switch, a cudaDeviceSynchronize /
  // cuCtxSynchronize and the kernel look-ups, the CUDA analogue of the
  // seed's cudaFree(0)-style warm-up.
  void do_init() {
    api_.make_current(device_);
    initialised_ = true;
    api_.synchronize();
    kernels::preload();
  }

  // Checked after init (free memory needs a context): the size fits in what
  // the device has free now, or the point is skipped with the numbers.
  void require_free_device_memory() {
    const std::uint64_t need = device_bytes(path_, bytes_);
    if (need == 0) return;
    std::size_t free = 0, total = 0;
    api_.memory_info(free, total);
    if (need + device_margin > free)
      throw skip_point(fmt::format("{} needs {} B of device memory ({} x {}), but device {} has {} B free of {} B "
                                   "({} kept in reserve)",
                                   strategy_, need, need / bytes_, format_capacity(bytes_), device_, free, total,
                                   format_size(device_margin)));
  }

  // The four host buffers with the strategy, and the device's a, b, c where
  // the data is copied. registered allocates page-aligned pageable memory in
  // whole pages here and registers it in map.
  void do_allocate() {
    if (path_ == path::registered) {
      kind_ = std::make_unique<mem::aligned_resource>(std::max(kinds_.alignment, mem::page_size()));
      host_length_ = whole_pages(bytes_);
    } else {
      kind_ = make_host_kind(path_ == path::staged ? "pageable" : strategy_, api_, kinds_);
      host_length_ = bytes_;
    }
    const std::size_t align = kind_->natural_alignment();
    ha_ = mem::buffer(*kind_, host_length_, align);
    hb_ = mem::buffer(*kind_, host_length_, align);
    hc_ = mem::buffer(*kind_, host_length_, align);
    hd_ = mem::buffer(*kind_, host_length_, align);
    if (copies()) {
      da_ = device_buffer(api_, bytes_);
      db_ = device_buffer(api_, bytes_);
      dc_ = device_buffer(api_, bytes_);
      ka_ = static_cast<const std::uint32_t*>(da_.data());
      kb_ = static_cast<const std::uint32_t*>(db_.data());
      kc_ = static_cast<std::uint32_t*>(dc_.data());
    } else if (path_ == path::managed) {
      ka_ = u32(ha_);
      kb_ = u32(hb_);
      kc_ = u32(hc_);
    }
  }

  // Untimed: the result starts poisoned on both sides, so a stale result left
  // in recycled memory by an earlier run can never pass verification.
  void poison_result() {
    std::memset(hc_.data(), 0xFF, bytes_);
    if (copies()) api_.fill_device(dc_.data(), 0xFF, bytes_);
  }

  void do_map() {
    if (path_ == path::staged) {
      // The copier an application keeps for its lifetime: a step on the
      // device, its threads, and the tuning cached for this machine (or the
      // defaults: a program does not calibrate on its first copy).
      step_ = make_staged_step(device_, runtime(api_) ? allocating_api::runtime : allocating_api::driver);
      mem::staged_copier_options o;
      o.tuning = mem::tuning_for(*step_);
      copier_ = std::make_unique<mem::staged_copier>(*step_, std::move(o));
      return;
    }
    if (path_ == path::registered) {
      reg_a_ = std::make_unique<registration>(api_, ha_.data(), host_length_);
      reg_b_ = std::make_unique<registration>(api_, hb_.data(), host_length_);
      reg_c_ = std::make_unique<registration>(api_, hc_.data(), host_length_);
      return;
    }
    ka_ = static_cast<const std::uint32_t*>(device_view(*kind_, api_, ha_.data()));
    kb_ = static_cast<const std::uint32_t*>(device_view(*kind_, api_, hb_.data()));
    kc_ = static_cast<std::uint32_t*>(device_view(*kind_, api_, hc_.data()));
  }

  // Blocking copies; for pageable memory a blocking host-to-device copy may
  // return once the data is staged, so the device is synchronized too.
  void do_write() {
    if (copier_) {
      auto a = copier_->copy_to_device_async({da_.data(), bytes_}, 0, ha_.data(), bytes_);
      auto b = copier_->copy_to_device_async({db_.data(), bytes_}, 0, hb_.data(), bytes_);
      a.wait();
      b.wait();
      return;
    }
    api_.copy(da_.data(), ha_.data(), bytes_, copy_kind::h2d);
    api_.copy(db_.data(), hb_.data(), bytes_, copy_kind::h2d);
    api_.synchronize();
  }

  void do_read() {
    if (copier_) {
      api_.synchronize();  // the kernel wrote c: finished before the copier reads it
      copier_->copy_to_host(hc_.data(), {dc_.data(), bytes_}, 0, bytes_);
      return;
    }
    api_.copy(hc_.data(), dc_.data(), bytes_, copy_kind::d2h);
    api_.synchronize();
  }

  api& api_;
  const int device_;
  const device_attributes& attrs_;
  const mem::kind_options& kinds_;
  const std::string strategy_;
  const path path_;
  const std::size_t n_, bytes_;
  bool initialised_ = false;

  std::unique_ptr<mem::host_resource> kind_;
  std::size_t host_length_ = 0;
  mem::buffer ha_, hb_, hc_, hd_;
  std::unique_ptr<registration> reg_a_, reg_b_, reg_c_;
  device_buffer da_, db_, dc_;
  std::unique_ptr<mem::device_step> step_;      // staged: destroyed after the copier
  std::unique_ptr<mem::staged_copier> copier_;
  const std::uint32_t* ka_ = nullptr;  // what the kernel reads and writes
  const std::uint32_t* kb_ = nullptr;
  std::uint32_t* kc_ = nullptr;
};

}  // namespace

cuda_vadd::cuda_vadd(api& a, int device, device_attributes attrs, mem::kind_options kinds)
    : api_(a), device_(device), attrs_(std::move(attrs)), kinds_(kinds) {}

std::string cuda_vadd::unavailable_reason(const std::string& s) const {
  if (s == "mapped" && !attrs_.can_map_host_memory) return fmt::format("device {} cannot map host memory", device_);
  if (s == "managed" && !attrs_.managed_memory) return fmt::format("device {} does not support managed memory", device_);
  return {};
}

std::string cuda_vadd::describe(const std::string& s) const {
  const bool rt = runtime(api_);
  const char* copy = rt ? "cudaMemcpy" : "cuMemcpyHtoD/DtoH";
  if (s == "registered")
    return fmt::format("posix_memalign at {} B; map page-locks a, b, c in place ({}); write and read: {}",
                       std::max(kinds_.alignment, mem::page_size()), rt ? "cudaHostRegister" : "cuMemHostRegister",
                       copy);
  if (s == staged_strategy)
    return fmt::format("pageable (malloc); map starts libxfer's staged copier (a {} step, its threads, the tuning "
                       "cached for this machine or the defaults); write and read go through it: chunks copied into "
                       "a ring of pinned buffers by CPU threads while the copy engine drains them",
                       rt ? "runtime" : "driver");
  auto kind = make_host_kind(s, api_, kinds_);
  if (!kind) return {};
  if (is_core_kind(s))
    return fmt::format("{}; no map phase: write and read are {}, which the driver stages through its own pinned "
                       "buffers",
                       kind->describe(), copy);
  if (s == "pinned" || s == "pinned-wc")
    return fmt::format("{}; page-locked at allocation, so no map phase; write and read: {}{}", kind->describe(), copy,
                       s == "pinned-wc" ? "; the CPU's reads of it (cpu_vadd, verify) are uncached" : "");
  if (s == "mapped")
    return fmt::format("{}; map gets the device's addresses ({}); no write or read: the kernel reads a, b and "
                       "writes c across the link",
                       kind->describe(), rt ? "cudaHostGetDevicePointer" : "cuMemHostGetDevicePointer");
  return fmt::format("{}; no map, write or read: the kernel works on the managed buffers in place", kind->describe());
}

std::vector<kind_support> cuda_vadd::strategies() const {
  std::vector<kind_support> out;
  for (const auto& name : host_kind_names()) {
    const std::string why = unavailable_reason(name);
    out.push_back({name, why.empty(), why, describe(name)});
  }
  out.push_back({staged_strategy, true, "", describe(staged_strategy)});
  return out;
}

vadd_times cuda_vadd::run(const std::string& strategy, std::size_t n) {
  const auto& names = host_kind_names();
  if (strategy != staged_strategy && std::find(names.begin(), names.end(), strategy) == names.end())
    throw skip_point(fmt::format("unknown strategy '{}' for the CUDA vadd", strategy));
  if (const auto why = unavailable_reason(strategy); !why.empty()) throw skip_point(why);
  if (n == 0) throw skip_point("0 elements: nothing to add");
  if (n > std::numeric_limits<std::size_t>::max() / sizeof(std::uint32_t) / host_buffers / 2)
    throw skip_point(fmt::format("{} elements do not fit in this machine's address space", n));
  const std::uint64_t bytes = std::uint64_t{n} * sizeof(std::uint32_t);
  const std::uint64_t host_bytes = host_buffers * bytes;
  if (const std::uint64_t available = available_memory_bytes(); available && host_bytes > available)
    throw skip_point(fmt::format("needs {} B of host memory (4 x {}); only {} B is available", host_bytes,
                                 format_capacity(bytes), available));
  // Before any API call: what cannot fit in the whole device never starts.
  const std::uint64_t on_device = device_bytes(path_of(strategy), bytes);
  if (on_device > attrs_.total_memory)
    throw skip_point(fmt::format("{} needs {} B of device memory ({} x {}); device {} has {} B in all", strategy,
                                 on_device, on_device / bytes, format_capacity(bytes), device_, attrs_.total_memory));
  try {
    vadd_run r(api_, device_, attrs_, kinds_, strategy, n);
    return r.go();
  } catch (const api_error& e) {
    if (e.code() == out_of_memory_code)
      throw skip_point(fmt::format("the device could not hold the buffers for {} elements ({} each): {}", n,
                                   format_capacity(bytes), e.what()));
    throw;
  } catch (const mem::allocation_error& e) {
    throw skip_point(e.what());
  }
}

std::unique_ptr<vadd_app> make_vadd_app(cuda_backend& b, int device) {
  if (device < 0 || device >= b.device_count())
    throw usage_error(fmt::format("{} has no device {} (it has {})", b.name(), device, b.device_count()));
  return std::make_unique<cuda_vadd>(b.cuda_api(), device, b.attributes(device), b.kind_options());
}

}  // namespace xfer::cuda
