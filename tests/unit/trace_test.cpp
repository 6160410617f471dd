// xferbench trace's reading, billing and pricing, on captures written as
// libxfer_cupti.so writes them (tests/unit/data/trace/).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <xfer/trace/bill.hpp>
#include <xfer/trace/trace_file.hpp>

namespace {

using namespace xfer::trace;
const std::string data = std::string(XFER_TEST_DATA) + "/trace/";

TEST(TraceCapture, JoinsEachCopyWithTheCallThatAskedForIt) {
  const auto p = read_capture(data + "two-copies/cupti-100.jsonl");
  EXPECT_EQ(p.pid, 100);
  EXPECT_EQ(p.argv, (std::vector<std::string>{"./app", "--steps", "1"}));
  EXPECT_TRUE(p.complete);
  EXPECT_EQ(p.dropped, 2u);
  ASSERT_EQ(p.transfers.size(), 3u);
  const transfer& h2d = p.transfers[0];
  // Through the runtime: the runtime's call (its driver call is inside it), its time on the CPU.
  EXPECT_EQ(h2d.call, "cudaMemcpy");
  EXPECT_EQ(h2d.direction, "h2d");
  EXPECT_EQ(h2d.host_memory, "pageable");
  EXPECT_FALSE(h2d.async);
  ASSERT_TRUE(h2d.host_s);
  EXPECT_NEAR(*h2d.host_s, 2.1e-3, 1e-12);
  EXPECT_NEAR(h2d.device_s(), 1.9e-3, 1e-12);
  EXPECT_NEAR(h2d.cost_s(), 2.1e-3, 1e-12);  // a synchronous call holds the CPU throughout
  // Two kernels overlapping each other count once; device 1's kernel does not count.
  EXPECT_NEAR(h2d.overlap_s, 0.6e-3, 1e-12);

  const transfer& d2h = p.transfers[1];
  EXPECT_EQ(d2h.call, "cuMemcpyDtoHAsync");  // the driver's, called directly
  EXPECT_EQ(d2h.host_memory, "pinned");         // the destination is the host side
  EXPECT_TRUE(d2h.async);
  EXPECT_NEAR(d2h.cost_s(), 10e-6, 1e-12);  // asynchronous: its time on the device
  EXPECT_EQ(d2h.overlap_s, 0.0);

  const transfer& set = p.transfers[2];
  EXPECT_EQ(set.op, "memset");
  EXPECT_EQ(set.direction, "set");
  EXPECT_EQ(set.call, "");  // no record of its call came
  EXPECT_FALSE(set.host_s);
}

// Lines as libxfer_cupti.so wrote them on an H100 with CUDA 13 (an excerpt of the
// trace example's capture): the copy carries the runtime call's correlation id
// and a runtime correlation id of 0.
TEST(TraceCapture, ARealCaptureJoinsEveryCopyWithItsRuntimeCall) {
  const process_capture p = read_capture(data + "h100-cuda13/cupti-2234.jsonl");
  EXPECT_TRUE(p.complete);
  ASSERT_EQ(p.transfers.size(), 4u);
  for (const transfer& t : p.transfers) {
    EXPECT_EQ(t.call, "cudaMemcpy");
    ASSERT_TRUE(t.host_s);
    EXPECT_GT(*t.host_s, 0.0);
    EXPECT_EQ(t.host_memory, "pageable");
    EXPECT_FALSE(t.async);
  }
  EXPECT_EQ(p.transfers[0].direction, "h2d");
  EXPECT_EQ(p.transfers[0].bytes, 16u << 20);
  EXPECT_NEAR(*p.transfers[0].host_s, (1796583720239309391 - 1796583720237081281) * 1e-9, 1e-12);
  EXPECT_EQ(p.transfers[3].direction, "d2h");
  EXPECT_EQ(p.transfers[3].bytes, 64u << 10);
  EXPECT_EQ(p.transfers[0].overlap_s, 0.0);  // the kernels ran after each upload, not beside it
}

TEST(TraceCapture, ACallIsNamedAsTheProgramWroteIt) {
  EXPECT_EQ(call_name("cudaMemcpy_v3020"), "cudaMemcpy");
  EXPECT_EQ(call_name("cuMemcpyHtoD_v2"), "cuMemcpyHtoD");
  EXPECT_EQ(call_name("cudaMemcpy"), "cudaMemcpy");
  EXPECT_EQ(call_name("cudaMemcpy_v"), "cudaMemcpy_v");        // no version digits: not a suffix
  EXPECT_EQ(call_name("cuMemcpy_vx2"), "cuMemcpy_vx2");        // not digits
  EXPECT_EQ(call_name("cudaMemcpy_v3020_ptds"), "cudaMemcpy_v3020_ptds");  // the suffix is last or none
}

TEST(TraceCapture, AProcessCutShortKeepsWhatCameBefore) {
  const auto p = read_capture(data + "cut-short.jsonl");
  EXPECT_FALSE(p.complete);
  EXPECT_EQ(p.transfers.size(), 1u);
}

TEST(TraceCapture, ADamagedLineOrNoProcessLineIsAnError) {
  try {
    read_capture(data + "damaged.jsonl");
    FAIL() << "a damaged line was read";
  } catch (const capture_error& e) {
    EXPECT_NE(std::string(e.what()).find("line 2"), std::string::npos) << e.what();
  }
  EXPECT_THROW(read_capture(data + "no-process.jsonl"), capture_error);
}

TEST(TraceCapture, CuptiRefusingIsRecorded) {
  const auto p = read_capture(data + "refused.jsonl");
  EXPECT_NE(p.error.find("another profiler"), std::string::npos);
  EXPECT_FALSE(p.complete);
}

TEST(TraceCapture, ReadsEveryProcessOfADirectory) {
  const auto all = read_captures(data + "two-copies");
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].pid, 100);
}

