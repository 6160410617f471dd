#include <xfer/core/pcie_link.hpp>

namespace xfer {
namespace {

std::uint16_t u16(std::span<const std::uint8_t> c, std::size_t at) {
  return static_cast<std::uint16_t>(c[at] | (c[at + 1] << 8));
}
std::uint32_t u32(std::span<const std::uint8_t> c, std::size_t at) {
  return static_cast<std::uint32_t>(u16(c, at)) | (static_cast<std::uint32_t>(u16(c, at + 2)) << 16);
}

// Link speed codes index the Supported Link Speeds vector: 1 = 2.5 GT/s
// (Gen1) ... 6 = 64 GT/s (Gen6); the code is the generation.
int generation(unsigned code) { return code >= 1 && code <= 6 ? static_cast<int>(code) : 0; }

}  // namespace

std::optional<pcie_capability> parse_pcie_capability(std::span<const std::uint8_t> c) {
  constexpr std::size_t status = 0x06, cap_pointer = 0x34;
  if (c.size() < 0x40 || !(u16(c, status) & 0x10)) return std::nullopt;  // no capability list
  std::size_t at = c[cap_pointer] & 0xfc;
  // A list longer than the space it lives in is corrupt: the bound stops a loop.
  for (int hops = 0; at >= 0x40 && at + 0x14 <= c.size() && hops < 48; ++hops) {
    if (c[at] == 0x10) {
      const std::uint32_t dev_cap = u32(c, at + 0x04);
      const std::uint16_t dev_ctl = u16(c, at + 0x08);
      const std::uint32_t link_cap = u32(c, at + 0x0c);
      const std::uint16_t link_ctl = u16(c, at + 0x10);
      const std::uint16_t link_sta = u16(c, at + 0x12);
      pcie_capability p;
      p.max_payload_supported = 128 << (dev_cap & 0x7);
      p.max_payload = 128 << ((dev_ctl >> 5) & 0x7);
      p.relaxed_ordering = dev_ctl & 0x10;
      p.max_read_request = 128 << ((dev_ctl >> 12) & 0x7);
      p.read_completion_boundary = link_ctl & 0x08 ? 128 : 64;
      p.max_gen = generation(link_cap & 0xf);
      p.max_width = static_cast<int>((link_cap >> 4) & 0x3f);
      p.current_gen = generation(link_sta & 0xf);
      p.current_width = (link_sta >> 4) & 0x3f;
      return p;
    }
    at = c[at + 1] & 0xfc;
  }
  return std::nullopt;
}

double tlp_efficiency(int payload, int overhead) {
  return payload > 0 ? static_cast<double>(payload) / (payload + overhead) : 0.0;
}

link_ceilings ceilings_for(double raw_gbps, const pcie_capability& cap) {
  link_ceilings l;
  l.raw_gbps = raw_gbps;
  l.device_writes_gbps = raw_gbps * tlp_efficiency(cap.max_payload, write_tlp_overhead);
  l.device_reads_gbps = raw_gbps * tlp_efficiency(cap.max_payload, completion_tlp_overhead);
  l.device_reads_rcb_gbps = raw_gbps * tlp_efficiency(cap.read_completion_boundary, completion_tlp_overhead);
  return l;
}

}  // namespace xfer
