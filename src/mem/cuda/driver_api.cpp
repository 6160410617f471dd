// The driver API strategy: cuMemcpyHtoD/DtoH and their Async forms,
// cuMemHostAlloc, cuMemHostRegister, cuMemAllocManaged, cuEvent*, on the
// device's primary context.
//
// The entry points come from cudaGetDriverEntryPointByVersion instead of
// linking libcuda: libcuda.so.1 ships with the NVIDIA driver, so a binary
// linked to it would not even start on a machine without one, and xferbench
// must start there to say why the CUDA backends are unavailable.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <map>

#include "api.hpp"

namespace xfer::cuda {
namespace {

// One pointer per driver call, typed by cudaTypedefs.h's PFN_<name>_v<version>
// and fetched at that same ABI version: asking for the newest would hand back
// a different function where the driver has revised one (CUDA 13's
// cuCtxSynchronize takes a context; the header's still takes none).
struct driver_table {
#define XFER_CU_FN(fn, ver) PFN_##fn##_v##ver fn = nullptr;
  XFER_CU_FN(cuInit, 2000)
  XFER_CU_FN(cuGetErrorName, 6000)
  XFER_CU_FN(cuGetErrorString, 6000)
  XFER_CU_FN(cuDriverGetVersion, 2020)
  XFER_CU_FN(cuDeviceGetCount, 2000)
  XFER_CU_FN(cuDeviceGet, 2000)
  XFER_CU_FN(cuDeviceGetName, 2000)
  XFER_CU_FN(cuDeviceTotalMem, 3020)
  XFER_CU_FN(cuDeviceGetPCIBusId, 4010)
  XFER_CU_FN(cuDeviceGetAttribute, 2000)
  XFER_CU_FN(cuDevicePrimaryCtxRetain, 7000)
  XFER_CU_FN(cuDevicePrimaryCtxRelease, 11000)
  XFER_CU_FN(cuCtxSetCurrent, 4000)
  XFER_CU_FN(cuCtxSynchronize, 2000)
  XFER_CU_FN(cuDeviceCanAccessPeer, 4000)
  XFER_CU_FN(cuCtxEnablePeerAccess, 4000)
  XFER_CU_FN(cuMemGetInfo, 3020)
  XFER_CU_FN(cuMemAlloc, 3020)
  XFER_CU_FN(cuMemFree, 3020)
  XFER_CU_FN(cuMemHostAlloc, 2020)
  XFER_CU_FN(cuMemFreeHost, 2000)
  XFER_CU_FN(cuMemHostRegister, 6050)
  XFER_CU_FN(cuMemHostUnregister, 4000)
  XFER_CU_FN(cuPointerGetAttribute, 4000)
  XFER_CU_FN(cuMemHostGetDevicePointer, 3020)
  XFER_CU_FN(cuMemAllocManaged, 6000)
  XFER_CU_FN(cuMemAdvise, 12020)
  XFER_CU_FN(cuMemcpyHtoD, 3020)
  XFER_CU_FN(cuMemcpyDtoH, 3020)
  XFER_CU_FN(cuMemcpyDtoD, 3020)
  XFER_CU_FN(cuMemcpy, 4000)
  XFER_CU_FN(cuMemcpyHtoDAsync, 3020)
  XFER_CU_FN(cuMemcpyDtoHAsync, 3020)
  XFER_CU_FN(cuMemcpyDtoDAsync, 3020)
  XFER_CU_FN(cuMemcpyAsync, 4000)
  XFER_CU_FN(cuMemsetD8, 3020)
  XFER_CU_FN(cuStreamCreate, 2000)
  XFER_CU_FN(cuStreamDestroy, 4000)
  XFER_CU_FN(cuStreamSynchronize, 2000)
  XFER_CU_FN(cuStreamWaitEvent, 3020)
  XFER_CU_FN(cuEventCreate, 2000)
  XFER_CU_FN(cuEventDestroy, 4000)
  XFER_CU_FN(cuEventRecord, 2000)
  XFER_CU_FN(cuEventSynchronize, 2000)
  XFER_CU_FN(cuEventElapsedTime, 12080)
  XFER_CU_FN(cuStreamWaitValue32, 11070)
  XFER_CU_FN(cuStreamGetDevice, 12080)
#undef XFER_CU_FN
};

void load(const char* symbol, unsigned version, void** slot) {
  cudaDriverEntryPointQueryResult found{};
  const cudaError_t e = cudaGetDriverEntryPointByVersion(symbol, slot, version, cudaEnableDefault, &found);
  if (e != cudaSuccess || found != cudaDriverEntryPointSuccess || !*slot) {
    (void)cudaGetLastError();
    const std::string why = e != cudaSuccess ? fmt::format("{}: {}", cudaGetErrorName(e), cudaGetErrorString(e))
                                             : fmt::format("the driver has no {} of version {} (query result {})",
                                                           symbol, version, int(found));
    throw api_error("cudaGetDriverEntryPointByVersion", int(e), why, symbol);
  }
}

driver_table load_table() {
  driver_table t;
  // #fn is the name as written (cuMemcpyHtoD), the entry point's key; t.fn
  // expands as the member's declaration did (cuMemcpyHtoD_v2).
#define XFER_CU_LOAD(fn, ver) load(#fn, ver, reinterpret_cast<void**>(&t.fn));
  XFER_CU_LOAD(cuInit, 2000)
  XFER_CU_LOAD(cuGetErrorName, 6000)
  XFER_CU_LOAD(cuGetErrorString, 6000)
  XFER_CU_LOAD(cuDriverGetVersion, 2020)
  XFER_CU_LOAD(cuDeviceGetCount, 2000)
  XFER_CU_LOAD(cuDeviceGet, 2000)
  XFER_CU_LOAD(cuDeviceGetName, 2000)
  XFER_CU_LOAD(cuDeviceTotalMem, 3020)
  XFER_CU_LOAD(cuDeviceGetPCIBusId, 4010)
  XFER_CU_LOAD(cuDeviceGetAttribute, 2000)
  XFER_CU_LOAD(cuDevicePrimaryCtxRetain, 7000)
  XFER_CU_LOAD(cuDevicePrimaryCtxRelease, 11000)
  XFER_CU_LOAD(cuCtxSetCurrent, 4000)
  XFER_CU_LOAD(cuCtxSynchronize, 2000)
  XFER_CU_LOAD(cuDeviceCanAccessPeer, 4000)
  XFER_CU_LOAD(cuCtxEnablePeerAccess, 4000)
  XFER_CU_LOAD(cuMemGetInfo, 3020)
  XFER_CU_LOAD(cuMemAlloc, 3020)
  XFER_CU_LOAD(cuMemFree, 3020)
  XFER_CU_LOAD(cuMemHostAlloc, 2020)
  XFER_CU_LOAD(cuMemFreeHost, 2000)
  XFER_CU_LOAD(cuMemHostRegister, 6050)
  XFER_CU_LOAD(cuMemHostUnregister, 4000)
  XFER_CU_LOAD(cuPointerGetAttribute, 4000)
  XFER_CU_LOAD(cuMemHostGetDevicePointer, 3020)
  XFER_CU_LOAD(cuMemAllocManaged, 6000)
  XFER_CU_LOAD(cuMemAdvise, 12020)
  XFER_CU_LOAD(cuMemcpyHtoD, 3020)
  XFER_CU_LOAD(cuMemcpyDtoH, 3020)
  XFER_CU_LOAD(cuMemcpyDtoD, 3020)
  XFER_CU_LOAD(cuMemcpy, 4000)
  XFER_CU_LOAD(cuMemcpyHtoDAsync, 3020)
  XFER_CU_LOAD(cuMemcpyDtoHAsync, 3020)
  XFER_CU_LOAD(cuMemcpyDtoDAsync, 3020)
  XFER_CU_LOAD(cuMemcpyAsync, 4000)
  XFER_CU_LOAD(cuMemsetD8, 3020)
  XFER_CU_LOAD(cuStreamCreate, 2000)
  XFER_CU_LOAD(cuStreamDestroy, 4000)
  XFER_CU_LOAD(cuStreamSynchronize, 2000)
  XFER_CU_LOAD(cuStreamWaitEvent, 3020)
  XFER_CU_LOAD(cuEventCreate, 2000)
  XFER_CU_LOAD(cuEventDestroy, 4000)
  XFER_CU_LOAD(cuEventRecord, 2000)
  XFER_CU_LOAD(cuEventSynchronize, 2000)
  XFER_CU_LOAD(cuEventElapsedTime, 12080)
  XFER_CU_LOAD(cuStreamWaitValue32, 11070)
  XFER_CU_LOAD(cuStreamGetDevice, 12080)
#undef XFER_CU_LOAD
  return t;
}

CUdeviceptr dptr(const void* p) { return reinterpret_cast<CUdeviceptr>(p); }
void* vptr(CUdeviceptr p) { return reinterpret_cast<void*>(p); }
std::string bytes_ctx(std::size_t n) { return fmt::format("{} bytes", n); }

class driver_api final : public api {
 public:
  driver_api() : cu_(load_table()) { check(cu_.cuInit(0), "cuInit"); }
  ~driver_api() override {
    for (const auto& [ordinal, held] : contexts_) (void)cu_.cuDevicePrimaryCtxRelease(held.first);
  }
  std::string_view name() const noexcept override { return "driver"; }

