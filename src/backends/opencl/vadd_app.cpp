#include "vadd_app.hpp"

#include <algorithm>
#include <chrono>
#include <fmt/format.h>
#include <limits>
#include <memory>
#include <xfer/core/timing.hpp>
#include <xfer/core/errors.hpp>
#include <xfer/core/pattern.hpp>
#include <xfer/core/size.hpp>
#include <xfer/core/system_probe.hpp>
#include <xfer/mem/error.hpp>

#include "opencl/host_memory.hpp"
#include "opencl_backend.hpp"
#include "routes.hpp"

namespace xfer::opencl {
namespace {

bool is_core_kind(const std::string& name) {
  const auto& names = mem::host_kind_names();
  return std::find(names.begin(), names.end(), name) != names.end();
}

bool at_least(const device_caps& d, int major, int minor) {
  return d.major > major || (d.major == major && d.minor >= minor);
}

// Buffers of the device's result and inputs (a, b, c) live on the device; d,
// the CPU's result, never reaches it.
constexpr std::uint64_t device_buffers = 3, host_buffers = 4;

// One run of the program, from nothing to a verified result. Members are
// declared so that destruction releases the buffer objects before the host
// memory under them, and the context last.
class vadd_run {
 public:
  vadd_run(const device_caps& device, const mem::kind_options& kinds, const std::string& source,
           const std::string& strategy, std::size_t n, std::string& svm_migrate_refusal)
      : device_(device),
        kinds_(kinds),
        source_(source),
        strategy_(strategy),
        n_(n),
        bytes_(n * sizeof(std::uint32_t)),
        core_(is_core_kind(strategy)),
        fine_(strategy == "svm-fine"),
        coarse_(strategy == "svm-coarse"),
        svm_migrate_refusal_(svm_migrate_refusal) {}

  vadd_run(const vadd_run&) = delete;
  vadd_run& operator=(const vadd_run&) = delete;

  // Nothing may still run on, or stay mapped over, memory about to be freed.
  ~vadd_run() {
    if (!rt_.queue) return;
    if (result_) clEnqueueUnmapMemObject(rt_.queue.get(), wrap_c_.get(), result_, 0, nullptr, nullptr);
    clFinish(rt_.queue.get());
  }

  vadd_times go() {
    using P = vadd_phase;
    vadd_times t;
    t[P::init] = time_call([&] { do_init(); });
    t[P::allocate] = time_call([&] { do_allocate(); });
    poison_result();
    auto* a = u32(*a_);
    auto* b = u32(*b_);
    auto* d = u32(*d_);
    t[P::populate] = time_call([&] { vadd_populate(a, b, n_); });
    t[P::cpu_vadd] = time_call([&] { vadd_cpu(a, b, d, n_); });
    // Fine-grained SVM is the host's and the device's at once: nothing to map, move or map back.
    if (!fine_) t[P::map] = time_call([&] { do_map(); });
    if (has_write()) t[P::write] = time_call([&] { do_write(); });
    if (coarse_ && !svm_migrate_refusal_.empty()) t[P::write] = -1;  // refused just now: the kernel pulls
    t[P::launch] = time_call([&] { do_launch(); });
    t[P::kernel] = time_call([&] { check(clFinish(rt_.queue.get()), "clFinish", "after the vadd kernel"); });
    const std::uint32_t* result = u32(*c_);
    if (!fine_) t[P::read] = time_call([&] { result = do_read(); });
    t[P::verify] = time_call([&] { t.verified = vadd_first_mismatch(result, d, n_) == n_; });
    return t;
  }

 private:
  struct runtime {
    context ctx;
    command_queue queue;
    program prog;
    kernel k;
    std::size_t local = 1, global = 1;
  };

  static std::uint32_t* u32(const host_block& b) { return reinterpret_cast<std::uint32_t*>(b.data()); }

