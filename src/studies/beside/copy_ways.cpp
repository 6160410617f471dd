#include <xfer/beside/copy_ways.hpp>

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <optional>
#include <stdexcept>
#include <xfer/core/interrupt.hpp>
#include <xfer/mem/blocks/block_copier.hpp>
#include <xfer/mem/staged/staged_copier.hpp>

namespace xfer::beside {

namespace {

using mem::staged_direction;

constexpr std::size_t page = 4096;

void fill_pattern(unsigned char* p, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<unsigned char>(i * 131 + 7);
}

std::string first_difference(const unsigned char* got, const unsigned char* want, std::size_t n,
                             const std::string& where) {
  const auto m = std::mismatch(want, want + n, got);
  if (m.first == want + n) return {};
  return fmt::format("{}: byte {} holds {} where {} was copied", where, m.first - want, static_cast<unsigned>(*m.second),
                     static_cast<unsigned>(*m.first));
}

// Host memory from a resource, returned to it.
class host_buffer {
 public:
  host_buffer(std::pmr::memory_resource& r, std::size_t bytes)
      : r_(r), bytes_(bytes), p_(static_cast<unsigned char*>(r.allocate(bytes, page))) {}
  ~host_buffer() { r_.deallocate(p_, bytes_, page); }
  host_buffer(const host_buffer&) = delete;
  host_buffer& operator=(const host_buffer&) = delete;
  unsigned char* data() const { return p_; }

 private:
  std::pmr::memory_resource& r_;
  std::size_t bytes_;
  unsigned char* p_;
};

// plain and staged: pageable host memory, the device_step's device memory.
class contiguous_side final : public copy_side {
 public:
  contiguous_side(std::string name, mem::device_step& step, const copy_shape& shape, bool staged)
      : name_(std::move(name)), step_(step), direction_(shape.direction), host_(shape.bytes()),
        dev_(step.allocate(shape.bytes())) {
    if (staged)
      copier_ = std::make_unique<mem::staged_copier>(
          step, mem::staged_copier_options{.tuning = {}, .max_cached_staging_bytes = {},
                                           .thread_start = block_stop_signals_in_this_thread, .budget = {},
                                           .registrations = nullptr});
    want_.resize(host_.size());
    fill_pattern(want_.data(), want_.size());
    if (direction_ == staged_direction::to_device) host_ = want_;
    else step_.plain_to_device(dev_, 0, want_.data(), want_.size());
  }
  ~contiguous_side() override {
    copier_.reset();
    step_.deallocate(dev_);
  }
  std::string name() const override { return name_; }
  double amount_per_step() const override { return static_cast<double>(host_.size()); }
  void step() override {
    const std::size_t n = host_.size();
    if (direction_ == staged_direction::to_device) {
      if (copier_) copier_->copy_to_device(dev_, 0, host_.data(), n);
      else step_.plain_to_device(dev_, 0, host_.data(), n);
    } else {
      if (copier_) copier_->copy_to_host(host_.data(), dev_, 0, n);
      else step_.plain_to_host(host_.data(), dev_, 0, n);
    }
  }
  std::string check() override {
    if (direction_ == staged_direction::to_host) return first_difference(host_.data(), want_.data(), want_.size(), "the host copy");
    std::vector<unsigned char> back(want_.size());
    step_.plain_to_host(back.data(), dev_, 0, back.size());
    return first_difference(back.data(), want_.data(), want_.size(), "the device copy");
  }

 private:
  std::string name_;
  mem::device_step& step_;
  staged_direction direction_;
  std::vector<unsigned char> host_, want_;
  mem::device_ref dev_;
  std::unique_ptr<mem::staged_copier> copier_;
};

// copy and the block ways: pinned host memory (the block step's staging
// memory), the block step's device memory. A queue is opened for each use
// and closed after it: a step has one queue open at a time (block_step.hpp),
// and the block ways' movers open their own.
class pinned_side : public copy_side {
 public:
  pinned_side(std::string name, mem::block_step& step, const copy_shape& shape)
      : name_(std::move(name)), step_(step), shape_(shape), dev_(step.allocate(shape.bytes())),
        host_(step.staging_memory(), shape.bytes()), want_(shape.bytes()) {
    fill_pattern(want_.data(), want_.size());
    if (shape_.direction == staged_direction::to_device)
      std::copy(want_.begin(), want_.end(), host_.data());
    else
      dma(dev_.handle, want_.data(), want_.size());
  }
  ~pinned_side() override { step_.deallocate(dev_); }
  std::string name() const override { return name_; }
  double amount_per_step() const override { return static_cast<double>(shape_.bytes()); }