  int device_count() override {
    int n = 0;
    check(cu_.cuDeviceGetCount(&n), "cuDeviceGetCount");
    return n;
  }

  device_attributes attributes(int ordinal) override {
    const CUdevice d = device(ordinal);
    device_attributes a;
    char name[256] = {};
    check(cu_.cuDeviceGetName(name, sizeof name, d), "cuDeviceGetName");
    a.name = name;
    std::size_t total = 0;
    check(cu_.cuDeviceTotalMem(&total, d), "cuDeviceTotalMem");
    a.total_memory = total;
    char bus[32] = {};
    check(cu_.cuDeviceGetPCIBusId(bus, sizeof bus, d), "cuDeviceGetPCIBusId");
    a.pci_bus_id = bus;
    read_attributes(a,
                    attribute_ids<CUdevice_attribute>{
                        CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                        CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT,
                        CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY,
                        CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS},
                    [&](CUdevice_attribute id) { return attribute(id, d); });
    return a;
  }

  // The primary context is the one the runtime uses too, so the shared
  // kernels (launched through the runtime) run beside the driver's copies.
  void make_current(int ordinal) override {
    const auto& [d, ctx] = primary_context(ordinal);
    check(cu_.cuCtxSetCurrent(ctx), "cuCtxSetCurrent", fmt::format("device {}", ordinal));
    current_ = d;
  }
  void memory_info(std::size_t& free, std::size_t& total) override {
    check(cu_.cuMemGetInfo(&free, &total), "cuMemGetInfo");
  }
  int driver_version() override {
    int v = 0;
    check(cu_.cuDriverGetVersion(&v), "cuDriverGetVersion");
    return v;
  }
  int runtime_version() override {
    int v = 0;
    const cudaError_t e = cudaRuntimeGetVersion(&v);
    if (e != cudaSuccess)
      throw api_error("cudaRuntimeGetVersion", int(e), fmt::format("{}: {}", cudaGetErrorName(e), cudaGetErrorString(e)),
                      "");
    return v;
  }

