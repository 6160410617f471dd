#include "xrt_backend.hpp"

#include <fmt/format.h>
#include <xrt/xrt_device.h>
#include <experimental/xrt_system.h>

#include <xfer/core/errors.hpp>
#include <xfer/mem/host_resources.hpp>

#include "xrt_runtime.hpp"
#include "xrt_transfer.hpp"

namespace xfer::xrt_backend {
namespace {

class xrt_backend final : public backend {
 public:
  xrt_backend(std::vector<device_info> devices, std::string mode, mem::kind_options kinds)
      : devices_(std::move(devices)), mode_(std::move(mode)), kinds_(kinds) {}

  std::string name() const override { return "xrt"; }
  std::string description() const override {
    return mode_.empty() ? "Xilinx XRT native API (xrt::device, xrt::bo) on hardware"
                         : fmt::format("Xilinx XRT native API under XCL_EMULATION_MODE={}: emulation, no data crosses a "
                                       "link; the times are the API's own cost per call",
                                       mode_);
  }
  std::vector<device_info> devices() const override { return devices_; }
  std::map<std::string, std::string> versions() const override {
    return {{"xrt_emulation", mode_.empty() ? "hardware" : mode_}};
  }

  std::vector<route_info> routes() const override {
    using enum direction;
    return {
        {route_kind::copy_sync,
         "bo.write from the host memory then bo.sync to the device (h2d); bo.sync from the device then bo.read (d2h)",
         {h2d, d2h, rw}, true},
        {own_routes::bo_sync, "bo.sync of a buffer object XRT allocated (kinds bo-normal, bo-host-only): the DMA alone",
         {h2d, d2h, rw}, true},
        {own_routes::user_ptr,
         "a buffer object over the host memory itself (xrt::bo on a user pointer) then bo.sync; XRT refuses a pointer "
         "that is not 4 KiB-aligned, or copies it",
         {h2d, d2h, rw}, true},
    };
  }

  std::vector<kind_support> host_memory_kinds() const override {
    std::vector<kind_support> out;
    for (const auto& name : mem::host_kind_names())
      out.push_back({name, true, "", mem::make_host_kind(name, kinds_)->describe()});
    for (const auto& k : bo_kinds()) out.push_back({k.name, true, "", k.description});
    mark_overview(out, {"bo-normal"});
    return out;
  }

  std::string pairing_gap(route_kind route, const std::string& kind) const override {
    return bo_pairing_gap(route, kind);
  }

  std::unique_ptr<transfer> prepare(const point_spec& p) override {
    const auto& d = devices_.at(static_cast<std::size_t>(p.device));
    return make_xrt_transfer(p, d, mode_, kinds_);
  }

 private:
  std::vector<device_info> devices_;
  std::string mode_;
  mem::kind_options kinds_;
};

device_info emulated_device(const std::string& mode) {
  device_info d;
  d.index = 0;
  d.name = fmt::format("XRT {} emulation (no hardware)", mode);
  d.type = "accelerator";
  d.details["emulation"] = mode;
  d.details["note"] = "no data crosses a link: bo.sync returns at once; bo.write/bo.read copy within host memory";
  return d;
}

std::vector<device_info> hardware_devices() {
  std::vector<device_info> out;
  const unsigned n = static_cast<unsigned>(xrt::system::enumerate_devices());
  for (unsigned i = 0; i < n; ++i) {
    device_info d;
    d.index = static_cast<int>(i);
    d.type = "accelerator";
    try {
      xrt::device dev(i);
      d.name = dev.get_info<xrt::info::device::name>();
      d.details["pci_bus_id"] = dev.get_info<xrt::info::device::bdf>();
    } catch (const std::exception& e) {
      d.name = fmt::format("XRT device {}", i);
      d.details["note"] = fmt::format("not queried: {}", e.what());
    }
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace

backend_entry make_xrt_backend(mem::kind_options kinds) {
  const std::string mode = emulation_mode();
  if (mode == "sw_emu" || mode == "hw_emu")
    return {"xrt", nullptr,
            fmt::format("XCL_EMULATION_MODE={} needs Vitis and an xclbin built for the emulated platform (neither is "
                        "here); XCL_EMULATION_MODE=noop runs the API without them",
                        mode)};
  if (!mode.empty() && mode != "noop")
    return {"xrt", nullptr, fmt::format("XCL_EMULATION_MODE={} is not a mode XRT knows (noop, sw_emu, hw_emu)", mode)};
  if (const std::string why = prepare_environment(); !why.empty()) return {"xrt", nullptr, why};
  try {
    std::vector<device_info> devices = mode.empty() ? hardware_devices() : std::vector{emulated_device(mode)};
    if (devices.empty())
      return {"xrt", nullptr,
              "no XRT device found (an Alveo card with its driver); XCL_EMULATION_MODE=noop runs the API in emulation"};
    return {"xrt", std::make_unique<xrt_backend>(std::move(devices), mode, kinds), ""};
  } catch (const std::exception& e) {
    return {"xrt", nullptr, fmt::format("XRT could not start: {}", e.what())};
  }
}

}  // namespace xfer::xrt_backend
