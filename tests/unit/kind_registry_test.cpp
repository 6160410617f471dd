// The one registry of host memory kinds: every list a command reads is the
// registry's, and what it says of a kind is what the kind's resource does.
#include <gtest/gtest.h>

#include <set>
#include <xfer/backends/registry.hpp>
#include <xfer/mem/kind_registry.hpp>
#include <xfer/mem/kinds.hpp>

#include "strategies.hpp"

using namespace xfer;

TEST(KindRegistry, NamesAreUniqueAndEachHasASummary) {
  std::set<std::string_view> seen;
  for (const auto& k : mem::host_kinds()) {
    EXPECT_TRUE(seen.insert(k.name).second) << k.name;
    EXPECT_FALSE(k.summary.empty()) << k.name;
    EXPECT_EQ(mem::find_host_kind(k.name), &k);
  }
  EXPECT_EQ(mem::find_host_kind("granite"), nullptr);
}

TEST(KindRegistry, ThePlainKindsAreTheRegistrysAndTheirResourcesDeclareWhatItSays) {
  EXPECT_EQ(mem::host_kind_names(), mem::kind_names_of(mem::kind_maker::plain));
  EXPECT_EQ(mem::overview_kind_names(), (std::vector<std::string>{"pageable", "pageable-unaligned"}));
  const auto backends = make_backends({});
  for (const auto& k : mem::host_kinds()) {
    if (k.maker != mem::kind_maker::plain) continue;
    // Swept kinds come from mem::make_host_kind, the rest from the allocator study.
    const std::unique_ptr<mem::host_resource> r =
        k.roles.sweep ? mem::make_host_kind(k.name) : alloc_study::make_strategy(std::string(k.name), backends).upstream;
    ASSERT_NE(r, nullptr) << k.name;
    EXPECT_EQ(r->kind(), k.name);
    ASSERT_TRUE(k.props) << k.name;
    const auto p = r->props();
    EXPECT_EQ(p.host_accessible, k.props->host_accessible) << k.name;
    EXPECT_EQ(p.device_accessible, k.props->device_accessible) << k.name;
    EXPECT_EQ(p.pinned, k.props->pinned) << k.name;
    EXPECT_EQ(p.write_combined, k.props->write_combined) << k.name;
  }
}

TEST(KindRegistry, TheStudiesDefaultsComeFromItInReportOrder) {
  EXPECT_EQ(alloc_study::default_strategy_names(),
            (std::vector<std::string>{"pageable", "aligned", "over-aligned", "mmap", "huge", "numa", "registered", "pinned",
                                      "pinned-fast", "pool:aligned", "pool:pinned"}));
  // Each kind a device API makes is listed under its maker, never as plain memory.
  for (const auto& name : {"registered", "pinned", "pinned-wc", "mapped", "managed", "pinned-fast"})
    EXPECT_EQ(mem::find_host_kind(name)->maker, mem::kind_maker::cuda) << name;
}