  void* device_alloc(std::size_t bytes) override {
    CUdeviceptr p = 0;
    check(cu_.cuMemAlloc(&p, bytes), "cuMemAlloc", bytes_ctx(bytes));
    return vptr(p);
  }
  void device_free(void* p) noexcept override { (void)cu_.cuMemFree(dptr(p)); }

  void* host_alloc(std::size_t bytes, host_alloc_flags f) override {
    unsigned flags = CU_MEMHOSTALLOC_PORTABLE;
    if (f.mapped) flags |= CU_MEMHOSTALLOC_DEVICEMAP;
    if (f.write_combined) flags |= CU_MEMHOSTALLOC_WRITECOMBINED;
    void* p = nullptr;
    check(cu_.cuMemHostAlloc(&p, bytes, flags), "cuMemHostAlloc", fmt::format("{} bytes, flags 0x{:x}", bytes, flags));
    return p;
  }
  void host_free(void* p) noexcept override { (void)cu_.cuMemFreeHost(p); }

  void host_register(void* p, std::size_t bytes) override {
    check(cu_.cuMemHostRegister(p, bytes, CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP), "cuMemHostRegister",
          fmt::format("{} bytes at {}", bytes, p));
  }
  void host_unregister(void* p) noexcept override { (void)cu_.cuMemHostUnregister(p); }
  int host_registered(const void* p) noexcept override {
    unsigned type = 0;
    const CUresult r = cu_.cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                                 reinterpret_cast<CUdeviceptr>(p));
    if (r == CUDA_ERROR_INVALID_VALUE) return 0;  // memory the driver does not know
    if (r != CUDA_SUCCESS) return -1;
    return type == CU_MEMORYTYPE_HOST ? 1 : 0;
  }

