// The runtime API strategy: cudaMemcpy*, cudaHostAlloc, cudaHostRegister,
// cudaMallocManaged, cudaEvent*.
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "api.hpp"

namespace xfer::cuda {
namespace {

void check(cudaError_t e, const char* call, const std::string& context = {}) {
  if (e == cudaSuccess) return;
  // Clear the runtime's last-error slot, so a later kernel launch check does
  // not report this (already thrown) failure as its own.
  (void)cudaGetLastError();
  throw api_error(call, static_cast<int>(e), fmt::format("{}: {}", cudaGetErrorName(e), cudaGetErrorString(e)),
                  context);
}

cudaMemcpyKind to_kind(copy_kind k) {
  switch (k) {
    case copy_kind::h2d: return cudaMemcpyHostToDevice;
    case copy_kind::d2h: return cudaMemcpyDeviceToHost;
    case copy_kind::d2d: return cudaMemcpyDeviceToDevice;
    case copy_kind::unified: return cudaMemcpyDefault;
  }
  return cudaMemcpyDefault;
}

std::string bytes_ctx(std::size_t n) { return fmt::format("{} bytes", n); }

int attribute(cudaDeviceAttr a, int device) {
  int v = 0;
  check(cudaDeviceGetAttribute(&v, a, device), "cudaDeviceGetAttribute", fmt::format("attribute {}", int(a)));
  return v;
}

class runtime_api final : public api {
 public:
  runtime_api() {
    int n = 0;
    check(cudaGetDeviceCount(&n), "cudaGetDeviceCount");
  }
  std::string_view name() const noexcept override { return "runtime"; }

  int device_count() override {
    int n = 0;
    check(cudaGetDeviceCount(&n), "cudaGetDeviceCount");
    return n;
  }

  device_attributes attributes(int device) override {
    device_attributes a;
    cudaDeviceProp p{};
    check(cudaGetDeviceProperties(&p, device), "cudaGetDeviceProperties", fmt::format("device {}", device));
    a.name = p.name;
    a.total_memory = p.totalGlobalMem;
    char bus[32] = {};
    check(cudaDeviceGetPCIBusId(bus, sizeof bus, device), "cudaDeviceGetPCIBusId");
    a.pci_bus_id = bus;
    read_attributes(a,
                    attribute_ids<cudaDeviceAttr>{cudaDevAttrComputeCapabilityMajor, cudaDevAttrComputeCapabilityMinor,
                                                  cudaDevAttrMultiProcessorCount, cudaDevAttrAsyncEngineCount,
                                                  cudaDevAttrUnifiedAddressing, cudaDevAttrCanMapHostMemory,
                                                  cudaDevAttrManagedMemory, cudaDevAttrConcurrentManagedAccess},
                    [&](cudaDeviceAttr id) { return attribute(id, device); });
    return a;
  }

  void make_current(int device) override {
    check(cudaSetDevice(device), "cudaSetDevice", fmt::format("device {}", device));
  }
  void memory_info(std::size_t& free, std::size_t& total) override {
    check(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
  }
  int driver_version() override {
    int v = 0;
    check(cudaDriverGetVersion(&v), "cudaDriverGetVersion");
    return v;
  }
  int runtime_version() override {
    int v = 0;
    check(cudaRuntimeGetVersion(&v), "cudaRuntimeGetVersion");
    return v;
  }

  void* device_alloc(std::size_t bytes) override {
    void* p = nullptr;
    check(cudaMalloc(&p, bytes), "cudaMalloc", bytes_ctx(bytes));
    return p;
  }
  void device_free(void* p) noexcept override { (void)cudaFree(p); }

  void* host_alloc(std::size_t bytes, host_alloc_flags f) override {
    unsigned flags = cudaHostAllocPortable;
    if (f.mapped) flags |= cudaHostAllocMapped;
    if (f.write_combined) flags |= cudaHostAllocWriteCombined;
    void* p = nullptr;
    check(cudaHostAlloc(&p, bytes, flags), "cudaHostAlloc", fmt::format("{} bytes, flags 0x{:x}", bytes, flags));
    return p;
  }
  void host_free(void* p) noexcept override { (void)cudaFreeHost(p); }

  void host_register(void* p, std::size_t bytes) override {
    check(cudaHostRegister(p, bytes, cudaHostRegisterPortable | cudaHostRegisterMapped), "cudaHostRegister",
          fmt::format("{} bytes at {}", bytes, p));
  }
  void host_unregister(void* p) noexcept override { (void)cudaHostUnregister(p); }
  int host_registered(const void* p) noexcept override {
    cudaPointerAttributes a{};
    const cudaError_t e = cudaPointerGetAttributes(&a, p);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      return e == cudaErrorInvalidValue ? 0 : -1;  // before CUDA 11 an unregistered pointer was an error
    }
    return a.type == cudaMemoryTypeHost ? 1 : 0;
  }