  // init covers what the seed's "OpenCL initialisation" does for one program:
  // a context on the device, an in-order queue (no profiling: a plain
  // program's queue), the vadd program built from source and its kernel made
  // and sized. It is paid afresh every run: the platform and device lists are
  // the only state kept across runs. The driver's own compiled-kernel cache
  // (PoCL's POCL_CACHE_DIR, NVIDIA's ComputeCache) makes later builds cheaper
  // than the first, so a process's first run is the cold one, and the median
  // of three or more repeats is the warm one.
  void do_init() {
    cl_int rc = CL_SUCCESS;
    rt_.ctx = context(clCreateContext(nullptr, 1, &device_.id, nullptr, nullptr, &rc));
    check(rc, "clCreateContext", device_.name);
    rt_.queue = make_queue(rt_.ctx, device_, false);
    rt_.prog = build_program(rt_.ctx.get(), device_.id, source_, "vadd.cl");
    rt_.k = make_kernel(rt_.prog.get(), "vadd");
    std::size_t wg = 0;
    check(clGetKernelWorkGroupInfo(rt_.k.get(), device_.id, CL_KERNEL_WORK_GROUP_SIZE, sizeof wg, &wg, nullptr),
          "clGetKernelWorkGroupInfo", "vadd, CL_KERNEL_WORK_GROUP_SIZE");
    rt_.local = std::max<std::size_t>(1, std::min<std::size_t>({256, wg, device_.max_work_group}));
    // Enough work items to fill the device; each strides over the rest.
    const std::size_t most = std::max<std::size_t>(1, device_.compute_units) * 2048;
    const std::size_t items = std::min(n_, most);
    rt_.global = (items + rt_.local - 1) / rt_.local * rt_.local;
  }

  // The four host buffers with the strategy; OpenCL's kinds are created and
  // mapped for the host here, as a program using them must before it writes.
  // The result c is left unmapped where mapping costs something: a program
  // has no reason to map c for writing before the kernel fills it.
  void do_allocate() {
    const auto make = [&](bool open) {
      auto blk = make_host_block(strategy_, bytes_, rt_.ctx, rt_.queue, kinds_);
      if (open) blk->open();
      return blk;
    };
    a_ = make(true);
    b_ = make(true);
    c_ = make(core_ || fine_);  // open() is free for these: nothing to map
    d_ = make(true);
  }

  // Untimed: the result starts poisoned, so a stale result left in recycled
  // memory (host or device) by an earlier run can never pass verification.
  // Where c is OpenCL memory the device side is poisoned with a fill: poisoning
  // through a mapping would make the map phase copy c to the device, a cost
  // no real program pays.
  void poison_result() {
    constexpr cl_uint poison_word = 0xDEADBEEF;  // a[0] + b[0] is 0x12346: a mismatch at least there
    const cl_command_queue q = rt_.queue.get();
    if (core_ || fine_) {
      poison(c_->data(), bytes_);
      return;
    }
    if (!coarse_ && !at_least(device_, 1, 2)) {  // no clEnqueueFillBuffer before 1.2: the mapping it is
      c_->open();
      poison(c_->data(), bytes_);
      c_->close();
      return;
    }
    if (coarse_)
      check(clEnqueueSVMMemFill(q, c_->svm_pointer(), &poison_word, sizeof poison_word, bytes_, 0, nullptr, nullptr),
            "clEnqueueSVMMemFill", fmt::format("poisoning c, {} B", bytes_));
    else
      check(clEnqueueFillBuffer(q, c_->buffer(), &poison_word, sizeof poison_word, 0, bytes_, 0, nullptr, nullptr),
            "clEnqueueFillBuffer", fmt::format("poisoning c, {} B", bytes_));
    check(clFinish(q), "clFinish", "after poisoning c");
  }

  mem_object wrap(const host_block& blk, cl_mem_flags access, const char* what) {
    cl_int rc = CL_SUCCESS;
    mem_object m(clCreateBuffer(rt_.ctx.get(), access | CL_MEM_USE_HOST_PTR, bytes_, blk.data(), &rc));
    check(rc, "clCreateBuffer", fmt::format("CL_MEM_USE_HOST_PTR over {} memory ({}), {} B", strategy_, what, bytes_));
    return m;
  }

  // Core kinds: the seed's "map host buffers to OpenCL buffers". A runtime that
  // can use the memory in place only records the pointer; one that cannot
  // (unaligned memory, a discrete GPU that wants pinned pages) allocates and
  // copies, here or lazily at the first command that needs the buffer, so part
  // of this cost can land in write. OpenCL's kinds: unmap, which hands the
  // buffers the host filled over to the device.
  void do_map() {
    if (core_) {
      wrap_a_ = wrap(*a_, CL_MEM_READ_ONLY, "a");
      wrap_b_ = wrap(*b_, CL_MEM_READ_ONLY, "b");
      wrap_c_ = wrap(*c_, CL_MEM_WRITE_ONLY, "c");
      return;
    }
    a_->close();
    b_->close();
  }

