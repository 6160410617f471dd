#include <algorithm>
#include <cstring>
#include <fmt/format.h>
#include <xfer/core/errors.hpp>
#include <xfer/cpu/cpu_ops.hpp>

namespace xfer::cpu {

std::string_view to_string(op o) {
  switch (o) {
    case op::write: return "write";
    case op::read: return "read";
    case op::fill: return "fill";
  }
  return "?";
}

std::string_view to_string(method m) {
  switch (m) {
    case method::memcpy: return "memcpy";
    case method::nontemporal: return "nontemporal";
    case method::ntload: return "ntload";
  }
  return "?";
}

const std::vector<op>& all_ops() {
  static const std::vector<op> all{op::write, op::read, op::fill};
  return all;
}

const std::vector<method>& all_methods() {
  static const std::vector<method> all{method::memcpy, method::nontemporal, method::ntload};
  return all;
}

op parse_op(std::string_view name) {
  for (op o : all_ops())
    if (name == to_string(o)) return o;
  throw usage_error(fmt::format("unknown op '{}' (known: write, read, fill)", name));
}

method parse_method(std::string_view name) {
  for (method m : all_methods())
    if (name == to_string(m)) return m;
  throw usage_error(fmt::format("unknown method '{}' (known: memcpy, nontemporal, ntload)", name));
}

bool applies(op o, method m) { return m != method::ntload || o == op::read; }

std::string_view implementation(op o, method m) {
  switch (m) {
    case method::memcpy: return o == op::fill ? "memset" : "memcpy";
    case method::nontemporal: return to_string(best_store_isa());
    case method::ntload: return to_string(stream_load_isa());
  }
  return "?";
}

std::uint64_t traffic_bytes(op o, std::uint64_t bytes) { return o == op::fill ? bytes : 2 * bytes; }

byte_range split_range(std::size_t bytes, unsigned parts, unsigned index, const void* dst) {
  const auto base = reinterpret_cast<std::uintptr_t>(dst);
  // The first offset at or after `at` where dst + offset starts a line.
  auto cut = [&](std::size_t at) -> std::size_t {
    if (at == 0) return 0;
    if (at >= bytes) return bytes;
    const std::size_t past = (base + at) % 64;
    const std::size_t c = past ? at + (64 - past) : at;
    return std::min(c, bytes);
  };
  // bytes * index / parts without overflow for any size_t.
  auto share = [&](unsigned i) -> std::size_t {
    if (i >= parts) return bytes;
    return bytes / parts * i + bytes % parts * i / parts;
  };
  return {cut(share(index)), cut(share(index + 1))};
}

void run_chunk(op o, method m, const op_buffers& b, std::size_t offset, std::size_t n, unsigned char fill_value) {
  std::byte* kind = b.kind + offset;
  switch (o) {
    case op::write:
      if (m == method::nontemporal)
        nontemporal_copy(kind, b.regular + offset, n);
      else
        std::memcpy(kind, b.regular + offset, n);
      return;
    case op::read:
      if (m == method::nontemporal)
        nontemporal_copy(b.regular + offset, kind, n);
      else if (m == method::ntload)
        stream_load_copy(b.regular + offset, kind, n);
      else
        std::memcpy(b.regular + offset, kind, n);
      return;
    case op::fill:
      if (m == method::nontemporal)
        nontemporal_fill(kind, fill_value, n);
      else
        std::memset(kind, fill_value, n);
      return;
  }
}

void run_op(op o, method m, const op_buffers& b, unsigned char fill_value, thread_team& team, std::size_t reps) {
  // The destination decides where the cuts go: it is the side streaming stores touch.
  const void* dst = o == op::read ? static_cast<const void*>(b.regular) : static_cast<const void*>(b.kind);
  const unsigned parts = team.size();
  team.run([&](unsigned i) {
    const byte_range r = split_range(b.bytes, parts, i, dst);
    if (r.end <= r.begin) return;
    for (std::size_t k = 0; k < reps; ++k) run_chunk(o, m, b, r.begin, r.end - r.begin, fill_value);
  });
}

}  // namespace xfer::cpu
