// The block copier (issue 38) on the host block step: every way moves the
// right bytes, every bad input is refused with nothing moved, and the
// choice follows its rule (forced, XFER_BLOCKS_WAY, the cached ranking).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>
#include <xfer/mem/blocks/block_copier.hpp>
#include <xfer/mem/settings.hpp>

#include "../support/scoped_inputs.hpp"

namespace xfer::mem {
namespace {

using dir = staged_direction;

using test::scoped_env;
using test::scoped_inputs;

// The block cache file's first line, and this machine as the host step's entries record it.
constexpr const char* cache_header = "xfer block-ways cache, schema 6\n";
std::string this_machine() { return cpu_model() + "; no driver"; }

// Each block's bytes say which array and which block they are.
std::vector<unsigned char> numbered(std::size_t blocks, std::size_t block_bytes, unsigned char salt) {
  std::vector<unsigned char> v(blocks * block_bytes);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<unsigned char>((i / block_bytes) * 7 + i % 251 + salt);
  return v;
}

block_copier_options uncalibrated(std::optional<block_way> way = {}) {
  block_copier_options o;
  o.way = way;
  o.calibrate = false;
  return o;
}
block_calibration_options probe(std::size_t bytes, unsigned rounds) {
  block_calibration_options o;
  o.probe_bytes = bytes;
  o.rounds = o.min_rounds = rounds;
  return o;
}
block_copier_options calibrated(block_calibration_options c) {
  block_copier_options o;
  o.calibration = c;
  return o;
}

// `variable`=`value` in the environment: reading the inputs throws std::invalid_argument saying `message`.
void expect_variable_refused(const char* variable, const char* value, const char* message) {
  scoped_env e(variable, value);
  try {
    (void)inputs_from_environment();
    ADD_FAILURE() << variable << "=" << value << " accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), message);
  }
}

class BlockCopier : public ::testing::Test {
 protected:
  BlockCopier() { forget_block_choices(); }
  ~BlockCopier() override { forget_block_choices(); }
  // No cache file, no way forced.
  scoped_inputs inputs_{[](library_inputs& in) {
    in.blocks_cache.clear();
    in.way.reset();
  }};
  host_block_step step_;
};

// Moves `pairs` with way w and checks every destination block, and that no
// other destination block changed.
struct counts {
  std::size_t host_blocks = 37, device_blocks = 29, pairs = 23;
};
template <class Step>
void check_way(block_copier& c, block_way w, dir d, std::size_t block_bytes, unsigned seed, Step& step, bool pinned,
               counts k = {}) {
  const std::size_t host_blocks = k.host_blocks, device_blocks = k.device_blocks, n = k.pairs;
  auto host = numbered(host_blocks, block_bytes, 1);
  const device_ref dev = step.allocate(device_blocks * block_bytes);
  auto* dev_bytes = static_cast<unsigned char*>(dev.handle);
  const auto dev_init = numbered(device_blocks, block_bytes, 99);
  std::copy(dev_init.begin(), dev_init.end(), dev_bytes);
  if (pinned) step.declare_pinned(host.data(), host.size());
  const bool to_dev = d == dir::to_device;
  const auto pairs = scattered_block_pairs(n, to_dev ? host_blocks : device_blocks, to_dev ? device_blocks : host_blocks, seed);
  const auto host_before = host;
  const block_job job{d, host.data(), host.size(), dev, block_bytes, pairs};
  ASSERT_EQ(c.mover(w).refusal(job, step.access(host.data(), host.size())), "");
  c.mover(w).move(job, step.access(host.data(), host.size()));
  const unsigned char* src = to_dev ? host_before.data() : dev_init.data();
  const unsigned char* dst = to_dev ? dev_bytes : host.data();
  std::vector<unsigned char> expect(to_dev ? dev_init : host_before);
  for (const auto& p : pairs)
    std::copy_n(src + p.src * block_bytes, block_bytes, expect.begin() + p.dst * block_bytes);
  for (std::size_t b = 0; b < expect.size() / block_bytes; ++b)
    ASSERT_TRUE(std::equal(expect.begin() + b * block_bytes, expect.begin() + (b + 1) * block_bytes,
                           dst + b * block_bytes))
        << to_string(w) << " " << to_string(d) << ": block " << b << " of " << block_bytes << " bytes";
  if (pinned) step.forget_pinned(host.data());
  step.deallocate(dev);
}

TEST_F(BlockCopier, EveryWayMovesScatteredBlocksBothWays) {
  block_copier c(step_, uncalibrated());
  unsigned seed = 1;
  for (block_way w : all_block_ways)
    for (dir d : {dir::to_device, dir::to_host})
      for (std::size_t b : {std::size_t{1}, std::size_t{100}, std::size_t{4096}})
        check_way(c, w, d, b, seed++, step_, /*pinned=*/true);
}

// The pack way moves a copy in groups of about 4 MiB (the CPU packs one while
// the device moves another): 1 MiB blocks make groups of 4, and 9 pairs a
// last group of 1.
TEST_F(BlockCopier, PackMovesCopiesOfSeveralGroups) {
  block_copier c(step_, uncalibrated());
  for (dir d : {dir::to_device, dir::to_host})
    check_way(c, block_way::pack, d, std::size_t{1} << 20, 11, step_, /*pinned=*/false, {12, 10, 9});
}

// A device whose queue runs at the worst moments a GPU's may: the host
// step's queue, but nothing queued runs before a wait() or finish(), and
// then everything queued so far runs (the device ran ahead of the mark).
// A way that writes host memory a queued DMA has yet to read, or queues a
// DMA over host memory it has yet to read, moves the wrong bytes here.
class deferred_step final : public block_step {
 public:
  std::string_view name() const noexcept override { return inner_.name(); }
  std::string device_key() const override { return inner_.device_key(); }
  host_resource& staging_memory() override { return inner_.staging_memory(); }
  host_access access(const void* host, std::size_t bytes) override { return inner_.access(host, bytes); }
  std::string batch_unavailable() const override { return inner_.batch_unavailable(); }
  std::unique_ptr<block_queue> open_queue(void* after_queue) override {
    return std::make_unique<queue>(inner_.open_queue(after_queue));
  }
  device_ref allocate(std::size_t bytes) override { return inner_.allocate(bytes); }
  void deallocate(device_ref d) noexcept override { inner_.deallocate(d); }
  const void* host_view(device_ref d) const noexcept override { return inner_.host_view(d); }
  void declare_pinned(const void* p, std::size_t bytes) { inner_.declare_pinned(p, bytes); }
  void forget_pinned(const void* p) { inner_.forget_pinned(p); }

