// Link ceilings from configuration-space bytes, as sysfs hands them out.
#include <array>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <gtest/gtest.h>
#include <unistd.h>
#include <vector>
#include <sched.h>
#include <xfer/core/affinity.hpp>
#include <xfer/core/pcie_link.hpp>
#include <xfer/core/result.hpp>
#include <xfer/core/system_probe.hpp>

using namespace xfer;
namespace fs = std::filesystem;

namespace {

void put16(std::vector<std::uint8_t>& c, std::size_t at, std::uint16_t v) {
  c[at] = v & 0xff;
  c[at + 1] = v >> 8;
}
void put32(std::vector<std::uint8_t>& c, std::size_t at, std::uint32_t v) {
  put16(c, at, v & 0xffff);
  put16(c, at + 2, v >> 16);
}

// A 256-byte dump shaped like a GPU's: power management at 0x60, MSI at 0x68,
// then the PCI Express capability at 0x78 with the given registers.
struct dump {
  int mps_code = 1, mps_supported_code = 2, mrrs_code = 2;
  bool relaxed = true, rcb128 = false;
  int link_cap_gen = 5, link_cap_width = 16, link_gen = 5, link_width = 16;
  std::vector<std::uint8_t> bytes() const {
    std::vector<std::uint8_t> c(256, 0);
    put16(c, 0x00, 0x10de);
    put16(c, 0x06, 0x0010);  // status: capability list present
    c[0x34] = 0x60;
    c[0x60] = 0x01, c[0x61] = 0x68;  // power management -> MSI
    c[0x68] = 0x05, c[0x69] = 0x78;  // MSI -> PCI Express
    c[0x78] = 0x10, c[0x79] = 0x00;  // PCI Express, end of list
    put32(c, 0x78 + 0x04, static_cast<std::uint32_t>(mps_supported_code));
    put16(c, 0x78 + 0x08, static_cast<std::uint16_t>((mps_code << 5) | (relaxed ? 0x10 : 0) | (mrrs_code << 12)));
    put32(c, 0x78 + 0x0c, static_cast<std::uint32_t>(link_cap_gen | (link_cap_width << 4)));
    put16(c, 0x78 + 0x10, rcb128 ? 0x08 : 0);
    put16(c, 0x78 + 0x12, static_cast<std::uint16_t>(link_gen | (link_width << 4)));
    return c;
  }
};

}  // namespace

TEST(PcieCapability, ReadsTheRegistersThroughTheCapabilityList) {
  const auto cap = parse_pcie_capability(dump{}.bytes());
  ASSERT_TRUE(cap);
  EXPECT_EQ(cap->max_payload, 256);
  EXPECT_EQ(cap->max_payload_supported, 512);
  EXPECT_EQ(cap->max_read_request, 512);
  EXPECT_EQ(cap->read_completion_boundary, 64);
  EXPECT_TRUE(cap->relaxed_ordering);
  EXPECT_EQ(cap->max_gen, 5);
  EXPECT_EQ(cap->max_width, 16);
  dump slow;
  slow.link_gen = 3, slow.link_width = 8, slow.rcb128 = true, slow.relaxed = false, slow.mps_code = 0;
  const auto s = parse_pcie_capability(slow.bytes());
  ASSERT_TRUE(s);
  EXPECT_EQ(s->current_gen, 3);
  EXPECT_EQ(s->current_width, 8);
  EXPECT_EQ(s->read_completion_boundary, 128);
  EXPECT_EQ(s->max_payload, 128);
  EXPECT_FALSE(s->relaxed_ordering);
}

TEST(PcieCapability, UnreadableOrCorruptDumpsGiveNothing) {
  auto c = dump{}.bytes();
  // What an unprivileged reader gets: the first 64 bytes.
  EXPECT_FALSE(parse_pcie_capability(std::span(c.data(), 64)));
  EXPECT_FALSE(parse_pcie_capability(std::span(c.data(), 16)));
  auto no_list = c;
  put16(no_list, 0x06, 0);
  EXPECT_FALSE(parse_pcie_capability(no_list));
  auto loop = c;
  loop[0x79] = 0x60;  // the PCIe capability replaced by a list that loops
  loop[0x78] = 0x09;
  EXPECT_FALSE(parse_pcie_capability(loop));
}

