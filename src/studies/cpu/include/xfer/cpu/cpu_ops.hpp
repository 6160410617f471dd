#pragma once
// What the CPU does to a memory kind: write into it (copy from a regular
// array), read from it (copy into a regular array), or fill it; each with a
// method, split over a team of threads.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>
#include <xfer/mem/nontemporal.hpp>
#include <xfer/core/thread_team.hpp>

namespace xfer::cpu {

// The streaming copies are libxfer's (the staged copier has them too).
using mem::best_store_isa;
using mem::isa_supported;
using mem::nontemporal_copy;
using mem::nontemporal_fill;
using mem::nt_isa;
using mem::stream_load_copy;
using mem::stream_load_isa;
using mem::to_string;

enum class op { write, read, fill };
enum class method {
  memcpy,       // the C library's memcpy/memset
  nontemporal,  // streaming stores into the destination
  ntload,       // streaming loads from the source (read only)
};

std::string_view to_string(op o);
std::string_view to_string(method m);
// Throw usage_error naming the known values.
op parse_op(std::string_view name);
method parse_method(std::string_view name);
const std::vector<op>& all_ops();
const std::vector<method>& all_methods();

// Whether `m` means anything for `o`: streaming loads only help reading the kind.
bool applies(op o, method m);
// The instructions `m` uses for `o` on this CPU ("memcpy", "avx", "sse4.1", "portable").
std::string_view implementation(op o, method m);
// Bytes each run moves through the memory system, counting reads and writes:
// 2x for the copies, 1x for fill (the 2N/t convention).
std::uint64_t traffic_bytes(op o, std::uint64_t bytes);

// [begin, end) of the buffer that part `index` of `parts` handles. Cuts fall
// on 64-byte boundaries of `dst` so no two threads share a destination line
// (which would make streaming stores flush half-filled buffers).
struct byte_range {
  std::size_t begin = 0, end = 0;
};
byte_range split_range(std::size_t bytes, unsigned parts, unsigned index, const void* dst);

struct op_buffers {
  std::byte* kind = nullptr;     // the memory under study
  std::byte* regular = nullptr;  // the regular array on the other side (unused for fill)
  std::size_t bytes = 0;
};

// One op over [offset, offset + n) on the calling thread.
void run_chunk(op o, method m, const op_buffers& b, std::size_t offset, std::size_t n, unsigned char fill_value);
// `reps` passes of the op over the whole buffer, split among the team's
// threads (each repeats its own part; the parts do not depend on each other).
void run_op(op o, method m, const op_buffers& b, unsigned char fill_value, thread_team& team, std::size_t reps = 1);

}  // namespace xfer::cpu