  void* mapped_device_pointer(void* host) override {
    void* d = nullptr;
    check(cudaHostGetDevicePointer(&d, host, 0), "cudaHostGetDevicePointer", fmt::format("host pointer {}", host));
    return d;
  }

  void* managed_alloc(std::size_t bytes) override {
    void* p = nullptr;
    check(cudaMallocManaged(&p, bytes, cudaMemAttachGlobal), "cudaMallocManaged", bytes_ctx(bytes));
    try {
      int device = 0;
      check(cudaGetDevice(&device), "cudaGetDevice");
      cudaMemLocation host{};
      host.type = cudaMemLocationTypeHost;
      check(cudaMemAdvise(p, bytes, cudaMemAdviseSetPreferredLocation, host), "cudaMemAdvise",
            "SetPreferredLocation host");
      cudaMemLocation dev{};
      dev.type = cudaMemLocationTypeDevice;
      dev.id = device;
      check(cudaMemAdvise(p, bytes, cudaMemAdviseSetAccessedBy, dev), "cudaMemAdvise",
            fmt::format("SetAccessedBy device {}", device));
    } catch (...) {
      (void)cudaFree(p);
      throw;
    }
    return p;
  }
  void managed_free(void* p) noexcept override { (void)cudaFree(p); }

  bool can_access_peer(int device, int peer) override {
    int can = 0;
    check(cudaDeviceCanAccessPeer(&can, device, peer), "cudaDeviceCanAccessPeer", fmt::format("{} to {}", device, peer));
    return can != 0;
  }
  void enable_peer_access(int peer) override {
    const cudaError_t e = cudaDeviceEnablePeerAccess(peer, 0);
    if (e == cudaErrorPeerAccessAlreadyEnabled) {
      (void)cudaGetLastError();
      return;
    }
    check(e, "cudaDeviceEnablePeerAccess", fmt::format("peer {}", peer));
  }
  void copy(void* dst, const void* src, std::size_t bytes, copy_kind kind) override {
    check(cudaMemcpy(dst, src, bytes, to_kind(kind)), "cudaMemcpy", bytes_ctx(bytes));
  }
  void copy_async(void* dst, const void* src, std::size_t bytes, copy_kind kind, stream_t s) override {
    check(cudaMemcpyAsync(dst, src, bytes, to_kind(kind), static_cast<cudaStream_t>(s)), "cudaMemcpyAsync",
          bytes_ctx(bytes));
  }
  void fill_device(void* dst, unsigned char value, std::size_t bytes) override {
    check(cudaMemset(dst, value, bytes), "cudaMemset", bytes_ctx(bytes));
    // cudaMemset of device memory may return before it is done; callers then
    // use other (non-blocking) streams.
    synchronize();
  }
  void synchronize() override { check(cudaDeviceSynchronize(), "cudaDeviceSynchronize"); }

  stream_t create_stream() override {
    cudaStream_t s = nullptr;
    check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    return s;
  }
  void destroy_stream(stream_t s) noexcept override { (void)cudaStreamDestroy(static_cast<cudaStream_t>(s)); }
  void synchronize_stream(stream_t s) override {
    check(cudaStreamSynchronize(static_cast<cudaStream_t>(s)), "cudaStreamSynchronize");
  }
  event_t create_event() override {
    cudaEvent_t e = nullptr;
    check(cudaEventCreate(&e), "cudaEventCreate");
    return e;
  }
  void destroy_event(event_t e) noexcept override { (void)cudaEventDestroy(static_cast<cudaEvent_t>(e)); }
  void record(event_t e, stream_t s) override {
    check(cudaEventRecord(static_cast<cudaEvent_t>(e), static_cast<cudaStream_t>(s)), "cudaEventRecord");
  }
  void wait(stream_t s, event_t e) override {
    check(cudaStreamWaitEvent(static_cast<cudaStream_t>(s), static_cast<cudaEvent_t>(e), 0), "cudaStreamWaitEvent");
  }
  void synchronize_event(event_t e) override {
    check(cudaEventSynchronize(static_cast<cudaEvent_t>(e)), "cudaEventSynchronize");
  }
  float elapsed_ms(event_t start, event_t stop) override {
    float ms = 0;
    check(cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(start), static_cast<cudaEvent_t>(stop)),
          "cudaEventElapsedTime");
    return ms;
  }
};

}  // namespace

std::unique_ptr<api> make_runtime_api() { return std::make_unique<runtime_api>(); }

}  // namespace xfer::cuda
