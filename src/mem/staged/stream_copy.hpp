#pragma once
// memcpy with non-temporal stores, for the copier's pieces: a piece is
// written once and not read again by this CPU (the copy engine reads a
// staging buffer; the caller's buffer is far larger than the caches), so
// ordinary stores would first read every destination line into the cache
// (a third stream of memory traffic beside the read and the write) and
// evict the source lines still to be read.
#include <cstddef>

namespace xfer::mem::detail {

// Copies n bytes; the stores are visible to other agents (a DMA engine, the
// thread that queues it) when it returns. memcpy where there are no
// non-temporal stores (not x86).
void stream_copy(void* dst, const void* src, std::size_t n) noexcept;

}  // namespace xfer::mem::detail
