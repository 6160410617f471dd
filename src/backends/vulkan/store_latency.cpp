// Over 500 lines as one piece on purpose: nearly all of it is one transfer
// class (latency_transfer) whose rounds, dispatches and bounded waits share
// its state and the protocol described here; parts of it split into files
// would each reach into the others' members.
//
// Routes cpu-store-latency / cpu-store-nt-latency: a ping-pong between the
// CPU and one shader invocation (shaders/poll.comp), many rounds in one
// dispatch so that launching it stays out of the time.
//
//   CPU                                        device (one invocation)
//   stores round s's N bytes into the BAR  ->  polls the last word until it holds round s
//   (the last word after a fence; memcpy       writes s into host memory
//   or streaming stores)
//   polls host memory until it reads s     <-
//
// The last word is stored after a fence, and posted writes arrive in order,
// so the device seeing it means the whole store is visible. The bytes
// themselves are checked after each sample: the device copies the BAR out and
// the CPU compares it with the last round's.
//
// The time of a round is the wall clock from the CPU's store to its reading
// of the answer: the store made visible to the device *plus* the device's
// answer crossing back. Nothing here can split the two without a clock both
// sides share, so the figure is a round trip, an upper bound of the time
// the store takes to become visible, and the route says so.
//
// What makes it work on every driver, lavapipe included (where an earlier
// attempt failed): llvmpipe ends every loop of a shader invocation once
// 65535 iterations have run in all (gallivm's loop limiter), silently, as if
// the loop's condition had failed. Measured here: a spin on 8 bytes
// answered its round after 32768 polls (two loop passes each) while the
// word still held the round before. A plain spin therefore answers rounds
// it never saw, or ends before the CPU stores. So the shader notes how each
// loop was left and answers "cut" (why 3) for a loop left by none of its
// exits, the CPU goes on in a new dispatch, and a dispatch that ends
// without answering counts as cut too; elsewhere a cut fails the point.
// Besides: the shader's buffers are coherent volatile; the CPU waits,
// bounded, for the shader to say it runs before it stores (a dispatch can
// start long after its submission); the dispatch is submitted from a thread
// of its own (nothing forbids a driver to run the work inside vkQueueSubmit;
// lavapipe 22.3 returns in a few us); and every wait on either side is
// bounded (store_latency_limits), a failed round answering with what it saw.
#include "store_latency.hpp"

#include <algorithm>
#include <cstdlib>
#include <atomic>
#include <chrono>
#include <optional>
#include <cstring>
#include <fmt/format.h>
#include <thread>
#include <vector>
#include <xfer/core/errors.hpp>
#include <xfer/core/timing.hpp>
#include <xfer/mem/nontemporal.hpp>

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#define XFER_VK_HAVE_MOVNTI 1
#else
#define XFER_VK_HAVE_MOVNTI 0
#endif

#include "kernel.hpp"
#include "memory.hpp"
#include "routes.hpp"

