#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <xfer/mem/nontemporal.hpp>

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#define XFER_CPU_X86 1
#include <immintrin.h>
#else
#define XFER_CPU_X86 0
#endif

namespace xfer::mem {
namespace {

using byte = unsigned char;

// Bytes from p up to the next multiple of `align` (0 when already there).
inline std::size_t to_boundary(const void* p, std::size_t align) {
  return (align - reinterpret_cast<std::uintptr_t>(p) % align) % align;
}

// Below this, streaming buys nothing (it cannot fill a line) and the fence
// costs more than the copy.
constexpr std::size_t min_stream_bytes = 64;

#if XFER_CPU_X86

// SSE2 is part of x86-64, so these need no target attribute.
void copy_sse2(byte* d, const byte* s, std::size_t n) {
  const std::size_t head = to_boundary(d, 16);
  std::memcpy(d, s, head);
  d += head, s += head, n -= head;
  for (; n >= 64; d += 64, s += 64, n -= 64) {
    // Four loads before four stores: one full line per iteration, so each
    // write-combining buffer is filled completely and flushed as one burst.
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 32));
    const __m128i e = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(d), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + 48), e);
  }
  for (; n >= 16; d += 16, s += 16, n -= 16)
    _mm_stream_si128(reinterpret_cast<__m128i*>(d), _mm_loadu_si128(reinterpret_cast<const __m128i*>(s)));
  std::memcpy(d, s, n);
  // Streaming stores are weakly ordered: without the fence a later "ready"
  // store could become visible before the data.
  _mm_sfence();
}

void fill_sse2(byte* d, byte value, std::size_t n) {
  const std::size_t head = to_boundary(d, 16);
  std::memset(d, value, head);
  d += head, n -= head;
  const __m128i v = _mm_set1_epi8(static_cast<char>(value));
  for (; n >= 64; d += 64, n -= 64) {
    _mm_stream_si128(reinterpret_cast<__m128i*>(d), v);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + 16), v);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + 32), v);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + 48), v);
  }
  for (; n >= 16; d += 16, n -= 16) _mm_stream_si128(reinterpret_cast<__m128i*>(d), v);
  std::memset(d, value, n);
  _mm_sfence();
}

__attribute__((target("avx"))) void copy_avx(byte* d, const byte* s, std::size_t n) {
  const std::size_t head = to_boundary(d, 32);
  std::memcpy(d, s, head);
  d += head, s += head, n -= head;
  for (; n >= 128; d += 128, s += 128, n -= 128) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s));
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + 32));
    const __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + 64));
    const __m256i e = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + 96));
    _mm256_stream_si256(reinterpret_cast<__m256i*>(d), a);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(d + 32), b);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(d + 64), c);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(d + 96), e);
  }
  for (; n >= 32; d += 32, s += 32, n -= 32)
    _mm256_stream_si256(reinterpret_cast<__m256i*>(d), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s)));
  std::memcpy(d, s, n);
  _mm_sfence();
}

__attribute__((target("avx"))) void fill_avx(byte* d, byte value, std::size_t n) {
  const std::size_t head = to_boundary(d, 32);
  std::memset(d, value, head);
  d += head, n -= head;
  const __m256i v = _mm256_set1_epi8(static_cast<char>(value));
  for (; n >= 128; d += 128, n -= 128) {
    _mm256_stream_si256(reinterpret_cast<__m256i*>(d), v);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(d + 32), v);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(d + 64), v);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(d + 96), v);
  }
  for (; n >= 32; d += 32, n -= 32) _mm256_stream_si256(reinterpret_cast<__m256i*>(d), v);
  std::memset(d, value, n);
  _mm_sfence();
}

__attribute__((target("sse4.1"))) inline __m128i stream_load(const byte* p) {
  // MOVNTDQA takes a non-const pointer though it only reads.
  return _mm_stream_load_si128(reinterpret_cast<__m128i*>(const_cast<byte*>(p)));
}

__attribute__((target("sse4.1"))) void stream_load_sse41(byte* d, const byte* s, std::size_t n) {
  // A streaming load need not see this core's own stores still sitting in a
  // write-combining buffer: drain them first.
  _mm_mfence();
  // Align the source to a line, so each group of four loads is one line: the
  // streaming buffer is filled by the first and consumed by the other three.
  const std::size_t head = to_boundary(s, 64);
  std::memcpy(d, s, head);
  d += head, s += head, n -= head;
  for (; n >= 64; d += 64, s += 64, n -= 64) {
    const __m128i a = stream_load(s), b = stream_load(s + 16), c = stream_load(s + 32), e = stream_load(s + 48);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d), a);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + 16), b);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + 32), c);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + 48), e);
  }
  for (; n >= 16; d += 16, s += 16, n -= 16) _mm_storeu_si128(reinterpret_cast<__m128i*>(d), stream_load(s));
  std::memcpy(d, s, n);
}

