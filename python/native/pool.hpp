#pragma once
// A caching pool over one host memory kind, and the blocks it hands to
// Python. A block is exported through DLPack (Block.__dlpack__): the
// consumer's array holds the Python Block object, the Block holds the pool's
// state, so the block goes back to the pool when the last array referring to
// it dies, even after the Pool object itself is gone.
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <xfer/mem/caching_pool.hpp>
#include <xfer/mem/resource.hpp>

namespace xfer::python {

struct pool_state;

// DLPack device types (dlpack.h's DLDeviceType values).
constexpr int dl_cpu = 1, dl_cuda = 2, dl_cuda_host = 3, dl_cuda_managed = 13;

class block {
 public:
  block(std::shared_ptr<pool_state> pool, std::vector<std::size_t> shape, nanobind::dlpack::dtype dtype);
  ~block();  // back to the pool (or upstream, when the pool is closed)
  block(const block&) = delete;
  block& operator=(const block&) = delete;

  void* data() const noexcept { return p_; }
  std::size_t nbytes() const noexcept { return nbytes_; }
  const std::vector<std::size_t>& shape() const noexcept { return shape_; }
  nanobind::dlpack::dtype dtype() const noexcept { return dtype_; }
  int device_type() const noexcept;
  // The block as nanobind's ndarray object (which implements the DLPack
  // protocol), owned by `self`, this block's Python object.
  nanobind::object as_ndarray(nanobind::handle self, int device_type) const;

 private:
  std::shared_ptr<pool_state> pool_;
  std::vector<std::size_t> shape_;
  nanobind::dlpack::dtype dtype_;
  std::size_t nbytes_, allocated_;
  void* p_;
};

class pool {
 public:
  pool(const std::string& kind, std::size_t max_cached_bytes, const std::string& api, bool pinned_as_cpu);
  block* allocate(std::vector<std::size_t> shape, int code, int bits);
  nanobind::dict stats() const;
  void trim();
  // Refuses allocations from now on and returns the idle blocks; blocks
  // still in use return upstream as they die.
  void close();
  bool closed() const noexcept;
  std::string kind() const;
  bool pinned() const noexcept;
  int device_type() const noexcept;
  std::size_t max_cached_bytes() const noexcept;

 private:
  std::shared_ptr<pool_state> state_;
};

// The kind names this build knows (host kinds, then CUDA kinds where CUDA
// was compiled in), whether or not CUDA can start here.
std::vector<std::string> kind_names();

void bind_pool(nanobind::module_& m);

}  // namespace xfer::python
