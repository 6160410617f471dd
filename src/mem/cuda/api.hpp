#pragma once
// What differs between the CUDA runtime API and the driver API, behind one
// small interface (a strategy): routes, gates and memory resources are written
// once, and each backend still times its own API's calls. No CUDA header here:
// handles travel as void* (cudaStream_t/CUstream and cudaEvent_t/CUevent are
// the same driver objects underneath).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

namespace xfer::cuda {

// A CUDA call failed: what() names the call, the API's error name and text,
// and the sizes/arguments involved.
class api_error : public std::runtime_error {
 public:
  api_error(const std::string& call, int code, const std::string& error, const std::string& context);
  int code() const noexcept { return code_; }
  // "cudaErrorMemoryAllocation: out of memory" (name: text)
  const std::string& error() const noexcept { return error_; }

 private:
  int code_;
  std::string error_;
};

using stream_t = void*;
using event_t = void*;

// h2d/d2h/d2d name the sides; unified lets the API work it out (managed memory).
enum class copy_kind { h2d, d2h, d2d, unified };

struct host_alloc_flags {
  bool mapped = false;          // into the device's address space (zero copy)
  bool write_combined = false;  // fast CPU writes and DMA reads, very slow CPU reads
};

struct device_attributes {
  std::string name;
  std::string pci_bus_id;  // "0000:41:00.0"
  std::uint64_t total_memory = 0;
  int cc_major = 0, cc_minor = 0;
  int multiprocessors = 0;
  int async_engines = 0;
  bool unified_addressing = false;
  bool can_map_host_memory = false;
  bool managed_memory = false;
  bool concurrent_managed_access = false;
};

// Each API names the attributes device_attributes holds in an enum of its
// own (CUdevice_attribute, cudaDeviceAttr); both read them the same way.
template <class Attr>
struct attribute_ids {
  Attr cc_major, cc_minor, multiprocessors, async_engines, unified_addressing, can_map_host_memory, managed_memory,
      concurrent_managed_access;
};
// get(id) queries one attribute of the device at hand.
template <class Attr, class Get>
void read_attributes(device_attributes& a, const attribute_ids<Attr>& id, Get get) {
  a.cc_major = get(id.cc_major);
  a.cc_minor = get(id.cc_minor);
  a.multiprocessors = get(id.multiprocessors);
  a.async_engines = get(id.async_engines);
  a.unified_addressing = get(id.unified_addressing) != 0;
  a.can_map_host_memory = get(id.can_map_host_memory) != 0;
  a.managed_memory = get(id.managed_memory) != 0;
  a.concurrent_managed_access = get(id.concurrent_managed_access) != 0;
}

class api {
 public:
  virtual ~api() = default;
  virtual std::string_view name() const noexcept = 0;  // "runtime" | "driver"

  virtual int device_count() = 0;
  virtual device_attributes attributes(int device) = 0;
  // Makes the device's primary context current for this thread.
  virtual void make_current(int device) = 0;
  virtual void memory_info(std::size_t& free, std::size_t& total) = 0;
  virtual int driver_version() = 0;
  virtual int runtime_version() = 0;

  virtual void* device_alloc(std::size_t bytes) = 0;
  virtual void device_free(void* p) noexcept = 0;
  virtual void* host_alloc(std::size_t bytes, host_alloc_flags flags) = 0;
  virtual void host_free(void* p) noexcept = 0;
  virtual void host_register(void* p, std::size_t bytes) = 0;
  virtual void host_unregister(void* p) noexcept = 0;
  // Whether `p` lies in host memory registered (or allocated pinned) with
  // the driver: 1 yes, 0 no, -1 the API cannot tell. The registration
  // cache's check that a registration is still the driver's. The default
  // cannot tell.
  virtual int host_registered(const void* /*p*/) noexcept { return -1; }
  // The device's address of mapped host memory.
  virtual void* mapped_device_pointer(void* host) = 0;
  // Managed memory whose preferred home is host memory, mapped for the current
  // device (so the device reaches it across the link instead of migrating it:
  // as a host kind it must stay host memory).
  virtual void* managed_alloc(std::size_t bytes) = 0;
  virtual void managed_free(void* p) noexcept = 0;

