// The streaming copies and fills must be exact at every size and every
// misalignment of either pointer, and must not write outside [dst, dst + n).
#include <gtest/gtest.h>

#include <cstring>
#include <stdexcept>
#include <vector>
#include <xfer/core/pattern.hpp>
#include <xfer/mem/nontemporal.hpp>

namespace {

using xfer::mem::nt_isa;

const std::size_t sizes[] = {0, 1, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 4095, 4096, (1u << 20) + 3};
const std::size_t src_offsets[] = {0, 1, 7, 16, 33};
const std::size_t dst_offsets[] = {0, 1, 5, 16, 31, 48};
constexpr std::size_t guard = 64;
constexpr unsigned char guard_byte = 0xEE;

// A destination with guard bytes on both sides, starting `offset` past a 64-byte boundary.
struct guarded {
  std::vector<unsigned char> storage;
  unsigned char* dst;
  std::size_t n;
  guarded(std::size_t bytes, std::size_t offset) : storage(bytes + 2 * guard + 128, guard_byte), n(bytes) {
    auto base = reinterpret_cast<std::uintptr_t>(storage.data()) + guard;
    base = (base + 63) & ~std::uintptr_t{63};
    dst = reinterpret_cast<unsigned char*>(base + offset);
  }
  void expect_guards_intact() const {
    for (const unsigned char* p = storage.data(); p < dst; ++p) ASSERT_EQ(*p, guard_byte) << "before dst";
    const unsigned char* end = storage.data() + storage.size();
    for (const unsigned char* p = dst + n; p < end; ++p) ASSERT_EQ(*p, guard_byte) << "after dst";
  }
};

std::vector<nt_isa> store_isas() {
  std::vector<nt_isa> v;
  for (nt_isa i : {nt_isa::portable, nt_isa::sse2, nt_isa::avx})
    if (xfer::mem::isa_supported(i)) v.push_back(i);
  return v;
}

std::vector<nt_isa> load_isas() {
  std::vector<nt_isa> v{nt_isa::portable};
  if (xfer::mem::isa_supported(nt_isa::sse41)) v.push_back(nt_isa::sse41);
  return v;
}

template <class Copy>
void check_copies(Copy copy, const char* name) {
  for (std::size_t n : sizes)
    for (std::size_t so : src_offsets) {
      std::vector<unsigned char> src_storage(n + 128);
      unsigned char* src = src_storage.data() + so;
      xfer::fill_pattern(src, n, n + so);
      for (std::size_t doff : dst_offsets) {
        SCOPED_TRACE(testing::Message() << name << " bytes " << n << " src+" << so << " dst+" << doff);
        guarded g(n, doff);
        copy(g.dst, src, n);
        if (n) {
          EXPECT_NO_THROW(xfer::check_pattern(g.dst, n, n + so, name));
        }
        g.expect_guards_intact();
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
}

TEST(CpuNontemporal, CopyIsExactAtOddSizesAndMisalignedStarts) {
  for (nt_isa isa : store_isas())
    check_copies([isa](void* d, const void* s, std::size_t n) { xfer::mem::nontemporal_copy(isa, d, s, n); },
                 std::string(to_string(isa)).c_str());
  check_copies([](void* d, const void* s, std::size_t n) { xfer::mem::nontemporal_copy(d, s, n); }, "best");
}

TEST(CpuNontemporal, StreamLoadCopyIsExactAtOddSizesAndMisalignedStarts) {
  for (nt_isa isa : load_isas())
    check_copies([isa](void* d, const void* s, std::size_t n) { xfer::mem::stream_load_copy(isa, d, s, n); },
                 std::string(to_string(isa)).c_str());
  check_copies([](void* d, const void* s, std::size_t n) { xfer::mem::stream_load_copy(d, s, n); }, "best");
}

TEST(CpuNontemporal, FillIsExactAtOddSizesAndMisalignedStarts) {
  for (nt_isa isa : store_isas())
    for (std::size_t n : sizes)
      for (std::size_t doff : dst_offsets) {
        SCOPED_TRACE(testing::Message() << to_string(isa) << " bytes " << n << " dst+" << doff);
        guarded g(n, doff);
        xfer::mem::nontemporal_fill(isa, g.dst, 0x3C, n);
        for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(g.dst[i], 0x3C) << "byte " << i;
        g.expect_guards_intact();
        if (::testing::Test::HasFatalFailure()) return;
      }
}

TEST(CpuNontemporal, NullPointersWithZeroBytesAreFine) {
  xfer::mem::nontemporal_copy(nullptr, nullptr, 0);
  xfer::mem::nontemporal_fill(nullptr, 1, 0);
  xfer::mem::stream_load_copy(nullptr, nullptr, 0);
}

TEST(CpuNontemporal, ReportsWhatItUses) {
  EXPECT_TRUE(xfer::mem::isa_supported(nt_isa::portable));
  EXPECT_TRUE(xfer::mem::isa_supported(xfer::mem::best_store_isa()));
  EXPECT_NE(xfer::mem::best_store_isa(), nt_isa::sse41);
  const nt_isa load = xfer::mem::stream_load_isa();
  EXPECT_TRUE(load == nt_isa::sse41 || load == nt_isa::portable);
#if defined(__x86_64__)
  EXPECT_NE(xfer::mem::best_store_isa(), nt_isa::portable) << "every x86-64 CPU has SSE2 streaming stores";
#endif
  EXPECT_EQ(to_string(nt_isa::sse41), "sse4.1");
}

TEST(CpuNontemporal, RejectsAVariantTheRoutineDoesNotHave) {
  unsigned char a[64]{}, b[64]{};
  EXPECT_THROW(xfer::mem::nontemporal_copy(nt_isa::sse41, a, b, 64), std::invalid_argument);
  EXPECT_THROW(xfer::mem::stream_load_copy(nt_isa::avx, a, b, 64), std::invalid_argument);
  if (!xfer::mem::isa_supported(nt_isa::avx)) {
    EXPECT_THROW(xfer::mem::nontemporal_copy(nt_isa::avx, a, b, 64), std::invalid_argument);
  }
}

}  // namespace
