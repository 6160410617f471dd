#include <algorithm>
#include <cctype>
#include <fstream>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <vector>
#include <xfer/core/affinity.hpp>

namespace xfer {
namespace {

constexpr int mpol_default = 0, mpol_preferred = 1;  // linux/mempolicy.h

std::string first_line(const std::filesystem::path& p) {
  std::ifstream f(p);
  std::string s;
  std::getline(f, s);
  return s;
}

std::string lowercase(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

std::vector<int> parse_cpu_list(const std::string& list) {
  std::vector<int> cpus;
  std::size_t at = 0;
  while (at < list.size()) {
    const std::size_t end = std::min(list.find(',', at), list.size());
    const std::string part = list.substr(at, end - at);
    at = end + 1;
    if (part.empty()) continue;
    try {
      std::size_t used = 0;
      const int lo = std::stoi(part, &used);
      int hi = lo;
      if (used < part.size()) {
        if (part[used] != '-') return {};
        std::size_t used2 = 0;
        hi = std::stoi(part.substr(used + 1), &used2);
        if (used + 1 + used2 != part.size()) return {};
      }
      if (lo < 0 || hi < lo || hi >= CPU_SETSIZE) return {};
      for (int c = lo; c <= hi; ++c) cpus.push_back(c);
    } catch (const std::exception&) {
      return {};
    }
  }
  return cpus;
}

near_device::near_device(const std::string& pci_address, const std::filesystem::path& sys) {
  if (pci_address.empty()) {
    where_.note = "the backend gives no PCI address for this device";
    return;
  }
  const auto dev = sys / "bus/pci/devices" / lowercase(pci_address);
  const std::string list = first_line(dev / "local_cpulist");
  const std::string node_text = first_line(dev / "numa_node");
  const auto cpus = parse_cpu_list(list);
  if (cpus.empty()) {
    where_.note = "sysfs lists no CPUs local to " + pci_address;
    return;
  }
  cpu_set_t old{}, wanted{};
  if (::sched_getaffinity(0, sizeof old, &old) == 0) saved_mask_.assign(reinterpret_cast<const char*>(&old), sizeof old);
  CPU_ZERO(&wanted);
  for (int c : cpus) CPU_SET(c, &wanted);
  // Only CPUs this process may use: a container's cpuset can be narrower.
  if (!saved_mask_.empty()) CPU_AND(&wanted, &wanted, &old);
  if (CPU_COUNT(&wanted) == 0 || ::sched_setaffinity(0, sizeof wanted, &wanted) != 0) {
    where_.note = "the CPUs local to " + pci_address + " (" + list + ") are not this process's to use";
    return;
  }
  cpus_set_ = true;
  where_.applied = true;
  where_.cpus = list;
  int node = -1;
  try {
    node = node_text.empty() ? -1 : std::stoi(node_text);
  } catch (const std::exception&) {
  }
  // -1: one node, or the firmware does not say (common in virtual machines): the CPUs still apply.
  if (node < 0) {
    where_.note = "the device reports no NUMA node: memory policy left as it was";
    return;
  }
  unsigned long mask[16] = {};
  if (node >= static_cast<int>(sizeof mask * 8)) return;
  mask[node / (8 * sizeof(unsigned long))] |= 1ul << (node % (8 * sizeof(unsigned long)));
  if (::syscall(SYS_set_mempolicy, mpol_preferred, mask, sizeof mask * 8) == 0) {
    policy_set_ = true;
    where_.numa_node = node;
  } else {
    where_.note = "set_mempolicy refused: memory policy left as it was";
  }
}

near_device::~near_device() {
  if (policy_set_) ::syscall(SYS_set_mempolicy, mpol_default, nullptr, 0);
  if (cpus_set_ && saved_mask_.size() == sizeof(cpu_set_t))
    ::sched_setaffinity(0, sizeof(cpu_set_t), reinterpret_cast<const cpu_set_t*>(saved_mask_.data()));
}

}  // namespace xfer