  void* mapped_device_pointer(void* host) override {
    CUdeviceptr d = 0;
    check(cu_.cuMemHostGetDevicePointer(&d, host, 0), "cuMemHostGetDevicePointer",
          fmt::format("host pointer {}", host));
    return vptr(d);
  }

  void* managed_alloc(std::size_t bytes) override {
    CUdeviceptr p = 0;
    check(cu_.cuMemAllocManaged(&p, bytes, CU_MEM_ATTACH_GLOBAL), "cuMemAllocManaged", bytes_ctx(bytes));
    try {
      CUmemLocation host{};
      host.type = CU_MEM_LOCATION_TYPE_HOST;
      check(cu_.cuMemAdvise(p, bytes, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, host), "cuMemAdvise",
            "SET_PREFERRED_LOCATION host");
      CUmemLocation dev{};
      dev.type = CU_MEM_LOCATION_TYPE_DEVICE;
      dev.id = current_;
      check(cu_.cuMemAdvise(p, bytes, CU_MEM_ADVISE_SET_ACCESSED_BY, dev), "cuMemAdvise",
            fmt::format("SET_ACCESSED_BY device {}", current_));
    } catch (...) {
      (void)cu_.cuMemFree(p);
      throw;
    }
    return vptr(p);
  }
  void managed_free(void* p) noexcept override { (void)cu_.cuMemFree(dptr(p)); }

  void copy(void* dst, const void* src, std::size_t n, copy_kind kind) override {
    switch (kind) {
      case copy_kind::h2d: check(cu_.cuMemcpyHtoD(dptr(dst), src, n), "cuMemcpyHtoD", bytes_ctx(n)); break;
      case copy_kind::d2h: check(cu_.cuMemcpyDtoH(dst, dptr(src), n), "cuMemcpyDtoH", bytes_ctx(n)); break;
      case copy_kind::d2d: check(cu_.cuMemcpyDtoD(dptr(dst), dptr(src), n), "cuMemcpyDtoD", bytes_ctx(n)); break;
      case copy_kind::unified: check(cu_.cuMemcpy(dptr(dst), dptr(src), n), "cuMemcpy", bytes_ctx(n)); break;
    }
  }
  void copy_async(void* dst, const void* src, std::size_t n, copy_kind kind, stream_t s) override {
    const auto st = static_cast<CUstream>(s);
    switch (kind) {
      case copy_kind::h2d:
        check(cu_.cuMemcpyHtoDAsync(dptr(dst), src, n, st), "cuMemcpyHtoDAsync", bytes_ctx(n));
        break;
      case copy_kind::d2h:
        check(cu_.cuMemcpyDtoHAsync(dst, dptr(src), n, st), "cuMemcpyDtoHAsync", bytes_ctx(n));
        break;
      case copy_kind::d2d:
        check(cu_.cuMemcpyDtoDAsync(dptr(dst), dptr(src), n, st), "cuMemcpyDtoDAsync", bytes_ctx(n));
        break;
      case copy_kind::unified:
        check(cu_.cuMemcpyAsync(dptr(dst), dptr(src), n, st), "cuMemcpyAsync", bytes_ctx(n));
        break;
    }
  }
  void fill_device(void* dst, unsigned char value, std::size_t n) override {
    check(cu_.cuMemsetD8(dptr(dst), value, n), "cuMemsetD8", bytes_ctx(n));
    synchronize();  // see runtime_api::fill_device
  }
  void synchronize() override { check(cu_.cuCtxSynchronize(), "cuCtxSynchronize"); }