#endif  // XFER_CPU_X86

void require(nt_isa isa, std::initializer_list<nt_isa> allowed, const char* what) {
  for (nt_isa a : allowed)
    if (a == isa) {
      if (!isa_supported(isa))
        throw std::invalid_argument(std::string(what) + ": this CPU lacks " + std::string(to_string(isa)));
      return;
    }
  throw std::invalid_argument(std::string(what) + " has no " + std::string(to_string(isa)) + " variant");
}

}  // namespace

std::string_view to_string(nt_isa isa) {
  switch (isa) {
    case nt_isa::portable: return "portable";
    case nt_isa::sse2: return "sse2";
    case nt_isa::avx: return "avx";
    case nt_isa::sse41: return "sse4.1";
  }
  return "?";
}

bool isa_supported(nt_isa isa) {
  switch (isa) {
    case nt_isa::portable: return true;
#if XFER_CPU_X86
    case nt_isa::sse2: return true;
    // __builtin_cpu_supports("avx") also checks that the OS saves the YMM state.
    case nt_isa::avx: return __builtin_cpu_supports("avx");
    case nt_isa::sse41: return __builtin_cpu_supports("sse4.1");
#else
    default: return false;
#endif
  }
  return false;
}

nt_isa best_store_isa() {
  static const nt_isa best = isa_supported(nt_isa::avx)    ? nt_isa::avx
                             : isa_supported(nt_isa::sse2) ? nt_isa::sse2
                                                           : nt_isa::portable;
  return best;
}

nt_isa stream_load_isa() {
  static const nt_isa isa = isa_supported(nt_isa::sse41) ? nt_isa::sse41 : nt_isa::portable;
  return isa;
}

void nontemporal_copy(void* dst, const void* src, std::size_t bytes) {
  nontemporal_copy(best_store_isa(), dst, src, bytes);
}

void nontemporal_copy(nt_isa isa, void* dst, const void* src, std::size_t bytes) {
  require(isa, {nt_isa::portable, nt_isa::sse2, nt_isa::avx}, "nontemporal_copy");
  auto* d = static_cast<byte*>(dst);
  const auto* s = static_cast<const byte*>(src);
  if (bytes < min_stream_bytes || isa == nt_isa::portable) {
    if (bytes) std::memcpy(d, s, bytes);  // memcpy(nullptr, nullptr, 0) is undefined
    return;
  }
#if XFER_CPU_X86
  if (isa == nt_isa::avx)
    copy_avx(d, s, bytes);
  else
    copy_sse2(d, s, bytes);
#endif
}

void nontemporal_fill(void* dst, unsigned char value, std::size_t bytes) {
  nontemporal_fill(best_store_isa(), dst, value, bytes);
}

void nontemporal_fill(nt_isa isa, void* dst, unsigned char value, std::size_t bytes) {
  require(isa, {nt_isa::portable, nt_isa::sse2, nt_isa::avx}, "nontemporal_fill");
  auto* d = static_cast<byte*>(dst);
  if (bytes < min_stream_bytes || isa == nt_isa::portable) {
    if (bytes) std::memset(d, value, bytes);
    return;
  }
#if XFER_CPU_X86
  if (isa == nt_isa::avx)
    fill_avx(d, value, bytes);
  else
    fill_sse2(d, value, bytes);
#endif
}

void stream_load_copy(void* dst, const void* src, std::size_t bytes) {
  stream_load_copy(stream_load_isa(), dst, src, bytes);
}

void stream_load_copy(nt_isa isa, void* dst, const void* src, std::size_t bytes) {
  require(isa, {nt_isa::portable, nt_isa::sse41}, "stream_load_copy");
  auto* d = static_cast<byte*>(dst);
  const auto* s = static_cast<const byte*>(src);
  if (bytes < min_stream_bytes || isa == nt_isa::portable) {
    if (bytes) std::memcpy(d, s, bytes);
    return;
  }
#if XFER_CPU_X86
  stream_load_sse41(d, s, bytes);
#endif
}

void demote_to_shared_cache(const void* p, std::size_t bytes) noexcept {
#if XFER_CPU_X86
  // CLDEMOTE (0F 1C /0) by its bytes: assemblers before 2019 lack the
  // mnemonic, and CPUs without it execute the encoding as a NOP.
  const auto first = reinterpret_cast<std::uintptr_t>(p) & ~std::uintptr_t{63};
  const auto end = reinterpret_cast<std::uintptr_t>(p) + bytes;
  for (std::uintptr_t line = first; line < end; line += 64)
    asm volatile(".byte 0x0f, 0x1c, 0x00" ::"a"(line) : "memory");
#else
  (void)p, (void)bytes;
#endif
}

}  // namespace xfer::mem
