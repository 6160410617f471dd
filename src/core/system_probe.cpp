#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <fstream>
#include <sstream>
#include <sys/utsname.h>
#include <thread>
#include <xfer/core/pcie_link.hpp>
#include <xfer/core/system_probe.hpp>
#include <xfer/mem/staged/tuning.hpp>

namespace xfer {
namespace fs = std::filesystem;
namespace {

std::string read_first_line(const fs::path& p) {
  std::ifstream f(p);
  std::string line;
  std::getline(f, line);
  return line;
}

// "Key: value" files (/proc/cpuinfo, /proc/meminfo, /etc/os-release with '=').
std::string find_field(const fs::path& p, const std::string& key, char sep) {
  std::ifstream f(p);
  std::string line;
  while (std::getline(f, line)) {
    const auto at = line.find(sep);
    if (at == std::string::npos) continue;
    std::string k = line.substr(0, at);
    k.erase(k.find_last_not_of(" \t") + 1);
    if (k != key) continue;
    std::string v = line.substr(at + 1);
    v.erase(0, v.find_first_not_of(" \t\""));
    v.erase(v.find_last_not_of(" \t\"") + 1);
    return v;
  }
  return {};
}

std::uint64_t meminfo_bytes(const fs::path& proc, const std::string& key) {
  const std::string v = find_field(proc / "meminfo", key, ':');
  return v.empty() ? 0 : std::stoull(v) * 1024;  // meminfo counts kB
}

double parse_gts(const std::string& s) {
  try {
    return s.empty() ? 0.0 : std::stod(s);  // "32.0 GT/s PCIe" -> 32
  } catch (...) {
    return 0.0;
  }
}

int parse_int(const std::string& s) {
  try {
    return s.empty() ? 0 : std::stoi(s);
  } catch (...) {
    return 0;
  }
}

std::string vendor_name(const std::string& id) {
  if (id == "0x10de") return "NVIDIA";
  if (id == "0x1002") return "AMD";
  if (id == "0x8086") return "Intel";
  if (id == "0x10ee") return "Xilinx";
  return "unknown";
}

// 3D controllers, processing accelerators and co-processors are accelerators;
// a VGA device is one only from a GPU vendor (not a BMC's or a VM's display).
bool is_accelerator(const std::string& cls, const std::string& vendor) {
  const std::string c = cls.substr(0, 6);  // 0xCCSS
  if (c == "0x0302" || c == "0x1200" || c == "0x0b40") return true;
  return (c == "0x0300" || c == "0x0380") && vendor_name(vendor) != "unknown";
}

std::vector<std::uint8_t> read_bytes(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// The PCI Express capability lies past the first 64 bytes, which is all an
// unprivileged reader of sysfs gets: without it the raw rate stands in.
void read_link_config(const fs::path& dev, pci_link& l) {
  const auto bytes = read_bytes(dev / "config");
  const auto cap = parse_pcie_capability(bytes);
  if (!cap) {
    l.config_read = bytes.size() <= 64 ? fmt::format("only {} B of the configuration space readable (needs root): "
                                                      "ceilings are the raw rate",
                                                      bytes.size())
                                       : "no PCI Express capability in the configuration space";
    return;
  }
  l.config_read = "ok";
  if (l.theoretical_gbps <= 0 && cap->max_gen > 0) {
    static constexpr double gts[] = {2.5, 5.0, 8.0, 16.0, 32.0, 64.0};
    l.theoretical_gbps = pcie_link_gbps(gts[cap->max_gen - 1], cap->max_width);
  }
  l.max_payload = cap->max_payload;
  l.max_read_request = cap->max_read_request;
  l.read_completion_boundary = cap->read_completion_boundary;
  l.relaxed_ordering = cap->relaxed_ordering;
  // sysfs's speed files read "Unknown" on some virtual machines; the registers do not.
  if (!l.max_width) l.max_width = cap->max_width;
  if (!l.current_width) l.current_width = cap->current_width;
  if (!l.max_gen) l.max_gen = cap->max_gen;
  if (!l.current_gen) l.current_gen = cap->current_gen;
  const link_ceilings c = ceilings_for(l.theoretical_gbps, *cap);
  l.ceiling_h2d_gbps = c.device_reads_gbps;
  l.ceiling_h2d_rcb_gbps = c.device_reads_rcb_gbps;
  l.ceiling_d2h_gbps = c.device_writes_gbps;
}

}  // namespace

std::uint64_t available_memory_bytes(const fs::path& proc) { return meminfo_bytes(proc, "MemAvailable"); }

int pcie_generation(double gts) {
  static constexpr double rates[] = {2.5, 5.0, 8.0, 16.0, 32.0, 64.0};
  for (int g = 0; g < 6; ++g)
    if (std::abs(gts - rates[g]) < 0.01) return g + 1;
  return 0;
}

double pcie_link_gbps(double gts, int width) {
  if (gts <= 0 || width <= 0) return 0;
  // Gen1/2 use 8b/10b line coding, Gen3-5 128b/130b. Gen6 (PAM4, FLIT) is
  // 242/256 after FEC and framing: approximated by its FLIT efficiency.
  const double efficiency = gts <= 5.0 ? 8.0 / 10.0 : gts <= 32.0 ? 128.0 / 130.0 : 242.0 / 256.0;
  return gts * width * efficiency / 8.0;
}

system_info probe_system(const fs::path& proc, const fs::path& sys) {
  system_info s;
  s.hostname = read_first_line(proc / "sys/kernel/hostname");
  s.cpu_model = find_field(proc / "cpuinfo", "model name", ':');
  if (s.cpu_model.empty()) s.cpu_model = "unknown CPU";
  s.logical_cpus = std::thread::hardware_concurrency();
  s.physical_cores = mem::physical_cores((sys / "devices/system/cpu").string());
  s.memory_bytes = meminfo_bytes(proc, "MemTotal");
  s.memory_available_bytes = meminfo_bytes(proc, "MemAvailable");
  s.os = find_field("/etc/os-release", "PRETTY_NAME", '=');
  utsname u{};
  if (::uname(&u) == 0) s.kernel = fmt::format("{} {} {}", u.sysname, u.release, u.machine);

  std::error_code ec;
  for (const auto& e : fs::directory_iterator(sys / "devices/system/node", ec)) {
    const std::string n = e.path().filename().string();
    if (n.rfind("node", 0) == 0 && n.size() > 4 && std::isdigit(static_cast<unsigned char>(n[4]))) ++s.numa_nodes;
  }
  // "always [madvise] never": the bracketed word is in force.
  const std::string thp = read_first_line(sys / "kernel/mm/transparent_hugepage/enabled");
  if (auto a = thp.find('['), b = thp.find(']'); a != std::string::npos && b > a) s.thp = thp.substr(a + 1, b - a - 1);

  std::vector<fs::path> pci;
  for (const auto& e : fs::directory_iterator(sys / "bus/pci/devices", ec)) pci.push_back(e.path());
  std::sort(pci.begin(), pci.end());
  for (const auto& dev : pci) {
    const std::string cls = read_first_line(dev / "class");
    const std::string vendor = read_first_line(dev / "vendor");
    if (!is_accelerator(cls, vendor)) continue;
    pci_link l;
    l.address = dev.filename().string();
    l.vendor = vendor;
    l.vendor_name = vendor_name(vendor);
    l.device_id = read_first_line(dev / "device");
    l.class_code = cls;
    l.current_gts = parse_gts(read_first_line(dev / "current_link_speed"));
    l.max_gts = parse_gts(read_first_line(dev / "max_link_speed"));
    l.current_width = parse_int(read_first_line(dev / "current_link_width"));
    l.max_width = parse_int(read_first_line(dev / "max_link_width"));
    l.current_gen = pcie_generation(l.current_gts);
    l.max_gen = pcie_generation(l.max_gts);
    l.theoretical_gbps = pcie_link_gbps(l.max_gts, l.max_width);
    l.current_gbps = pcie_link_gbps(l.current_gts, l.current_width);
    const std::string node = read_first_line(dev / "numa_node");
    l.numa_node = node.empty() ? -1 : parse_int(node);
    read_link_config(dev, l);
    s.accelerators.push_back(l);
  }
  return s;
}

}  // namespace xfer