 private:
  class queue final : public block_queue {
   public:
    explicit queue(std::unique_ptr<block_queue> q) : q_(std::move(q)) {}
    void copy(void* dst, const void* src, std::size_t bytes) override {
      late_.push_back([=, this] { q_->copy(dst, src, bytes); });
    }
    void copy_batch(void* const* d, const void* const* s, std::size_t bytes, std::size_t count) override {
      std::vector<void*> dsts(d, d + count);
      std::vector<const void*> srcs(s, s + count);
      late_.push_back([=, this] { q_->copy_batch(dsts.data(), srcs.data(), bytes, count); });
    }
    void copy_blocks(void* dst, const void* src, std::size_t block_bytes, const std::int64_t* si,
                     const std::int64_t* di, std::size_t count) override {
      // The index arrays are read now, as the interface says; the blocks move later.
      std::vector<std::int64_t> s = si ? std::vector<std::int64_t>(si, si + count) : std::vector<std::int64_t>{};
      std::vector<std::int64_t> d = di ? std::vector<std::int64_t>(di, di + count) : std::vector<std::int64_t>{};
      late_.push_back([=, this] {
        q_->copy_blocks(dst, src, block_bytes, s.empty() ? nullptr : s.data(), d.empty() ? nullptr : d.data(), count);
      });
    }
    std::size_t mark() override { return late_.size(); }
    void wait(std::size_t) override { finish(); }
    void finish() override {
      for (; ran_ < late_.size(); ++ran_) late_[ran_]();
    }