  bool has_write() const {
    if (fine_) return false;
    if (coarse_) return at_least(device_, 2, 1) && svm_migrate_refusal_.empty();
    return at_least(device_, 1, 2);  // clEnqueueMigrateMemObjects
  }

  // The inputs moved to the device explicitly (what the seed's "memory object
  // migration" does), so the kernel phase holds only the kernel.
  void do_write() {
    const cl_command_queue q = rt_.queue.get();
    if (coarse_) {
      const void* ptrs[] = {a_->svm_pointer(), b_->svm_pointer()};
      const std::size_t sizes[] = {bytes_, bytes_};
      const cl_int rc = clEnqueueSVMMigrateMem(q, 2, ptrs, sizes, 0, 0, nullptr, nullptr);
      if (rc != CL_SUCCESS && !is_out_of_memory(rc)) {
        // Not worth failing the strategy over: without the hint the kernel
        // still reads the inputs, it just pays for moving them itself.
        svm_migrate_refusal_ = fmt::format("clEnqueueSVMMigrateMem(2 x {} B): {}", bytes_, error_name(rc));
        return;
      }
      check(rc, "clEnqueueSVMMigrateMem", fmt::format("a and b, 2 x {} B", bytes_));
    } else {
      const cl_mem objs[] = {core_ ? wrap_a_.get() : a_->buffer(), core_ ? wrap_b_.get() : b_->buffer()};
      check(clEnqueueMigrateMemObjects(q, 2, objs, 0, 0, nullptr, nullptr), "clEnqueueMigrateMemObjects",
            fmt::format("a and b to the device, 2 x {} B", bytes_));
    }
    check(clFinish(q), "clFinish", "after writing the inputs");
  }

  void do_launch() {
    const cl_kernel k = rt_.k.get();
    if (core_) {
      const cl_mem args[] = {wrap_a_.get(), wrap_b_.get(), wrap_c_.get()};
      for (cl_uint i = 0; i < 3; ++i)
        check(clSetKernelArg(k, i, sizeof(cl_mem), &args[i]), "clSetKernelArg", fmt::format("vadd arg {}", i));
    } else {
      a_->set_kernel_arg(k, 0);
      b_->set_kernel_arg(k, 1);
      c_->set_kernel_arg(k, 2);
    }
    const cl_ulong n = n_;
    check(clSetKernelArg(k, 3, sizeof n, &n), "clSetKernelArg", "vadd arg 3: n");
    check(clEnqueueNDRangeKernel(rt_.queue.get(), k, 1, nullptr, &rt_.global, &rt_.local, 0, nullptr, nullptr),
          "clEnqueueNDRangeKernel",
          fmt::format("vadd, {} elements, {} x {} work items", n_, rt_.global / rt_.local, rt_.local));
  }

  // Mapping is how a host may look at a buffer's contents after a kernel wrote
  // it; for a USE_HOST_PTR buffer the pointer returned lies in the host's own
  // c, which the runtime brings up to date first (copying back if it computed
  // elsewhere). Blocking, so the result is complete when the clock is read.
  const std::uint32_t* do_read() {
    if (core_) {
      cl_int rc = CL_SUCCESS;
      result_ = clEnqueueMapBuffer(rt_.queue.get(), wrap_c_.get(), CL_TRUE, CL_MAP_READ, 0, bytes_, 0, nullptr, nullptr,
                                   &rc);
      check(rc, "clEnqueueMapBuffer", fmt::format("the result c for reading, {} B", bytes_));
      return static_cast<const std::uint32_t*>(result_);
    }
    c_->open();
    return u32(*c_);
  }

  const device_caps& device_;
  const mem::kind_options& kinds_;
  const std::string& source_;
  const std::string strategy_;
  const std::size_t n_, bytes_;
  const bool core_, fine_, coarse_;
  std::string& svm_migrate_refusal_;