  stream_t create_stream() override {
    CUstream s = nullptr;
    check(cu_.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    return s;
  }
  void destroy_stream(stream_t s) noexcept override { (void)cu_.cuStreamDestroy(static_cast<CUstream>(s)); }
  void synchronize_stream(stream_t s) override {
    check(cu_.cuStreamSynchronize(static_cast<CUstream>(s)), "cuStreamSynchronize");
  }
  event_t create_event() override {
    CUevent e = nullptr;
    check(cu_.cuEventCreate(&e, CU_EVENT_DEFAULT), "cuEventCreate");
    return e;
  }
  void destroy_event(event_t e) noexcept override { (void)cu_.cuEventDestroy(static_cast<CUevent>(e)); }
  void record(event_t e, stream_t s) override {
    check(cu_.cuEventRecord(static_cast<CUevent>(e), static_cast<CUstream>(s)), "cuEventRecord");
  }
  void wait(stream_t s, event_t e) override {
    check(cu_.cuStreamWaitEvent(static_cast<CUstream>(s), static_cast<CUevent>(e), 0), "cuStreamWaitEvent");
  }
  void wait_value(stream_t s, void* word, std::uint32_t value) override {
    check(cu_.cuStreamWaitValue32(static_cast<CUstream>(s), dptr(word), value, CU_STREAM_WAIT_VALUE_GEQ),
          "cuStreamWaitValue32", fmt::format("stream {}, word {}, value {}", s, word, value));
  }
  int stream_device(stream_t s) override {
    CUdevice d = 0;
    check(cu_.cuStreamGetDevice(static_cast<CUstream>(s), &d), "cuStreamGetDevice", fmt::format("stream {}", s));
    for (int i = 0, n = device_count(); i < n; ++i)
      if (device(i) == d) return i;
    return static_cast<int>(d);
  }
  void synchronize_event(event_t e) override {
    check(cu_.cuEventSynchronize(static_cast<CUevent>(e)), "cuEventSynchronize");
  }
  bool can_access_peer(int ordinal, int peer) override {
    int can = 0;
    check(cu_.cuDeviceCanAccessPeer(&can, device(ordinal), device(peer)), "cuDeviceCanAccessPeer",
          fmt::format("{} to {}", ordinal, peer));
    return can != 0;
  }
  // The peer's primary context is retained (as make_current does) without
  // changing which context is current.
  void enable_peer_access(int peer) override {
    const CUresult r = cu_.cuCtxEnablePeerAccess(primary_context(peer).second, 0);
    if (r == CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) return;
    check(r, "cuCtxEnablePeerAccess", fmt::format("peer {}", peer));
  }
  float elapsed_ms(event_t start, event_t stop) override {
    float ms = 0;
    check(cu_.cuEventElapsedTime(&ms, static_cast<CUevent>(start), static_cast<CUevent>(stop)), "cuEventElapsedTime");
    return ms;
  }

 private:
  // The device's primary context, retained on first use and released with
  // this api (the destructor).
  const std::pair<CUdevice, CUcontext>& primary_context(int ordinal) {
    auto it = contexts_.find(ordinal);
    if (it == contexts_.end()) {
      CUcontext ctx = nullptr;
      const CUdevice d = device(ordinal);
      check(cu_.cuDevicePrimaryCtxRetain(&ctx, d), "cuDevicePrimaryCtxRetain", fmt::format("device {}", ordinal));
      it = contexts_.emplace(ordinal, std::make_pair(d, ctx)).first;
    }
    return it->second;
  }
  void check(CUresult r, const char* call, const std::string& context = {}) const {
    if (r == CUDA_SUCCESS) return;
    const char* name = nullptr;
    const char* text = nullptr;
    if (cu_.cuGetErrorName(r, &name) != CUDA_SUCCESS) name = "unknown CUresult";
    if (cu_.cuGetErrorString(r, &text) != CUDA_SUCCESS) text = "no description";
    throw api_error(call, int(r), fmt::format("{}: {}", name, text), context);
  }
  CUdevice device(int ordinal) const {
    CUdevice d = 0;
    check(cu_.cuDeviceGet(&d, ordinal), "cuDeviceGet", fmt::format("device {}", ordinal));
    return d;
  }
  int attribute(CUdevice_attribute a, CUdevice d) const {
    int v = 0;
    check(cu_.cuDeviceGetAttribute(&v, a, d), "cuDeviceGetAttribute", fmt::format("attribute {}", int(a)));
    return v;
  }

  driver_table cu_;
  std::map<int, std::pair<CUdevice, CUcontext>> contexts_;  // retained primary contexts
  CUdevice current_ = 0;
};

}  // namespace

std::unique_ptr<api> make_driver_api() { return std::make_unique<driver_api>(); }

}  // namespace xfer::cuda