// pinned copies at 16 GB/s, staged at 40% of that, pageable slower; 8 to 32 MiB and 4 to 64 KiB.
machine_curves curves() {
  machine_curves m;
  m.source = "measured";
  const auto line = [](std::uint64_t b, double gbps) { return std::pair{b, static_cast<double>(b) / (gbps * 1e9)}; };
  m.curves.push_back({"cuda-rt", "copy-sync", "pinned", "h2d", 0, {line(8 << 20, 16), line(32 << 20, 16)}});
  m.curves.push_back({"cuda-rt", "staged", "pageable", "h2d", 0, {line(8 << 20, 6.4), line(32 << 20, 6.4)}});
  m.curves.push_back({"cuda-rt", "copy-sync", "pinned", "d2h", 0, {line(4 << 10, 2), line(64 << 10, 8)}});
  return m;
}

process_capture capture_of(std::vector<transfer> t) {
  process_capture p;
  p.pid = 1;
  p.complete = true;
  p.transfers = std::move(t);
  return p;
}

transfer copy(const char* dir, const char* kind, std::uint64_t bytes, double cost_s, bool async = false) {
  transfer t;
  t.op = "memcpy", t.call = async ? "cudaMemcpyAsync" : "cudaMemcpy", t.async = async;
  t.direction = dir, t.host_memory = kind, t.bytes = bytes;
  t.start_ns = 0, t.end_ns = static_cast<std::uint64_t>(cost_s * 1e9);
  t.host_s = cost_s;
  return t;
}

TEST(TraceCurves, InterpolatesOnLogAxesAndNeverExtrapolates) {
  const auto m = curves();
  // 16 MiB between 8 and 32 MiB at one rate: exactly that rate.
  EXPECT_NEAR(*m.seconds("copy-sync", "pinned", "h2d", 16 << 20), (16 << 20) / 16e9, 1e-12);
  EXPECT_FALSE(m.seconds("copy-sync", "pinned", "h2d", 64 << 20));  // past the largest size measured
  EXPECT_FALSE(m.seconds("copy-sync", "pinned", "h2d", 4 << 20));   // below the smallest
  EXPECT_FALSE(m.seconds("copy-async", "pinned", "h2d", 16 << 20));  // no such curve
}

TEST(TraceBill, PricesAPageableGroupAndRanksTheFixBySaving) {
  // 4 pageable copies of 16 MiB at 4 GB/s: pinned (16 GB/s) saves 3/4, staged (6.4) less.
  std::vector<transfer> t(4, copy("h2d", "pageable", 16 << 20, (16 << 20) / 4e9));
  const bill b = make_bill({capture_of(t)}, curves(), 1.0);
  ASSERT_EQ(b.groups.size(), 1u);
  const group& g = b.groups[0];
  EXPECT_EQ(g.count, 4u);
  EXPECT_EQ(g.size_class, std::uint64_t{16} << 20);
  ASSERT_EQ(g.what_ifs.size(), 2u);
  EXPECT_EQ(g.what_ifs[0].fix, "pin");
  EXPECT_NEAR(*g.what_ifs[0].predicted_s, 4 * (16 << 20) / 16e9, 1e-9);
  EXPECT_NEAR(*g.what_ifs[0].saving_s, g.cost_s * 0.75, 1e-9);
  ASSERT_EQ(b.fixes.size(), 1u);
  EXPECT_EQ(b.fixes[0].fix.fix, "pin");  // the larger saving of the two
  EXPECT_EQ(b.fixes[0].rank, 1);
}

TEST(TraceBill, NoFixWhereTheProgramIsAlreadyFasterThanTheFix) {
  // Pageable copies already at 20 GB/s, faster than this machine's pinned curve: the fix would cost time.
  std::vector<transfer> t(4, copy("h2d", "pageable", 16 << 20, (16 << 20) / 20e9));
  const bill b = make_bill({capture_of(t)}, curves(), 1.0);
  ASSERT_EQ(b.groups.size(), 1u);
  EXPECT_LT(*b.groups[0].what_ifs[0].saving_s, 0.0);
  EXPECT_TRUE(b.fixes.empty());
}