TEST(PcieCeilings, Gen5x16AtMps256) {
  const double raw = pcie_link_gbps(32.0, 16);
  const auto l = ceilings_for(raw, *parse_pcie_capability(dump{}.bytes()));
  // Writes: 256 of every 280 bytes are data, 91.4% of 63.0 GB/s.
  EXPECT_NEAR(l.device_writes_gbps, 57.61, 0.01);
  // Reads: completions of 256 B carry 20 B each; of 64 B (the RCB) far more.
  EXPECT_NEAR(l.device_reads_gbps, 63.015 * 256 / 276, 0.01);
  EXPECT_NEAR(l.device_reads_rcb_gbps, 63.015 * 64 / 84, 0.01);
  EXPECT_LT(l.device_reads_rcb_gbps, l.device_writes_gbps);
}

TEST(PcieCeilings, EachDirectionGetsItsOwnCeiling) {
  pci_link a;
  a.theoretical_gbps = 63.0;
  a.ceiling_h2d_gbps = 58.0;
  a.ceiling_d2h_gbps = 57.0;
  EXPECT_EQ(a.ceiling_for(direction::h2d), 58.0);
  EXPECT_EQ(a.ceiling_for(direction::d2h), 57.0);
  EXPECT_EQ(a.ceiling_for(direction::bidir), 115.0);
  EXPECT_NEAR(a.ceiling_for(direction::rw), 2 / (1 / 58.0 + 1 / 57.0), 1e-9);
  EXPECT_EQ(a.ceiling_for(direction::d2d), 0.0);
  pci_link raw_only;
  raw_only.theoretical_gbps = 63.0;
  EXPECT_EQ(raw_only.ceiling_for(direction::h2d), 63.0);  // no configuration space: the raw rate
}

TEST(PcieCeilings, APointAboveItsDirectionsCeilingIsFlaggedAndRecordsIt) {
  pci_link a;
  a.theoretical_gbps = 63.0;
  a.ceiling_h2d_gbps = 58.0;
  a.ceiling_d2h_gbps = 57.0;
  point_result r;
  r.spec = {"cuda-rt", 0, route_kind::copy_async, direction::d2h, "pinned", 1 << 20};
  r.device_type = "gpu";
  r.bytes_per_rep = 1 << 20;
  r.stats.median = (1 << 20) / 57.5e9;  // 57.5 GB/s: under the raw rate, over the write ceiling
  flag_link_limit(r, a);
  EXPECT_TRUE(r.above_link_limit);
  EXPECT_EQ(r.link_ceiling_gbps, 57.0);
  r.above_link_limit = false;
  r.spec.dir = direction::h2d;
  flag_link_limit(r, a);
  EXPECT_FALSE(r.above_link_limit);
  EXPECT_EQ(r.link_ceiling_gbps, 58.0);
}

TEST(PcieLink, DegradedSaysWhatIsBelowItsBest) {
  pci_link a;
  a.max_gen = 5, a.max_width = 16, a.current_gen = 5, a.current_width = 16;
  EXPECT_EQ(a.degraded(), "");
  a.current_width = 8;
  EXPECT_EQ(a.degraded(), "x8 of x16");
  a.current_gen = 3;
  EXPECT_EQ(a.degraded(), "x8 of x16, Gen3 of Gen5");
}

TEST(PcieLink, TheProbeReadsTheConfigurationSpaceAndTheNumaNode) {
  const fs::path root = fs::temp_directory_path() / ("xfer_pcie_" + std::to_string(::getpid()));
  const auto gpu = root / "sys/bus/pci/devices/0000:17:00.0";
  fs::create_directories(gpu);
  std::ofstream(gpu / "class") << "0x030200\n";
  std::ofstream(gpu / "vendor") << "0x10de\n";
  std::ofstream(gpu / "max_link_speed") << "32.0 GT/s PCIe\n";
  std::ofstream(gpu / "max_link_width") << "16\n";
  std::ofstream(gpu / "current_link_speed") << "32.0 GT/s PCIe\n";
  std::ofstream(gpu / "current_link_width") << "16\n";
  std::ofstream(gpu / "numa_node") << "1\n";
  const auto bytes = dump{}.bytes();
  std::ofstream(gpu / "config", std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), 256);
  auto s = probe_system(root / "proc", root / "sys");
  ASSERT_EQ(s.accelerators.size(), 1u);
  EXPECT_EQ(s.accelerators[0].config_read, "ok");
  EXPECT_EQ(s.accelerators[0].numa_node, 1);
  EXPECT_EQ(s.accelerators[0].max_payload, 256);
  EXPECT_NEAR(s.accelerators[0].ceiling_d2h_gbps, 57.61, 0.01);

  // Unprivileged: 64 bytes. The raw rate stands in, and the file says why.
  std::ofstream(gpu / "config", std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(bytes.data()), 64);
  s = probe_system(root / "proc", root / "sys");
  EXPECT_EQ(s.accelerators[0].ceiling_d2h_gbps, 0.0);
  EXPECT_NE(s.accelerators[0].config_read.find("only 64 B"), std::string::npos) << s.accelerators[0].config_read;
  EXPECT_NEAR(s.accelerators[0].ceiling_for(direction::d2h), 63.015, 1e-3);
  fs::remove_all(root);
}