namespace xfer::vulkan {
namespace {

using clock = std::chrono::steady_clock;

constexpr std::uint32_t fail_bit = 0x80000000u;  // shaders/poll.comp's
constexpr std::uint32_t no_answer = 0xffffffffu;  // no round's number, failed or not
// Rounds are numbered below fail_bit, from 1 (the shader says it runs with first - 1).
constexpr std::uint32_t last_round = fail_bit - 2;

// The answer in host memory (poll.comp's answer_words).
struct answer {
  std::uint32_t seq, word, seen, polls, why;
};

// Word i of round s (poll.comp's value()): every word changes from one round
// to the next (the multiplier is odd), in each of its bytes (its low 16 bits are not 0).
constexpr std::uint32_t word_of(std::uint32_t s, std::uint32_t i) { return (s * 0x9E3779B1u) ^ (i * 0x85EBCA77u); }

std::uint64_t round_up(std::uint64_t n, std::uint64_t to) { return (n + to - 1) / to * to; }

// Non-temporal stores of a few bytes: mem::nontemporal_copy streams whole
// 16-byte vectors and copies a shorter tail with memcpy, so an 8-byte store
// would not be streamed at all; MOVNTI streams 8 or 4 bytes.
void streaming_store(std::byte* dst, const std::byte* src, std::size_t n) {
#if XFER_VK_HAVE_MOVNTI
  if (n < 16) {
    for (; n >= 8; dst += 8, src += 8, n -= 8) {
      long long v;
      std::memcpy(&v, src, 8);
      _mm_stream_si64(reinterpret_cast<long long*>(dst), v);
    }
    if (n >= 4) {
      int v;
      std::memcpy(&v, src, 4);
      _mm_stream_si32(reinterpret_cast<int*>(dst), v);
      dst += 4, src += 4, n -= 4;
    }
    std::memcpy(dst, src, n);
    _mm_sfence();
    return;
  }
#endif
  mem::nontemporal_copy(dst, src, n);  // ends with SFENCE
}

class latency_transfer final : public store_latency_transfer {
 public:
  latency_transfer(const point_spec& p, const device_context& dev, compute_pipeline& pipe)
      : spec_(p), dev_(dev), pipe_(pipe), nt_(p.route == own_routes::cpu_store_nt_latency) {
    cuts_loops_ = dev.caps().driver_name == "llvmpipe";
    const api& a = vk();
    const auto t0 = clock::now();
    // The stored bytes, then (a line of their own further on) the abort word.
    abort_offset_ = round_up(spec_.bytes, 256);
    bar_ = buffer::allocate(dev_, abort_offset_ + 256, mem_class::device_local_host_visible);
    ans_ = buffer::allocate(dev_, 64, mem_class::host_cached);
    io_ = buffer::allocate(dev_, spec_.bytes, mem_class::host_cached);
    words_.assign(round_up(spec_.bytes, 4) / 4, 0);
    set_ = pipe_.bind(bar_.get(), abort_offset_ + 256, ans_.get(), 64);
    try {
      VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
      ai.commandPool = dev_.pool(dev_.compute_queue(0).family);
      ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
      ai.commandBufferCount = 1;
      check(a.vkAllocateCommandBuffers(dev_.get(), &ai, &cb_), "vkAllocateCommandBuffers");
      VkFenceCreateInfo fi{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
      check(a.vkCreateFence(dev_.get(), &fi, nullptr, &fence_), "vkCreateFence");
    } catch (...) {
      release();  // the pipeline's pool holds few sets: none may leak with a failed point
      throw;
    }
    costs_.alloc_s = seconds_since(t0);
    const auto t1 = clock::now();
    std::memset(bar_.mapped(), 0, abort_offset_ + 256);
    bar_.flush();
    set_answer(no_answer);
    costs_.touch_s = seconds_since(t1);
  }

  ~latency_transfer() override {
    if (submitter_.joinable()) submitter_.join();
    vk().vkDeviceWaitIdle(dev_.get());
    release();
  }

  store_latency_limits limits() const override { return limits_; }
  void set_limits(const store_latency_limits& l) override { limits_ = l; }

  sample run(std::size_t reps) override {
    reps = std::max<std::size_t>(reps, 1);
    if (reps > last_round) throw std::logic_error("cpu-store-latency: more rounds than a run can number");
    if (next_ + reps > last_round) next_ = 1;  // numbers start over; start() rewrites the BAR
    auto s = static_cast<std::uint32_t>(next_);  // the round being stored
    const auto rounds = static_cast<std::uint32_t>(reps);
    const std::size_t n = spec_.bytes;
    std::byte* bar = bar_.mapped();
    const std::byte* src = reinterpret_cast<const std::byte*>(words_.data());

    start(s, rounds, 1);
    // The time of the rounds alone. Where the driver cuts the shader's loops
    // short (lavapipe), the rounds go on in a new dispatch; each stretch is
    // timed to its last answered round, the relaunch left out.
    double secs = 0;
    auto t0 = clock::now(), last_answer = t0;
    auto give_up = t0 + seconds(limits_.answer_timeout_s);  // round r's, over all its dispatches
    for (std::uint32_t r = 1; r <= rounds;) {
      fill(s);
      if (r == limits_.corrupt_round) corrupt();
      if (r != limits_.skip_round) {
        // The bytes before the last word, a fence, then the last word: the
        // shader polls that one alone. The fence has every earlier store out
        // of the write-combining buffers first, and PCIe delivers posted
        // writes in order, so once the device sees the last word it can see
        // them all. (Polling every word put one serial device read per word
        // on the round: 188 us for 4 KiB on a PCIe Gen5 GPU.)
        const std::size_t head = flag_offset();
        if (nt_) {
          if (head) streaming_store(bar, src, head);
          streaming_store(bar + head, src + head, n - head);
        } else {
          std::memcpy(bar, src, head);
          // Out of the write-combining buffers now, not when they are next needed.
          std::atomic_thread_fence(std::memory_order_seq_cst);
          std::memcpy(bar + head, src + head, n - head);
          std::atomic_thread_fence(std::memory_order_seq_cst);
        }
        bar_.flush();
      }
      const std::optional<answer> cut = wait_answer(s, r, rounds, give_up);
      if (!cut) {
        if (cuts_loops_) last_answer = clock::now();
        ++s, ++r;
        give_up = clock::now() + seconds(limits_.answer_timeout_s);
        continue;
      }
      // The driver cut the dispatch short and it has ended: round r again,
      // numbered anew, in another, while the round's time lasts.
      if (clock::now() > give_up) no_answer_in_time(s, r, rounds, *cut);
      secs += std::chrono::duration<double>(last_answer - t0).count();
      ++s;
      start(s, rounds - r + 1, r);
      t0 = last_answer = clock::now();
    }
    secs += seconds_since(t0);
    finish();
    next_ = s;
    last_ = s - 1;
    return {secs, secs, {}, {}};
  }

  // Not core's pattern check (src/core/verify.cpp): a round stores words
  // made from its own number (word_of), not the pattern, and the device's
  // answer must name the last round; so this route checks both itself.
  void verify() override {
    poison_sample();
    run(1);
    check_sample();
  }
  // run() sets the answer and the BAR up itself; poisoned here all the same,
  // so that a run that never reached the device cannot pass on what an
  // earlier one left.
  void poison_sample() override {
    set_answer(no_answer);
    std::memset(bar_.mapped(), 0xa5, spec_.bytes);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    bar_.flush();
  }
  void check_sample() override {
    // The shader answered the last round, once it saw its last word.
    const std::uint32_t got = answer_seq();
    if (last_ == 0 || got != last_)
      throw verification_error(fmt::format("cpu-store-latency: the device's answer holds 0x{:08x}, not the last "
                                           "round's number 0x{:08x}",
                                           got, last_));
    // And what a device reader finds in the BAR now, copied out by the device.
    dev_.run_once(dev_.copy_queue(0), [&](VkCommandBuffer cb) {
      VkBufferCopy region{0, 0, spec_.bytes};
      vk().vkCmdCopyBuffer(cb, bar_.get(), io_.get(), 1, &region);
    });
    io_.invalidate();
    fill(last_);
    const auto* want = reinterpret_cast<const std::byte*>(words_.data());
    for (std::size_t i = 0; i < spec_.bytes; ++i)
      if (io_.mapped()[i] != want[i])
        throw verification_error(fmt::format(
            "cpu-store-latency: byte {} of the stored {} B holds 0x{:02x} as the device reads it, expected 0x{:02x}", i,
            spec_.bytes, static_cast<unsigned>(io_.mapped()[i]), static_cast<unsigned>(want[i])));
  }
  first_use setup_costs() const override { return costs_; }
  clock_kind timer_kind() const override { return clock_kind::wall; }
  double timer_resolution_s() const override { return wall_timer().resolution_s(); }
  std::uint64_t bytes_per_rep() const override { return spec_.bytes; }
  std::string note() const override {
    return "round trip: the CPU's store made visible to a device reader plus the device's answer back to host memory";
  }

 private:
  void release() noexcept {
    const api& a = vk();
    if (fence_) a.vkDestroyFence(dev_.get(), fence_, nullptr);
    if (cb_) a.vkFreeCommandBuffers(dev_.get(), dev_.pool(dev_.compute_queue(0).family), 1, &cb_);
    if (set_) pipe_.release(set_);
    fence_ = VK_NULL_HANDLE;
    cb_ = VK_NULL_HANDLE;
    set_ = VK_NULL_HANDLE;
  }
  static std::chrono::steady_clock::duration seconds(double s) {
    return std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(s));
  }
  std::atomic_ref<std::uint32_t> answer_word(std::size_t i) const {
    return std::atomic_ref<std::uint32_t>(reinterpret_cast<std::uint32_t*>(ans_.mapped())[i]);
  }
  std::atomic_ref<std::uint32_t> abort_word() const {
    return std::atomic_ref<std::uint32_t>(*reinterpret_cast<std::uint32_t*>(bar_.mapped() + abort_offset_));
  }
  std::uint32_t answer_seq() const {
    ans_.invalidate();  // a no-op where the memory is coherent, as host-cached memory usually is
    return answer_word(0).load(std::memory_order_acquire);
  }
  void set_answer(std::uint32_t v) {
    for (std::size_t i = 0; i < sizeof(answer) / 4; ++i) answer_word(i).store(i ? 0 : v, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    ans_.flush();
  }
  void fill(std::uint32_t s) {
    for (std::uint32_t i = 0; i < words_.size(); ++i) words_[i] = word_of(s, i);
  }
  // A waiter that has spun 100 us lets others run: on lavapipe the "device"
  // is a thread of this process that may need this CPU. A GPU answers well
  // within that, so its rounds never pay for a yield.
  void relax(std::uint64_t k, clock::time_point since) {
    if (yielding_ || ((k & 255) == 255 && clock::now() - since > std::chrono::microseconds(100))) {
      yielding_ = true;
      std::this_thread::yield();
    }
  }

  // Empty once round s is answered; where the driver cut the dispatch short
  // (it has ended), what it last saw; throws on anything else.
  std::optional<answer> wait_answer(std::uint32_t s, std::uint32_t r, std::uint32_t rounds,
                                    clock::time_point give_up) {
    const auto since = clock::now();
    yielding_ = false;
    for (std::uint64_t k = 0;; ++k) {
      const std::uint32_t v = answer_seq();
      if (v == s) return std::nullopt;
      if (v == (s | fail_bit)) return fail_round(s, r, rounds);
      if (v != s - 1)
        fail_run(fmt::format("the device's answer to round {} of {} holds 0x{:08x}: neither this round's number "
                             "0x{:08x} nor the last one's",
                             r, rounds, v, s),
                 true);
      if ((k & 255) == 0 && clock::now() > give_up) {
        abort_dispatch();
        no_answer_in_time(s, r, rounds, std::nullopt);
      }
      if (ended_.load(std::memory_order_acquire) && answer_seq() == v) {
        // The dispatch ended without answering: its loop was cut after an answer.
        if (!cuts_loops_) {
          finish();
          throw std::runtime_error(
              fmt::format("the polling dispatch ended without answering round {} of {}", r, rounds));
        }
        finish();
        answer a{};
        a.why = 3;
        a.seen = word_of(s - 1, 0) & word_mask(0);  // nothing wrong seen
        return a;
      }
      relax(k, since);
    }
  }

  // The shader gave up on round s and has returned: what it saw where the
  // driver cut its loop (the caller starts another), else throws saying it.
  answer fail_round(std::uint32_t s, std::uint32_t r, std::uint32_t rounds) {
    finish();
    ans_.invalidate();
    answer a{};
    std::memcpy(&a, ans_.mapped(), sizeof a);
    if (a.why == 3) {
      if (cuts_loops_) return a;
      throw std::runtime_error(fmt::format("round {} of {}: the driver ended the polling shader's loop by itself "
                                           "(only lavapipe's is known to, and is relaunched)",
                                           r, rounds));
    }
    if (a.why == 2)
      throw std::runtime_error(fmt::format("round {} of {}: the shader stopped on the abort word", r, rounds));
    const std::uint32_t before = word_of(s - 1, a.word) & word_mask(a.word);
    if (a.seen == before)
      throw std::runtime_error(fmt::format(
          "round {} of {}: the store of {} B did not become visible to the device within the shader's bound of {} "
          "polls (word {} still held the last round's 0x{:08x})",
          r, rounds, spec_.bytes, a.polls, a.word, a.seen));
    wrong_data(s, r, rounds, a);
  }

  std::uint32_t word_mask(std::uint32_t word) const {
    return word < spec_.bytes / 4 ? 0xffffffffu : (1u << (8 * (spec_.bytes % 4))) - 1;
  }
  [[noreturn]] void wrong_data(std::uint32_t s, std::uint32_t r, std::uint32_t rounds, const answer& a) const {
    const std::uint32_t m = word_mask(a.word);
    throw verification_error(fmt::format(
        "round {} of {}: word {} of the stored {} B held 0x{:08x} as the device read it, expected 0x{:08x} (the last "
        "round's was 0x{:08x}); the shader gave up after {} polls",
        r, rounds, a.word, spec_.bytes, a.seen, word_of(s, a.word) & m, word_of(s - 1, a.word) & m, a.polls));
  }
  // The CPU's bound on a round ran out (the dispatch has ended). `last`: what
  // the last dispatch saw where the driver cut it, wrong data included.
  [[noreturn]] void no_answer_in_time(std::uint32_t s, std::uint32_t r, std::uint32_t rounds,
                                      const std::optional<answer>& last) {
    if (last && last->seen != (word_of(s - 1, last->word) & word_mask(last->word))) wrong_data(s, r, rounds, *last);
    throw std::runtime_error(fmt::format("no answer from the device to round {} of {} within {} s (a store of {} B "
                                         "into device-local-host-visible memory it polls); the shader was told to stop",
                                         r, rounds, limits_.answer_timeout_s, spec_.bytes));
  }
  // Tells the shader to stop and waits for the dispatch to end.
  void abort_dispatch() {
    abort_word().store(1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    bar_.flush();
    finish();
  }
  // Where the last (polled) word starts: the bytes before it are stored first.
  std::size_t flag_offset() const { return (spec_.bytes - 1) / 4 * 4; }
  // Hook corrupt_round: a last word that is neither round's (its low byte is
  // always among the bytes stored).
  void corrupt() { words_.back() ^= 0xffu; }

  // Tells the shader to stop, waits for the dispatch, throws.
  [[noreturn]] void fail_run(const std::string& why, bool bad_data = false) {
    abort_dispatch();
    if (bad_data) throw verification_error(why);
    throw std::runtime_error(why);
  }

  // Untimed: the BAR holds the round before `first` (so every word of the
  // first store changes), the abort word is clear, the answer is none; then
  // the dispatch, and the wait until the shader says it runs. `r`: the round
  // stored next (hook corrupt_round: corrupt from the start, so that the
  // shader sees nothing else however late this thread stores).
  void start(std::uint32_t first, std::uint32_t rounds, std::uint32_t r) {
    fill(first - 1);
    if (r == limits_.corrupt_round) corrupt();
    std::memcpy(bar_.mapped(), words_.data(), spec_.bytes);
    abort_word().store(0, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    bar_.flush();
    set_answer(no_answer);
    launch(first, rounds);
    const auto start_by = clock::now() + seconds(limits_.start_timeout_s);
    const auto t0 = clock::now();
    yielding_ = false;
    for (std::uint64_t k = 0;; ++k) {
      const std::uint32_t v = answer_seq();
      if (v == first - 1) return;
      if (v == (first | fail_bit)) {
        // Cut short before this thread saw it start (lavapipe's "device" is
        // a thread that may run while this one waits): again.
        (void)fail_round(first, r, rounds);  // throws unless the driver cut it
        if (clock::now() < start_by) {
          set_answer(no_answer);
          launch(first, rounds);
          continue;
        }
      }
      if (ended_.load(std::memory_order_acquire) && answer_seq() == v && cuts_loops_ && clock::now() < start_by) {
        finish();  // cut before it answered anything
        set_answer(no_answer);
        launch(first, rounds);
        continue;
      }
      if ((k & 255) == 0 && clock::now() > start_by)
        fail_run(fmt::format("the shader did not start within {} s of its submission (its answer holds 0x{:08x})",
                             limits_.start_timeout_s, v));
      relax(k, t0);
    }
  }

  // Records and submits one dispatch of `rounds` rounds. From a thread of its
  // own: nothing forbids a driver to run the dispatch inside vkQueueSubmit,
  // and this thread must be free to store while the shader polls. The
  // submitting thread then waits for the fence until finish() stops it.
  void launch(std::uint32_t first, std::uint32_t rounds) {
    const api& a = vk();
    check(a.vkResetFences(dev_.get(), 1, &fence_), "vkResetFences");
    VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    check(a.vkBeginCommandBuffer(cb_, &bi), "vkBeginCommandBuffer");
    const std::uint32_t push[5] = {first, rounds, static_cast<std::uint32_t>(spec_.bytes), limits_.max_polls,
                                   static_cast<std::uint32_t>(abort_offset_ / 4)};
    pipe_.dispatch(cb_, set_, push, 1);
    // Its answers, for the host to read once the fence has signalled (the
    // CPU's writes before the submission need nothing: submitting makes them visible).
    VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
    mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
    a.vkCmdPipelineBarrier(cb_, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, nullptr,
                           0, nullptr);
    check(a.vkEndCommandBuffer(cb_), "vkEndCommandBuffer");
    submit_rc_ = VK_SUCCESS;
    ended_.store(false, std::memory_order_relaxed);
    stop_waiting_.store(false, std::memory_order_relaxed);
    submitter_ = std::thread([this] {
      const api& a = vk();
      VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
      si.commandBufferCount = 1;
      si.pCommandBuffers = &cb_;
      VkResult rc = a.vkQueueSubmit(dev_.compute_queue(0).queue, 1, &si, fence_);
      // In slices: a run of many rounds may last long; finish() says when to stop waiting.
      while (rc == VK_SUCCESS || rc == VK_TIMEOUT) {
        rc = a.vkWaitForFences(dev_.get(), 1, &fence_, VK_TRUE, 100'000'000);
        if (rc != VK_TIMEOUT || stop_waiting_.load(std::memory_order_acquire)) break;
      }
      submit_rc_ = rc;
      ended_.store(true, std::memory_order_release);
    });
  }
  // Waits for the dispatch to end, bounded: called once its last round is
  // answered or it was told to stop, when it has nothing left but to return.
  // Then the CPU may read its answers.
  void finish() {
    if (submitter_.joinable()) {
      const auto until = clock::now() + seconds(end_timeout_s);
      while (!ended_.load(std::memory_order_acquire) && clock::now() < until)
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      stop_waiting_.store(true, std::memory_order_release);
      submitter_.join();
    }
    if (submit_rc_ == VK_TIMEOUT)
      throw std::runtime_error(fmt::format(
          "the polling dispatch did not end within {} s of its last answer or of being told to stop", end_timeout_s));
    check(submit_rc_, "the polling dispatch", "cpu-store-latency");
  }
  static constexpr double end_timeout_s = 10;

  point_spec spec_;
  const device_context& dev_;
  compute_pipeline& pipe_;
  bool nt_;
  store_latency_limits limits_;
  std::uint64_t abort_offset_ = 0;
  buffer bar_, ans_, io_;
  std::vector<std::uint32_t> words_;  // the round being stored (cached memory)
  VkDescriptorSet set_ = VK_NULL_HANDLE;
  VkCommandBuffer cb_ = VK_NULL_HANDLE;
  VkFence fence_ = VK_NULL_HANDLE;
  std::thread submitter_;
  bool yielding_ = false;
  std::atomic<bool> ended_{false};  // the submitting thread is done: the dispatch ended (or its wait gave up)
  std::atomic<bool> stop_waiting_{false};  // finish() gave up on the dispatch's end
  bool cuts_loops_ = false;  // the driver ends long shader loops by itself (lavapipe)
  VkResult submit_rc_ = VK_SUCCESS;
  std::uint64_t next_ = 1;   // the next run's first round
  std::uint32_t last_ = 0;   // the last round answered; 0: none yet
  first_use costs_;
};

}  // namespace

bool is_store_latency_route(route_kind r) {
  return r == own_routes::cpu_store_latency || r == own_routes::cpu_store_nt_latency;
}

std::string store_latency_kind_gap(route_kind route, const std::string& kind) {
  if (kind == "device-local-host-visible") return {};
  return fmt::format("route {} times a store into device memory through the BAR "
                     "(device-local-host-visible) until a device reader sees it; {} is host memory",
                     to_string(route), kind);
}

void require_store_latency(const point_spec& p) {
  if (auto why = store_latency_kind_gap(p.route, p.host_memory); !why.empty()) throw skip_point(why);
  if (p.bytes > store_latency_max_bytes)
    throw skip_point(fmt::format("route {} times stores of up to {} B (a message; cpu-store gives the bandwidth "
                                 "by size); {} B asked",
                                 to_string(p.route), store_latency_max_bytes, p.bytes));
  if (poll_shader_spirv().empty())
    throw skip_point(
        "this build has no SPIR-V for the polling shader (no glslc or glslangValidator at configure time)");
}

std::unique_ptr<store_latency_transfer> make_store_latency_transfer(const point_spec& p, const device_context& dev,
                                                                    compute_pipeline& pipe) {
  return std::make_unique<latency_transfer>(p, dev, pipe);
}

}  // namespace xfer::vulkan