  runtime rt_;
  std::unique_ptr<host_block> a_, b_, c_, d_;
  mem_object wrap_a_, wrap_b_, wrap_c_;  // core kinds: USE_HOST_PTR buffers over a, b, c
  void* result_ = nullptr;               // core kinds: c mapped for reading
};

}  // namespace

opencl_vadd::opencl_vadd(device_caps device, mem::kind_options kinds, std::string kernel_source)
    : device_(std::move(device)), kinds_(kinds), source_(std::move(kernel_source)) {}

std::string opencl_vadd::describe(const std::string& s) const {
  if (is_core_kind(s))
    return fmt::format("{}; map wraps a, b, c in clCreateBuffer(CL_MEM_USE_HOST_PTR), write migrates a, b, read maps c",
                       mem::make_host_kind(s, kinds_)->describe());
  if (s == "alloc-host-ptr" || s == "use-host-ptr")
    return fmt::format("{}; allocate creates and maps, map unmaps, write migrates a, b, read maps c",
                       describe_opencl_kind(s, kinds_));
  if (s == "svm-coarse")
    return fmt::format("{}; allocate allocates and SVM-maps, map unmaps, write: {}, read SVM-maps c",
                       describe_opencl_kind(s, kinds_),
                       !svm_migrate_refusal_.empty() ? fmt::format("none (the runtime refused {})", svm_migrate_refusal_)
                       : at_least(device_, 2, 1)     ? "clEnqueueSVMMigrateMem"
                                                     : "none (clEnqueueSVMMigrateMem is OpenCL 2.1+)");
  return fmt::format("{}; no map, write or read phase: the kernel works on the host's memory in place",
                     describe_opencl_kind(s, kinds_));
}

std::vector<kind_support> opencl_vadd::strategies() const {
  std::vector<kind_support> out;
  for (const auto& name : mem::host_kind_names()) out.push_back({name, true, "", describe(name)});
  for (const auto& name : opencl_kind_names()) {
    const std::string why = kind_unavailable_reason(name, device_);
    out.push_back({name, why.empty(), why, describe(name)});
  }
  return out;
}

vadd_times opencl_vadd::run(const std::string& strategy, std::size_t n) {
  if (!is_core_kind(strategy) && !is_opencl_kind(strategy))
    throw skip_point(fmt::format("unknown strategy '{}' for the OpenCL vadd", strategy));
  if (const auto why = kind_unavailable_reason(strategy, device_); !why.empty()) throw skip_point(why);
  if (n == 0) throw skip_point("0 elements: nothing to add");
  if (n > std::numeric_limits<std::size_t>::max() / sizeof(std::uint32_t) / host_buffers)
    throw skip_point(fmt::format("{} elements do not fit in this machine's address space", n));
  const std::uint64_t bytes = std::uint64_t{n} * sizeof(std::uint32_t);
  if (bytes > device_.max_alloc_bytes)
    throw skip_point(fmt::format("a vector of {} ({} B) exceeds the device's largest allocation, "
                                 "CL_DEVICE_MAX_MEM_ALLOC_SIZE = {} B",
                                 format_capacity(bytes), bytes, device_.max_alloc_bytes));
  if (device_buffers * bytes > device_.global_mem_bytes)
    throw skip_point(fmt::format("needs {} device buffers of {} B; the device has {} B (CL_DEVICE_GLOBAL_MEM_SIZE)",
                                 device_buffers, bytes, device_.global_mem_bytes));
  // On a CPU (or host-unified) device the device's copies are host RAM too.
  const bool device_in_host = device_.type == "cpu" || device_.host_unified_memory == 1;
  const std::uint64_t host_bytes = (host_buffers + (device_in_host ? device_buffers : 0)) * bytes;
  if (const std::uint64_t available = available_memory_bytes(); available && host_bytes > available)
    throw skip_point(fmt::format("needs {} B of host memory; only {} B is available", host_bytes, available));
  try {
    vadd_run r(device_, kinds_, source_, strategy, n, svm_migrate_refusal_);
    return r.go();
  } catch (const cl_error& e) {
    if (is_out_of_memory(e.code()))
      throw skip_point(fmt::format("the device could not hold 4 vectors of {} B: {}", bytes, e.what()));
    throw;
  } catch (const mem::allocation_error& e) {
    throw skip_point(e.what());
  }
}

std::unique_ptr<vadd_app> make_vadd_app(const opencl_backend& b, int device) {
  const auto& devices = b.capabilities();
  if (device < 0 || static_cast<std::size_t>(device) >= devices.size())
    throw usage_error(fmt::format("{} has no device {} (it has {})", b.name(), device, devices.size()));
  return std::make_unique<opencl_vadd>(devices[static_cast<std::size_t>(device)], b.kind_options());
}

}  // namespace xfer::opencl