TEST(Affinity, CpuListsParseAndMalformedOnesGiveNothing) {
  EXPECT_EQ(parse_cpu_list("0-3,8,10-11"), (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(parse_cpu_list("5"), (std::vector<int>{5}));
  EXPECT_TRUE(parse_cpu_list("").empty());
  EXPECT_TRUE(parse_cpu_list("3-1").empty());
  EXPECT_TRUE(parse_cpu_list("a-b").empty());
  EXPECT_TRUE(parse_cpu_list("1-2x").empty());
}

TEST(Affinity, ThreadRunsOnTheDevicesCpusAndIsRestoredAfter) {
  const fs::path root = fs::temp_directory_path() / ("xfer_aff_" + std::to_string(::getpid()));
  const auto dev = root / "bus/pci/devices/0000:17:00.0";
  fs::create_directories(dev);
  cpu_set_t before{};
  ASSERT_EQ(::sched_getaffinity(0, sizeof before, &before), 0);
  int first = 0;
  while (!CPU_ISSET(first, &before)) ++first;
  std::ofstream(dev / "local_cpulist") << first << "\n";
  std::ofstream(dev / "numa_node") << "-1\n";
  {
    near_device near("0000:17:00.0", root);  // upper or lower case: sysfs names are lower
    EXPECT_TRUE(near.where().applied) << near.where().note;
    EXPECT_EQ(near.where().cpus, std::to_string(first));
    EXPECT_EQ(near.where().numa_node, -1);
    EXPECT_NE(near.where().note.find("no NUMA node"), std::string::npos);
    cpu_set_t now{};
    ASSERT_EQ(::sched_getaffinity(0, sizeof now, &now), 0);
    EXPECT_EQ(CPU_COUNT(&now), 1);
    EXPECT_TRUE(CPU_ISSET(first, &now));
  }
  cpu_set_t after{};
  ASSERT_EQ(::sched_getaffinity(0, sizeof after, &after), 0);
  EXPECT_TRUE(CPU_EQUAL(&before, &after));

  // No such device, or no address: nothing changes, and the note says why.
  near_device missing("0000:99:00.0", root);
  EXPECT_FALSE(missing.where().applied);
  EXPECT_FALSE(missing.where().note.empty());
  near_device none("", root);
  EXPECT_FALSE(none.where().applied);
  fs::remove_all(root);
}

// The configuration space of the H100 the GPU gate ran on (docs/results/h100/gate/,
// c8d9c42), as sysfs gave it to root: 4 KiB, the PCI Express capability at 0x60.
TEST(PcieCapability, AStoredH100ConfigurationSpace) {
  std::ifstream f(std::string(XFER_TEST_DATA) + "/h100-pci-config.bin", std::ios::binary);
  const std::vector<std::uint8_t> bytes{std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
  ASSERT_EQ(bytes.size(), 4096u);
  const auto cap = parse_pcie_capability(bytes);
  ASSERT_TRUE(cap);
  EXPECT_EQ(cap->max_payload, 256);
  EXPECT_EQ(cap->max_payload_supported, 256);
  EXPECT_EQ(cap->max_read_request, 4096);
  EXPECT_EQ(cap->read_completion_boundary, 64);
  EXPECT_TRUE(cap->relaxed_ordering);
  EXPECT_EQ(cap->max_gen, 5);
  EXPECT_EQ(cap->max_width, 16);
  EXPECT_EQ(cap->current_gen, 5);
  EXPECT_EQ(cap->current_width, 16);
  const auto l = ceilings_for(pcie_link_gbps(32.0, 16), *cap);
  EXPECT_NEAR(l.device_writes_gbps, 57.61, 0.01);  // the figure DESIGN.md quotes for Gen5 x16 at MPS 256
  EXPECT_NEAR(l.device_reads_gbps, 58.45, 0.01);
}
