// The public factory over resources.hpp: each resource there borrows an api
// (the backend owns one per backend); an application has none, so the
// resource handed out here owns its api and forwards to the real one.
#include <xfer/mem/cuda/host_kinds.hpp>

#include <algorithm>

#include "resources.hpp"

namespace xfer::cuda {
namespace {

class api_owning_resource final : public mem::host_resource {
 public:
  api_owning_resource(std::unique_ptr<api> a, std::string_view name, const mem::kind_options& options)
      : api_(std::move(a)), inner_(make_host_kind(name, *api_, options)) {}

  std::string_view kind() const noexcept override { return inner_->kind(); }
  mem::properties props() const noexcept override { return inner_->props(); }
  std::size_t max_alignment() const noexcept override { return inner_->max_alignment(); }
  std::size_t natural_alignment() const noexcept override { return inner_->natural_alignment(); }
  std::string describe() const override { return inner_->describe(); }

 private:
  void* do_allocate(std::size_t bytes, std::size_t alignment) override { return inner_->allocate(bytes, alignment); }
  void do_deallocate(void* p, std::size_t bytes, std::size_t alignment) noexcept override {
    inner_->deallocate(p, bytes, alignment);
  }

  std::unique_ptr<api> api_;  // declared first: outlives inner_, which allocates through it
  std::unique_ptr<mem::host_resource> inner_;
};

}  // namespace

const std::vector<std::string>& cuda_host_kind_names() {
  static const std::vector<std::string> names = [] {
    const auto& core = mem::host_kind_names();
    std::vector<std::string> n;
    for (const auto& k : host_kind_names())
      if (std::find(core.begin(), core.end(), k) == core.end()) n.push_back(k);
    n.insert(n.end(), extra_kind_names().begin(), extra_kind_names().end());
    return n;
  }();
  return names;
}

std::unique_ptr<mem::host_resource> make_cuda_host_kind(std::string_view name, allocating_api which,
                                                        const mem::kind_options& options) {
  if (auto plain = mem::make_host_kind(name, options)) return plain;  // no CUDA needed
  const auto& cuda = cuda_host_kind_names();
  if (std::find(cuda.begin(), cuda.end(), name) == cuda.end()) return nullptr;
  // api_error is a std::runtime_error: no driver or no device says so here.
  auto a = which == allocating_api::driver ? make_driver_api() : make_runtime_api();
  return std::make_unique<api_owning_resource>(std::move(a), name, options);
}

}  // namespace xfer::cuda
