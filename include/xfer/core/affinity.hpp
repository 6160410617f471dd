#pragma once
// Measuring near the device: the thread that drives a point runs on the CPUs
// the kernel lists as local to the device's PCI slot, and its memory comes
// preferably from the device's NUMA node (nvbandwidth does the same by
// default). A transfer between a GPU and the far socket's memory crosses the
// inter-socket link too, and measures that link as much as PCIe.
//
// Read from sysfs (local_cpulist, numa_node of the PCI device) and applied
// with sched_setaffinity and set_mempolicy(MPOL_PREFERRED): the kernel
// already knows the locality, so this needs no topology library and works
// wherever sysfs does; where it does not, the point runs unplaced and says why.
#include <filesystem>
#include <string>
#include <vector>

namespace xfer {

struct placement {
  bool applied = false;
  int numa_node = -1;  // the memory node preferred; -1: none
  std::string cpus;    // the CPU list the thread ran on ("0-15,32-47")
  std::string note;    // why it was not applied, when it was not
};

// Binds the calling thread near the PCI device (e.g. "0000:17:00.0") for its
// lifetime, restoring the thread's CPU mask and memory policy on
// destruction. Never throws: a device with no NUMA node (a VM, one socket),
// an unreadable sysfs or a refused call leaves the thread as it was, with the
// reason in placement().note.
class near_device {
 public:
  explicit near_device(const std::string& pci_address, const std::filesystem::path& sys = "/sys");
  ~near_device();
  near_device(const near_device&) = delete;
  near_device& operator=(const near_device&) = delete;
  const placement& where() const { return where_; }

 private:
  placement where_;
  bool cpus_set_ = false, policy_set_ = false;
  std::string saved_mask_;  // the previous cpu_set_t, as bytes
};

// Parses a kernel CPU list ("0-3,8,10-11") into CPU numbers; empty on malformed input.
std::vector<int> parse_cpu_list(const std::string& list);

}  // namespace xfer
