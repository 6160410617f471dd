// The result file's catalogue (core/catalogue.hpp): what the report selects
// by, so each trait a finding uses is checked where core writes it.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <xfer/core/catalogue.hpp>
#include <xfer/core/describe.hpp>

#include "host/host_backend.hpp"

using namespace xfer;

namespace {
nlohmann::json as_json(const value& v) { return nlohmann::json::parse(v.dump()); }
}  // namespace

TEST(Catalogue, KindsCarryTheTraitsTheReportSelectsBy) {
  const auto kinds = as_json(make_catalogue())["host_memory"];
  EXPECT_TRUE(kinds["pageable"]["program_default"].get<bool>());
  EXPECT_FALSE(kinds["pageable"]["dma_direct"].get<bool>());
  EXPECT_EQ(kinds["pageable-unaligned"]["offset_of"], "pageable");
  EXPECT_FALSE(kinds["pageable-unaligned"]["program_default"].get<bool>());
  EXPECT_TRUE(kinds["pinned"]["pinned"].get<bool>());
  EXPECT_TRUE(kinds["pinned"]["api_pinned"].get<bool>());
  EXPECT_TRUE(kinds["registered"]["dma_direct"].get<bool>());
  EXPECT_FALSE(kinds["registered"]["api_pinned"].get<bool>()) << "registered in place, not the API's allocation";
  EXPECT_TRUE(kinds["pinned-wc"]["write_combined"].get<bool>());
  EXPECT_TRUE(kinds["alloc-host-ptr"]["pinned"].is_null()) << "the OpenCL driver decides";
  EXPECT_TRUE(kinds["alloc-host-ptr"]["api_pinned"].get<bool>());
  EXPECT_TRUE(kinds["device-local-host-visible"]["device_memory"].get<bool>());
  EXPECT_FALSE(kinds["managed"]["dma_direct"].get<bool>());
  EXPECT_EQ(kinds["pinned"]["maker"], "cuda");
}

TEST(Catalogue, RoutesComeFromTheBackendsAddedWithFamilyAndRole) {
  run_context c = make_context(system_info{}, {"xferbench"});
  EXPECT_TRUE(as_json(c.catalogue)["routes"].empty()) << "no backend added yet";
  host::host_backend b(1, {});
  add_backend(c, b);
  add_backend(c, b);  // twice: each route once
  const auto routes = as_json(c.catalogue)["routes"];
  ASSERT_TRUE(routes.contains("memcpy")) << routes.dump();
  EXPECT_EQ(routes["memcpy"]["family"], "copy");
  EXPECT_EQ(routes["memcpy"]["role"], "");
  EXPECT_FALSE(routes["memcpy"]["directions"].empty());
  for (const auto& [name, r] : routes.items()) EXPECT_FALSE(r["description"].get<std::string>().empty()) << name;
}

TEST(Catalogue, SharedRoutesHaveTheirRoles) {
  EXPECT_STREQ(to_string(route_kind::copy_sync.role()), "api-copy-blocking");
  EXPECT_STREQ(to_string(route_kind::copy_async.role()), "api-copy-queued");
  EXPECT_STREQ(to_string(route_kind::staged.role()), "staged-copier");
  EXPECT_EQ(route_kind::kernel_host.role(), route_role::none);
  // Declared again with another role: one name has one meaning.
  EXPECT_THROW(route_kind::declare("copy-sync", route_family::copy, route_role::driver_batch), std::logic_error);
}