  // Blocking copy (legacy default stream), and a copy queued on a stream.
  virtual void copy(void* dst, const void* src, std::size_t bytes, copy_kind kind) = 0;
  virtual void copy_async(void* dst, const void* src, std::size_t bytes, copy_kind kind, stream_t s) = 0;
  // Blocking byte fill of device memory.
  virtual void fill_device(void* dst, unsigned char value, std::size_t bytes) = 0;
  virtual void synchronize() = 0;  // everything on the current device

  // Streams do not synchronize with the legacy default stream.
  virtual stream_t create_stream() = 0;
  virtual void destroy_stream(stream_t s) noexcept = 0;
  virtual void synchronize_stream(stream_t s) = 0;
  virtual event_t create_event() = 0;
  virtual void destroy_event(event_t e) noexcept = 0;
  virtual void record(event_t e, stream_t s) = 0;
  virtual void wait(stream_t s, event_t e) = 0;  // s waits for e
  virtual void synchronize_event(event_t e) = 0;
  virtual float elapsed_ms(event_t start, event_t stop) = 0;

  // Peer access (the peer matrix): whether `device` can reach `peer`'s memory
  // directly, and turning that on for the current device (already on is
  // fine). Without it a copy between two devices still works (unified
  // addressing): the driver stages it through host memory. The defaults say
  // no peer access, for an api that does not offer it.
  virtual bool can_access_peer(int /*device*/, int /*peer*/) { return false; }
  virtual void enable_peer_access(int /*peer*/) {}

  // A caller's stream held until a staged copy ends (issue 37): `s` waits,
  // on the device, until the 32-bit word at device address `word` reaches
  // `value` (a cyclic >=: cuStreamWaitValue32). And the device a stream
  // belongs to (its ordinal). The driver API has both; the defaults throw
  // api_error, for an api that does not.
  virtual void wait_value(stream_t /*s*/, void* /*word*/, std::uint32_t /*value*/) {
    throw api_error("cuStreamWaitValue32", 0, "not offered", std::string(name()) + " API");
  }
  virtual int stream_device(stream_t /*s*/) {
    throw api_error("cuStreamGetDevice", 0, "not offered", std::string(name()) + " API");
  }
};

// Both throw api_error when the API cannot start (no driver, no device).
std::unique_ptr<api> make_runtime_api();
std::unique_ptr<api> make_driver_api();

// ---- owners ---------------------------------------------------------------

class device_buffer {
 public:
  device_buffer() = default;
  device_buffer(api& a, std::size_t bytes) : api_(&a), data_(a.device_alloc(bytes)), bytes_(bytes) {}
  device_buffer(device_buffer&& o) noexcept { swap(o); }
  device_buffer& operator=(device_buffer&& o) noexcept {
    device_buffer t(std::move(o));
    swap(t);
    return *this;
  }
  ~device_buffer() {
    if (data_) api_->device_free(data_);
  }
  void* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return bytes_; }

 private:
  void swap(device_buffer& o) noexcept {
    std::swap(api_, o.api_);
    std::swap(data_, o.data_);
    std::swap(bytes_, o.bytes_);
  }
  api* api_ = nullptr;
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

class stream {
 public:
  explicit stream(api& a) : api_(a), s_(a.create_stream()) {}
  ~stream() { api_.destroy_stream(s_); }
  stream(const stream&) = delete;
  stream& operator=(const stream&) = delete;
  stream_t get() const noexcept { return s_; }

 private:
  api& api_;
  stream_t s_;
};

class event {
 public:
  explicit event(api& a) : api_(a), e_(a.create_event()) {}
  ~event() { api_.destroy_event(e_); }
  event(const event&) = delete;
  event& operator=(const event&) = delete;
  event_t get() const noexcept { return e_; }

 private:
  api& api_;
  event_t e_;
};

}  // namespace xfer::cuda