   private:
    std::unique_ptr<block_queue> q_;
    std::vector<std::function<void()>> late_;
    std::size_t ran_ = 0;
  };
  host_block_step inner_;
};

// The pack way's groups pass through a ring of staging slots: with more
// groups than slots, each slot is written again only once the device has
// read it (to the device) and read only once the device has written it (to
// the host), on a device that runs its queue late. 2 MiB blocks make groups
// of 2, so 23 pairs are 12 groups.
TEST(BlockPackRing, ASlotIsReusedOnlyOnceTheDeviceIsDoneWithIt) {
  deferred_step step;
  block_copier c(step, uncalibrated());
  for (dir d : {dir::to_device, dir::to_host})
    check_way(c, block_way::pack, d, std::size_t{2} << 20, 21, step, /*pinned=*/false, {30, 27, 23});
}

TEST_F(BlockCopier, CopyUsesTheChosenWayAndMovesTheBytes) {
  block_copier c(step_, uncalibrated());
  auto host = numbered(8, 64, 3);
  const device_ref dev = step_.allocate(8 * 64);
  const std::vector<block_pair> pairs{{0, 7}, {5, 2}, {7, 0}};
  EXPECT_EQ(c.copy({dir::to_device, host.data(), host.size(), dev, 64, pairs}), block_way::pack);
  for (const auto& p : pairs)
    EXPECT_EQ(0, std::memcmp(static_cast<unsigned char*>(dev.handle) + p.dst * 64, host.data() + p.src * 64, 64));
  std::vector<unsigned char> back(host.size(), 0);
  c.copy({dir::to_host, back.data(), back.size(), dev, 64, pairs});
  for (const auto& p : pairs)
    EXPECT_EQ(0, std::memcmp(back.data() + p.dst * 64, static_cast<unsigned char*>(dev.handle) + p.src * 64, 64));
  step_.deallocate(dev);
}

// Each bad input: a block_error whose message holds `needle`, and the
// destination untouched.
void expect_refused(block_copier& c, block_step& step, const block_job& job, const std::string& needle,
                    const std::vector<unsigned char>& dst_before, const unsigned char* dst) {
  try {
    c.copy(job);
    ADD_FAILURE() << "accepted; expected a refusal naming \"" << needle << "\"";
  } catch (const block_error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
  EXPECT_THROW(check_block_job(job, step), block_error);
  EXPECT_TRUE(std::equal(dst_before.begin(), dst_before.end(), dst)) << "bytes moved for: " << needle;
}

TEST_F(BlockCopier, EveryBadInputIsRefusedNamingTheBlockAndTheBound) {
  block_copier c(step_, uncalibrated());
  auto host = numbered(4, 16, 5);
  const device_ref dev = step_.allocate(6 * 16);
  std::fill_n(static_cast<unsigned char*>(dev.handle), 6 * 16, 0xEE);
  const std::vector<unsigned char> dev_before(6 * 16, 0xEE);
  const auto* d = static_cast<const unsigned char*>(dev.handle);
  const auto job = [&](std::vector<block_pair> p, std::size_t block = 16) {
    static std::vector<block_pair> keep;
    keep = std::move(p);
    return block_job{dir::to_device, host.data(), host.size(), dev, block, keep};
  };
  expect_refused(c, step_, job({{0, 1}, {1, 3}, {2, 1}}), "pairs 0 and 2 both write destination block 1", dev_before, d);
  expect_refused(c, step_, job({{0, 0}, {4, 1}}), "pair 1 (4 -> 1): source block 4 is outside the host array (the source)'s blocks 0 to 3",
                 dev_before, d);
  expect_refused(c, step_, job({{0, 6}}), "destination block 6 is outside the device array (the destination)'s blocks 0 to 5",
                 dev_before, d);
  expect_refused(c, step_, job({{-1, 0}}), "source block -1 is outside", dev_before, d);
  expect_refused(c, step_, job({}), "the block list is empty", dev_before, d);
  expect_refused(c, step_, job({{0, 0}}, 0), "a block size of 0 bytes", dev_before, d);
  expect_refused(c, step_, job({{0, 0}}, 24), "the host array's 64 bytes are not a whole number of 24-byte blocks",
                 dev_before, d);
  expect_refused(c, step_, job({{0, 0}}, 64), "the device array's 96 bytes are not a whole number of 64-byte blocks",
                 dev_before, d);
  block_job null_host = job({{0, 0}});
  null_host.host = nullptr;
  expect_refused(c, step_, null_host, "the host array is null", dev_before, d);
  // To the host, the bound is the host's.
  const std::vector<unsigned char> host_before = host;
  std::vector<block_pair> back{{5, 4}};
  expect_refused(c, step_, {dir::to_host, host.data(), host.size(), dev, 16, back},
                 "destination block 4 is outside the host array (the destination)'s blocks 0 to 3", host_before, host.data());
  // The host step's "device" memory is host memory: one array on both sides.
  std::vector<block_pair> self{{0, 1}};
  expect_refused(c, step_, {dir::to_device, host.data(), host.size(), {host.data(), host.size()}, 16, self},
                 "the host and device arrays overlap", host_before, host.data());
  step_.deallocate(dev);
}

// Overlapping destinations are found by a bitmap where the destination has
// few blocks per pair and by sorting where it has many: both name the pairs.
TEST_F(BlockCopier, OverlappingDestinationsAreFoundInSmallAndLargeArrays) {
  std::vector<unsigned char> host(64, 1);
  for (std::size_t device_bytes : {std::size_t{64}, std::size_t{1} << 20}) {
    const device_ref dev = step_.allocate(device_bytes);
    const std::vector<block_pair> pairs{{0, 9}, {1, 5}, {2, 33}, {3, 5}};
    try {
      check_block_job({dir::to_device, host.data(), host.size(), dev, 1, pairs}, step_);
      ADD_FAILURE() << "accepted with a device array of " << device_bytes << " bytes";
    } catch (const block_error& e) {
      EXPECT_NE(std::string(e.what()).find("pairs 1 and 3 both write destination block 5"), std::string::npos)
          << e.what();
    }
    step_.deallocate(dev);
  }
}

TEST_F(BlockCopier, KernelWayRefusesPageableHostMemory) {
  block_copier c(step_, uncalibrated(block_way::kernel));
  auto host = numbered(2, 32, 0);
  const device_ref dev = step_.allocate(64);
  std::fill_n(static_cast<unsigned char*>(dev.handle), 64, 0);
  const std::vector<block_pair> pairs{{0, 1}};
  const block_job job{dir::to_device, host.data(), host.size(), dev, 32, pairs};
  EXPECT_NE(c.mover(block_way::kernel).refusal(job, step_.access(host.data(), host.size())).find("pageable"),
            std::string::npos);
  try {
    c.copy(job);
    ADD_FAILURE() << "a forced kernel way moved pageable memory";
  } catch (const block_error& e) {
    EXPECT_NE(std::string(e.what()).find("way kernel was forced and cannot"), std::string::npos) << e.what();
  }
  EXPECT_EQ(static_cast<unsigned char*>(dev.handle)[32], 0);
  step_.declare_pinned(host.data(), host.size());
  EXPECT_EQ(c.copy(job), block_way::kernel);
  EXPECT_EQ(static_cast<unsigned char*>(dev.handle)[32], host[0]);
  step_.forget_pinned(host.data());
  step_.deallocate(dev);
}

TEST_F(BlockCopier, TheInputsForceAWayAndABadVariableIsRefused) {
  auto host = numbered(2, 32, 0);
  const device_ref dev = step_.allocate(64);
  const std::vector<block_pair> pairs{{1, 0}};
  const block_job job{dir::to_device, host.data(), host.size(), dev, 32, pairs};
  {
    scoped_inputs loop([](library_inputs& in) { in.way = block_way::loop; });
    block_copier c(step_, uncalibrated());
    EXPECT_EQ(c.copy(job), block_way::loop);
    block_copier forced(step_, uncalibrated(block_way::batch));  // the argument over the inputs
    EXPECT_EQ(forced.copy(job), block_way::batch);
  }
  {
    scoped_env e("XFER_BLOCKS_WAY", "loop");
    EXPECT_EQ(inputs_from_environment().way, block_way::loop);
  }
  expect_variable_refused("XFER_BLOCKS_WAY", "fast",
                          "XFER_BLOCKS_WAY=fast: expected one of loop, batch, kernel, pack");
  step_.deallocate(dev);
}

TEST(BlockPolicy, BesideComputePutsTheKernelWayLastAndKeepsTheOthersOrder) {
  using enum block_way;
  const std::vector<block_way> r{kernel, pack, batch, loop};
  EXPECT_EQ(ranked_for(r, block_policy::alone), r);
  EXPECT_EQ(ranked_for(r, block_policy::beside_compute), (std::vector<block_way>{pack, batch, loop, kernel}));
  EXPECT_EQ(ranked_for({loop, kernel, batch, pack}, block_policy::beside_compute),
            (std::vector<block_way>{loop, batch, pack, kernel}));
  EXPECT_EQ(parse_block_policy("beside_compute"), block_policy::beside_compute);
  EXPECT_EQ(to_string(parse_block_policy("alone")), "alone");
}

TEST_F(BlockCopier, ThePolicyPicksTheWayAndTheInputsGiveItsDefault) {
  // Pinned host memory (the kernel way takes it) and a replayed ranking with kernel first, as a
  // calibration on a GPU gives for small pinned blocks.
  constexpr std::size_t bytes = 4 * 64;
  void* host = step_.staging_memory().allocate(bytes, 4096);
  std::memset(host, 7, bytes);
  const device_ref dev = step_.allocate(bytes);
  const std::vector<block_pair> pairs{{0, 1}, {2, 3}};
  const block_job job{dir::to_device, host, bytes, dev, 64, pairs};
  ASSERT_EQ(step_.access(host, bytes).kind, host_block_kind::pinned);
  const std::string key = block_choice_cache_key(step_, choice_key_for(job, host_block_kind::pinned));
  scoped_inputs replay([&](library_inputs& in) {
    in.replay_file = "a-run.json";
    in.replay = {
        setting{"blocks", key, "ranking", "kernel pack batch loop", setting_source::replay, "a-run.json"}};
  });
  auto with = [](block_policy p) {
    block_copier_options o;
    o.policy = p;
    return o;
  };
  block_copier alone(step_);
  EXPECT_EQ(alone.policy(), block_policy::alone);
  EXPECT_EQ(alone.copy(job), block_way::kernel);
  block_copier beside(step_, with(block_policy::beside_compute));
  EXPECT_EQ(beside.copy(job), block_way::pack);  // the kernel way last, the others in their order
  {
    scoped_inputs in([](library_inputs& i) { i.blocks_policy = block_policy::beside_compute; });
    block_copier c(step_);
    EXPECT_EQ(c.policy(), block_policy::beside_compute);
    EXPECT_EQ(c.copy(job), block_way::pack);
    block_copier given(step_, with(block_policy::alone));  // the argument over the inputs
    EXPECT_EQ(given.copy(job), block_way::kernel);
  }
  step_.staging_memory().deallocate(host, bytes, 4096);
  {
    scoped_env e("XFER_BLOCKS_POLICY", "beside_compute");
    EXPECT_EQ(inputs_from_environment().blocks_policy, block_policy::beside_compute);
  }
  expect_variable_refused("XFER_BLOCKS_POLICY", "fast",
                          "XFER_BLOCKS_POLICY=fast: expected alone or beside_compute");
  step_.deallocate(dev);
}

TEST_F(BlockCopier, AnUnavailableBatchIsSkippedWithItsReason) {
  host_block_step old_driver({.batch_unavailable = "cudaMemcpyBatchAsync needs a CUDA 12.8 driver or later"});
  block_copier c(old_driver, uncalibrated());
  auto host = numbered(2, 32, 0);
  const device_ref dev = old_driver.allocate(64);
  const std::vector<block_pair> pairs{{1, 0}};
  const block_job job{dir::to_device, host.data(), host.size(), dev, 32, pairs};
  EXPECT_EQ(c.mover(block_way::batch).refusal(job, {}), "cudaMemcpyBatchAsync needs a CUDA 12.8 driver or later");
  const auto ranking = calibrate_block_ways(old_driver, choice_key_for(job, host_block_kind::pageable),
                                            {&c.mover(block_way::batch), &c.mover(block_way::loop)}, probe(4096, 3));
  EXPECT_EQ(ranking, std::vector<block_way>{block_way::loop});
  old_driver.deallocate(dev);
}

TEST_F(BlockCopier, CalibrationRanksEveryUsableWayAndIsCachedInTheFile) {
  const std::string file = ::testing::TempDir() + "block-ways-" + std::to_string(::getpid());
  std::filesystem::remove(file);
  scoped_inputs cache([&](library_inputs& in) { in.blocks_cache = file; });
  forget_block_choices();
  forget_recorded_settings();
  block_copier c(step_, calibrated(probe(1 << 16, 1)));
  auto host = numbered(16, 4096, 0);
  const device_ref dev = step_.allocate(16 * 4096);
  const auto pairs = scattered_block_pairs(16, 16, 16, 4);
  const block_job job{dir::to_host, host.data(), host.size(), dev, 4096, pairs};
  const block_way chosen = c.copy(job);
  // Pageable host memory: the kernel way is not ranked, the other three are.
  const std::string key = block_choice_cache_key(step_, choice_key_for(job, host_block_kind::pageable));
  EXPECT_NE(key.find("/host/host/d2h/pageable/4096"), std::string::npos) << key;
  std::ifstream in(file);
  std::string line, found;
  ASSERT_TRUE(std::getline(in, line));
  EXPECT_EQ(line + "\n", cache_header);
  const std::string prefix = key + '\t' + this_machine() + '\t';
  while (std::getline(in, line))
    if (line.rfind(prefix, 0) == 0) found = line.substr(prefix.size());
  ASSERT_FALSE(found.empty()) << "no line for " << key << " in " << file;
  EXPECT_EQ(found.find("kernel"), std::string::npos) << found;
  for (const char* w : {"loop", "batch", "pack"}) EXPECT_NE(found.find(w), std::string::npos) << found;
  EXPECT_EQ(found.substr(0, found.find(' ')), to_string(chosen));

  const auto recorded = [&] {
    for (const auto& s : recorded_settings())
      if (s.component == "blocks" && s.scope == key && s.name == "ranking") return s;
    return setting{};
  };
  EXPECT_EQ(recorded().source, setting_source::calibration);
  EXPECT_EQ(recorded().value.substr(0, recorded().value.find(' ')), to_string(chosen));

  // A ranking in the file decides, without calibrating: loop first.
  std::ofstream(file, std::ios::trunc) << cache_header << key << "\t" << this_machine() << "\tloop pack\n";
  forget_block_choices();
  block_copier from_file(step_, uncalibrated());
  EXPECT_EQ(from_file.copy(job), block_way::loop);
  EXPECT_EQ(recorded().source, setting_source::cache);
  EXPECT_EQ(recorded().value, "loop pack");
  EXPECT_EQ(recorded().origin, file);
  // An entry made on another machine, or a file of another schema, is not
  // used: the fixed order, and a notice saying why.
  for (const std::string& text : {std::string(cache_header) + key + "\tanother CPU; no driver\tloop pack\n",
                                 "xfer block-ways cache, schema 5\n" + key + "\t" + this_machine() + "\tloop\n"}) {
    std::ofstream(file, std::ios::trunc) << text;
    forget_block_choices();
    forget_recorded_settings();
    block_copier elsewhere(step_, uncalibrated());
    EXPECT_EQ(elsewhere.copy(job), block_way::pack) << text;
    ASSERT_EQ(recorded_notices().size(), 1u) << text;
    EXPECT_NE(recorded_notices()[0].find(file), std::string::npos) << recorded_notices()[0];
  }
  std::ofstream(file, std::ios::trunc) << cache_header << key << "\t" << this_machine() << "\tloop pack\n";
  // A copier's own lookup of the key is dropped with the process's: the
  // calibrated copier reads the file again (a way other than its own choice).
  const block_way other = chosen == block_way::loop ? block_way::pack : block_way::loop;
  std::ofstream(file, std::ios::trunc) << cache_header << key << "\t" << this_machine() << "\t" << to_string(other)
                                      << "\n";
  forget_block_choices();
  EXPECT_EQ(c.copy(job), other);
  // Another size class is another key: the fixed order there.
  const std::vector<block_pair> one{{0, 0}};
  EXPECT_EQ(from_file.copy({dir::to_host, host.data(), host.size(), dev, 8192, one}), block_way::pack);
  std::filesystem::remove(file);
  step_.deallocate(dev);
}

TEST(BlockList, ScatteredPairsAreDistinctInBoundsAndRepeatable) {
  const auto a = scattered_block_pairs(100, 300, 120, 9);
  ASSERT_EQ(a.size(), 100u);
  std::vector<bool> src_seen(300), dst_seen(120);
  for (const auto& p : a) {
    ASSERT_TRUE(p.src >= 0 && p.src < 300 && p.dst >= 0 && p.dst < 120);
    EXPECT_FALSE(src_seen[p.src]) << p.src;
    EXPECT_FALSE(dst_seen[p.dst]) << p.dst;
    src_seen[p.src] = dst_seen[p.dst] = true;
  }
  const auto b = scattered_block_pairs(100, 300, 120, 9);
  const auto c = scattered_block_pairs(100, 300, 120, 10);
  const auto same = [](const auto& x, const auto& y) {
    return std::equal(x.begin(), x.end(), y.begin(), [](auto p, auto q) { return p.src == q.src && p.dst == q.dst; });
  };
  EXPECT_TRUE(same(a, b));
  EXPECT_FALSE(same(a, c));
  EXPECT_THROW(scattered_block_pairs(121, 300, 120, 1), std::invalid_argument);
}

TEST(BlockChoice, SizeClassesAreThePowerOfTwoBelow) {
  block_job j;
  for (auto [bytes, cls] : {std::pair{std::size_t{1}, std::size_t{1}}, {4096, 4096}, {4097, 4096}, {12288, 8192},
                            {std::size_t{2} << 20, std::size_t{2} << 20}}) {
    j.block_bytes = bytes;
    EXPECT_EQ(choice_key_for(j, host_block_kind::pinned).size_class, cls) << bytes;
  }
  EXPECT_EQ(parse_block_way("batch"), block_way::batch);
  EXPECT_THROW(parse_block_way("Batch"), std::invalid_argument);
}

}  // namespace
}  // namespace xfer::mem
