#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <algorithm>
#include <string>
#include <thread>
#include <unistd.h>
#include <xfer/core/system_probe.hpp>

using namespace xfer;
namespace fs = std::filesystem;

namespace {

void put(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text << "\n";
}

// A fake /proc and /sys: an H100 on Gen5 x16 trained down to Gen1 at idle, a
// BMC's VGA (not an accelerator) and a NIC.
struct fake_root {
  fs::path root = fs::temp_directory_path() / ("xfer_probe_" + std::to_string(::getpid()));
  fake_root() {
    put(root / "proc/cpuinfo", "processor\t: 0\nmodel name\t: Fake CPU 9000\n");
    put(root / "proc/meminfo", "MemTotal:       1024 kB\nMemFree:         512 kB\nMemAvailable:    768 kB");
    put(root / "proc/sys/kernel/hostname", "fakehost");
    put(root / "sys/devices/system/node/node0/cpulist", "0-3");
    put(root / "sys/devices/system/node/node1/cpulist", "4-7");
    put(root / "sys/devices/system/node/possible", "0-1");
    put(root / "sys/kernel/mm/transparent_hugepage/enabled", "always [madvise] never");
    // Every CPU a hyperthread of one core, whichever of them this process may use.
    for (unsigned c = 0; c < std::max(1u, std::thread::hardware_concurrency()); ++c)
      put(root / ("sys/devices/system/cpu/cpu" + std::to_string(c)) / "topology/thread_siblings_list", "0-4095");
    const auto gpu = root / "sys/bus/pci/devices/0000:17:00.0";
    put(gpu / "class", "0x030200");
    put(gpu / "vendor", "0x10de");
    put(gpu / "device", "0x2331");
    put(gpu / "current_link_speed", "2.5 GT/s PCIe");
    put(gpu / "current_link_width", "16");
    put(gpu / "max_link_speed", "32.0 GT/s PCIe");
    put(gpu / "max_link_width", "16");
    const auto bmc = root / "sys/bus/pci/devices/0000:03:00.0";
    put(bmc / "class", "0x030000");
    put(bmc / "vendor", "0x1a03");
    const auto nic = root / "sys/bus/pci/devices/0000:04:00.0";
    put(nic / "class", "0x020000");
    put(nic / "vendor", "0x8086");
  }
  ~fake_root() { fs::remove_all(root); }
};

}  // namespace

TEST(SystemProbe, ReadsProcAndSysfs) {
  fake_root f;
  const auto s = probe_system(f.root / "proc", f.root / "sys");
  EXPECT_EQ(s.cpu_model, "Fake CPU 9000");
  EXPECT_EQ(s.hostname, "fakehost");
  EXPECT_EQ(s.memory_bytes, 1024u * 1024);
  EXPECT_EQ(s.memory_available_bytes, 768u * 1024);
  EXPECT_EQ(s.numa_nodes, 2);
  EXPECT_EQ(s.thp, "madvise");
  EXPECT_EQ(s.physical_cores, 1u) << "hyperthreads of one core count once";
  ASSERT_EQ(s.accelerators.size(), 1u);
  const auto& g = s.accelerators[0];
  EXPECT_EQ(g.address, "0000:17:00.0");
  EXPECT_EQ(g.vendor_name, "NVIDIA");
  EXPECT_EQ(g.current_gen, 1);
  EXPECT_EQ(g.max_gen, 5);
  EXPECT_EQ(g.max_width, 16);
  EXPECT_NEAR(g.theoretical_gbps, 63.015, 1e-3);  // 32 GT/s x 16 x 128/130 / 8
  EXPECT_NEAR(g.current_gbps, 4.0, 1e-9);         // 2.5 GT/s x 16 x 8/10 / 8
}

TEST(SystemProbe, LinkArithmetic) {
  EXPECT_EQ(pcie_generation(8.0), 3);
  EXPECT_EQ(pcie_generation(16.0), 4);
  EXPECT_EQ(pcie_generation(3.0), 0);
  EXPECT_NEAR(pcie_link_gbps(8.0, 16), 15.754, 1e-3);
  EXPECT_NEAR(pcie_link_gbps(5.0, 8), 4.0, 1e-9);
  EXPECT_EQ(pcie_link_gbps(0, 16), 0);
}

TEST(SystemProbe, MissingFilesGiveEmptyNotErrors) {
  const auto s = probe_system("/nonexistent/proc", "/nonexistent/sys");
  EXPECT_EQ(s.cpu_model, "unknown CPU");
  EXPECT_EQ(s.memory_bytes, 0u);
  EXPECT_GE(s.physical_cores, 1u) << "no topology: each CPU a core";
  EXPECT_TRUE(s.accelerators.empty());
}
