#pragma once
// What a PCIe link can really carry, from the device's PCI configuration space.
//
// The raw rate (GT/s x width after line coding) is not a ceiling a transfer
// can reach: every transaction layer packet (TLP) carries framing, a header
// and a CRC besides its data. Per TLP on Gen3 and later (Gen1/2 frame
// differently but add up to the same): 4 B framing token with the sequence
// number, a 16 B header for 64-bit addresses (12 B for a completion), 4 B LCRC.
// So:
//  - device -> host (the device writes host memory, posted writes): each TLP
//    carries at most Max_Payload_Size bytes for 24 B of overhead; MPS 256 is
//    91.4% of the raw rate, 57.6 GB/s on Gen5 x16.
//  - host -> device (the device reads host memory): the data returns in
//    completions of at most MPS bytes each for 20 B of overhead. Root
//    complexes often split them at the read completion boundary (64 or 128 B),
//    which lowers the rate further; the ceiling assumes whole-MPS completions,
//    so it is an upper bound, and the RCB figure is kept beside it.
// Flow-control and ACK packets (DLLPs) take a little more; not counted, so
// these stay upper bounds. Sources: PCI Express Base Specification, TLP
// format and Device/Link Control registers.
#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace xfer {

// Fields of the PCI Express capability (capability ID 0x10).
struct pcie_capability {
  int max_payload = 0;            // bytes in force (Device Control), 128..4096
  int max_payload_supported = 0;  // bytes (Device Capabilities)
  int max_read_request = 0;       // bytes (Device Control)
  int read_completion_boundary = 0;  // 64 or 128 (Link Control)
  bool relaxed_ordering = false;  // Device Control: enabled
  int max_gen = 0, max_width = 0;          // Link Capabilities
  int current_gen = 0, current_width = 0;  // Link Status
};

// Walks the capability list of a configuration-space dump (as read from
// /sys/bus/pci/devices/ADDR/config: 64 B unprivileged, 256 B or 4 KiB as root).
// nullopt when the dump is too short or has no PCI Express capability.
std::optional<pcie_capability> parse_pcie_capability(std::span<const std::uint8_t> config);

// Fraction of the raw rate that carries data, for TLPs of `payload` bytes
// with `overhead` bytes each.
double tlp_efficiency(int payload, int overhead);
inline constexpr int write_tlp_overhead = 24;       // framing 4 + 4DW header 16 + LCRC 4
inline constexpr int completion_tlp_overhead = 20;  // framing 4 + 3DW header 12 + LCRC 4

struct link_ceilings {
  double raw_gbps = 0;          // per direction after line coding
  double device_writes_gbps = 0;  // device -> host (d2h)
  double device_reads_gbps = 0;   // host -> device (h2d), whole-MPS completions
  double device_reads_rcb_gbps = 0;  // h2d if the host splits completions at the RCB
};
link_ceilings ceilings_for(double raw_gbps, const pcie_capability& cap);

}  // namespace xfer