TEST(TraceBill, ASavingWithinTheNoiseIsNoFix) {
  // 3% faster pinned: within what reruns differ by (min_saving_share).
  std::vector<transfer> t(2, copy("h2d", "pageable", 16 << 20, (16 << 20) / 16e9 * 1.03));
  EXPECT_TRUE(make_bill({capture_of(t)}, curves(), 1.0).fixes.empty());
}

TEST(TraceBill, TheLargerSavingRanksFirstNotTheLargerCost) {
  // Group A costs more but is nearly at pinned speed; group B costs less and saves more.
  std::vector<transfer> t(10, copy("h2d", "pageable", 16 << 20, (16 << 20) / 15e9));  // A: 10 x 1.12 ms, saves 6%
  for (int i = 0; i < 2; ++i) t.push_back(copy("h2d", "pageable", 8 << 20, (8 << 20) / 2e9));  // B: 2 x 4.2 ms, saves 7/8
  const bill b = make_bill({capture_of(t)}, curves(), 1.0);
  ASSERT_EQ(b.groups.size(), 2u);
  EXPECT_GT(b.groups[0].cost_s, b.groups[1].cost_s);  // groups: largest cost first
  EXPECT_EQ(b.groups[0].size_class, std::uint64_t{16} << 20);
  ASSERT_EQ(b.fixes.size(), 2u);
  EXPECT_EQ(b.groups[b.fixes[0].group].size_class, std::uint64_t{8} << 20);  // fixes: largest saving first
  EXPECT_GT(*b.fixes[0].fix.saving_s, *b.fixes[1].fix.saving_s);
}

TEST(TraceBill, ASizeOffTheCurveIsNotPricedAndSaysWhy) {
  std::vector<transfer> t(2, copy("h2d", "pageable", 64 << 20, 0.02));
  const bill b = make_bill({capture_of(t)}, curves(), 1.0);
  const what_if& pin = b.groups[0].what_ifs[0];
  EXPECT_FALSE(pin.predicted_s);
  EXPECT_NE(pin.not_priced.find("outside the sizes measured"), std::string::npos) << pin.not_priced;
  EXPECT_TRUE(b.fixes.empty());
}

TEST(TraceBill, ManySmallCopiesArePricedAsBlocksOnlyWithBlockCurves) {
  std::vector<transfer> t(64, copy("d2h", "pinned", 16 << 10, 20e-6));
  machine_curves m = curves();
  bill b = make_bill({capture_of(t)}, m, 1.0);
  ASSERT_EQ(b.groups[0].what_ifs.size(), 1u);  // pinned already: no pin, no staged
  EXPECT_EQ(b.groups[0].what_ifs[0].fix, "blocks");
  EXPECT_NE(b.groups[0].what_ifs[0].not_priced.find("sweep --blocks"), std::string::npos);
  // 64 x 16 KiB = 1 MiB in blocks of 16 KiB at 10 GB/s: 105 us against 64 x 20 us.
  m.curves.push_back({"cuda-rt", "blocks-auto", "pinned", "d2h", 16 << 10, {{512 << 10, 52e-6}, {2 << 20, 210e-6}}});
  b = make_bill({capture_of(t)}, m, 1.0);
  ASSERT_TRUE(b.groups[0].what_ifs[0].predicted_s);
  EXPECT_NEAR(*b.groups[0].what_ifs[0].predicted_s, 105e-6, 2e-6);
  ASSERT_EQ(b.fixes.size(), 1u);
  EXPECT_EQ(b.fixes[0].fix.fix, "blocks");
}

TEST(TraceFile, SaysWhatWasDecided) {
  std::vector<transfer> t(4, copy("h2d", "pageable", 16 << 20, (16 << 20) / 4e9));
  const auto caps = std::vector{capture_of(t)};
  const machine_curves m = curves();
  const bill b = make_bill(caps, m, 0.1);
  program_run run;
  run.command = {"./app"};
  run.exit_code = 0;
  run.text = "the program exited with 0";
  run.wall_s = 0.1;
  const auto doc = nlohmann::json::parse(trace_json(run, caps, m, b, "{}", "0.1.0"));
  EXPECT_EQ(doc["schema"], trace_schema);
  EXPECT_EQ(doc["outcome"]["state"], "complete");
  EXPECT_EQ(doc["groups"].size(), 1u);
  EXPECT_EQ(doc["fixes"][0]["fix"], "pin");
  EXPECT_EQ(doc["fixes"][0]["rank"], 1);
  EXPECT_NEAR(doc["groups"][0]["share_of_wall"].get<double>(), b.cost_s / 0.1, 1e-9);
  EXPECT_EQ(doc["machine"]["curves"].size(), 3u);
  const std::string text = bill_text(run, m, b);
  EXPECT_NE(text.find("fix 1: 4 x 16 MiB h2d pageable"), std::string::npos) << text;
}

}  // namespace