 protected:
  // The destination's bytes as the host sees them.
  std::vector<unsigned char> destination() {
    std::vector<unsigned char> got(shape_.bytes());
    if (shape_.direction == staged_direction::to_host)
      std::copy(host_.data(), host_.data() + got.size(), got.begin());
    else
      dma(got.data(), dev_.handle, got.size());
    return got;
  }
  // One DMA through a queue of its own, done when it returns.
  void dma(void* dst, const void* src, std::size_t bytes) {
    const auto queue = step_.open_queue(nullptr);
    queue->copy(dst, src, bytes);
    queue->finish();
  }
  void* source() const { return shape_.direction == staged_direction::to_device ? host_.data() : dev_.handle; }
  void* target() const { return shape_.direction == staged_direction::to_device ? dev_.handle : host_.data(); }

  std::string name_;
  mem::block_step& step_;
  copy_shape shape_;
  mem::device_ref dev_;  // first: allocating makes the step's device current, as its pinned memory needs
  host_buffer host_;
  std::vector<unsigned char> want_;  // the source's bytes
};

class engine_side final : public pinned_side {
 public:
  using pinned_side::pinned_side;
  void step() override { dma(target(), source(), shape_.bytes()); }
  std::string check() override {
    const auto got = destination();
    return first_difference(got.data(), want_.data(), want_.size(), "the copy's destination");
  }
};

// Empty where every block of `pairs` arrived: got's block dst holds want's block src.
std::string check_blocks(const std::vector<unsigned char>& got, const std::vector<unsigned char>& want,
                         const std::vector<mem::block_pair>& pairs, std::size_t b) {
  for (const auto& p : pairs) {
    const auto from = static_cast<std::size_t>(p.src) * b, to = static_cast<std::size_t>(p.dst) * b;
    if (auto d = first_difference(got.data() + to, want.data() + from, b,
                                  fmt::format("block {} (from block {})", p.dst, p.src));
        !d.empty())
      return d;
  }
  return {};
}

class block_side final : public pinned_side {
 public:
  block_side(mem::block_way way, mem::block_step& step, const copy_shape& shape)
      : pinned_side(std::string(mem::to_string(way)), step, shape),
        pairs_(mem::scattered_block_pairs(shape.blocks, shape.blocks, shape.blocks, 53)),
        mover_(mem::make_block_mover(way, step)),
        access_(step.access(host_.data(), shape.bytes())) {
    job_ = {shape.direction, host_.data(), shape.bytes(), dev_, shape.block_bytes, pairs_, nullptr};
    mem::check_block_job(job_, step);
  }
  std::string refusal() const override { return mover_->refusal(job_, access_); }
  void step() override { mover_->move(job_, access_); }
  std::string check() override { return check_blocks(destination(), want_, pairs_, shape_.block_bytes); }

 private:
  std::vector<mem::block_pair> pairs_;
  std::unique_ptr<mem::block_mover> mover_;
  mem::host_access access_;
  mem::block_job job_;
};

// The block copier over the step, its ways ranked by `policy`: what a
// program that leaves the choice to libxfer gets.
class copier_side final : public pinned_side {
 public:
  copier_side(std::string name, mem::block_policy policy, mem::block_step& step, const copy_shape& shape)
      : pinned_side(std::move(name), step, shape),
        pairs_(mem::scattered_block_pairs(shape.blocks, shape.blocks, shape.blocks, 53)),
        copier_(step, mem::block_copier_options{.way = {}, .policy = policy, .calibrate = true, .calibration = {},
                                                .cache_file = {}}) {
    job_ = {shape.direction, host_.data(), shape.bytes(), dev_, shape.block_bytes, pairs_, nullptr};
    mem::check_block_job(job_, step);
  }
  void step() override { chose_ = copier_.copy(job_); }
  std::string chose() const override { return chose_ ? std::string(mem::to_string(*chose_)) : std::string(); }
  std::string check() override { return check_blocks(destination(), want_, pairs_, shape_.block_bytes); }

 private:
  std::vector<mem::block_pair> pairs_;
  mem::block_copier copier_;
  mem::block_job job_;
  std::optional<mem::block_way> chose_;
};

}  // namespace

std::vector<std::string> way_names() {
  return {"plain", "staged", "copy", "loop", "batch", "kernel", "pack", "auto", "auto-beside"};
}

bool is_block_way(const std::string& name) {
  return name == "loop" || name == "batch" || name == "kernel" || name == "pack" || name == "auto" ||
         name == "auto-beside";
}

std::unique_ptr<copy_side> make_way(const std::string& name, const copy_shape& shape, mem::device_step& contiguous,
                                    mem::block_step& blocks) {
  if (name == "plain" || name == "staged")
    return std::make_unique<contiguous_side>(name, contiguous, shape, name == "staged");
  if (name == "copy") return std::make_unique<engine_side>(name, blocks, shape);
  if (name == "auto" || name == "auto-beside")
    return std::make_unique<copier_side>(
        name, name == "auto" ? mem::block_policy::alone : mem::block_policy::beside_compute, blocks, shape);
  if (is_block_way(name)) return std::make_unique<block_side>(mem::parse_block_way(name), blocks, shape);
  throw std::invalid_argument(fmt::format("way '{}': expected one of {}", name, fmt::join(way_names(), ", ")));
}

}  // namespace xfer::beside
