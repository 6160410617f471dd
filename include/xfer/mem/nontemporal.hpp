#pragma once
// Copies and fills that bypass the cache: non-temporal (streaming) stores,
// which write-combined memory is built for, and streaming loads (MOVNTDQA),
// the one way to read write-combined memory at more than a trickle.
//
// Every function is correct for any size (0 included) and any alignment of
// either pointer: the unaligned head and tail go through memcpy/memset, the
// aligned middle through the vector instructions. Non-x86 builds (and CPUs
// without the instructions) fall back to memcpy/memset, and say so through
// the *_isa functions, so a report never calls a plain copy "non-temporal".
#include <cstddef>
#include <string_view>

namespace xfer::mem {

// The instruction set a non-temporal routine uses.
enum class nt_isa {
  portable,  // memcpy/memset: no streaming instruction available
  sse2,      // 16-byte MOVNTDQ stores (every x86-64 CPU)
  avx,       // 32-byte VMOVNTDQ stores
  sse41,     // 16-byte MOVNTDQA loads (stream_load_copy only)
};

std::string_view to_string(nt_isa isa);
bool isa_supported(nt_isa isa);

// The widest streaming-store ISA this CPU has (avx, sse2 or portable).
nt_isa best_store_isa();
// sse41 where MOVNTDQA is available, else portable.
nt_isa stream_load_isa();

// dst <- src with streaming stores, then SFENCE, so the data is globally
// visible (to another thread or a device) once the call returns.
void nontemporal_copy(void* dst, const void* src, std::size_t bytes);
void nontemporal_copy(nt_isa isa, void* dst, const void* src, std::size_t bytes);  // isa: portable/sse2/avx

// dst <- `value` repeated, with streaming stores, then SFENCE.
void nontemporal_fill(void* dst, unsigned char value, std::size_t bytes);
void nontemporal_fill(nt_isa isa, void* dst, unsigned char value, std::size_t bytes);

// dst <- src, loading with MOVNTDQA a whole cache line at a time and storing
// normally. On write-back memory the hint is ignored (an ordinary load); on
// write-combined memory it fills a streaming buffer per line instead of one
// uncached bus read per load.
void stream_load_copy(void* dst, const void* src, std::size_t bytes);
void stream_load_copy(nt_isa isa, void* dst, const void* src, std::size_t bytes);  // isa: portable/sse41

// Hints that the lines of [p, p + bytes) move from this core's caches to the
// shared last-level cache (x86 CLDEMOTE), for another agent (a core, a DMA
// engine) about to read them. Only a hint: the data is unchanged, and CPUs
// without the instruction (and non-x86 builds) do nothing.
void demote_to_shared_cache(const void* p, std::size_t bytes) noexcept;

}  // namespace xfer::mem
