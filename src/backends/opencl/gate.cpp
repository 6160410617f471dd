#include "gate.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <limits>

namespace xfer::opencl {

// ---- gate -------------------------------------------------------------------

user_event_gate::user_event_gate(context ctx, std::chrono::milliseconds deadline)
    : ctx_(std::move(ctx)), deadline_(deadline) {}

user_event_gate::~user_event_gate() {
  {
    std::lock_guard lock(m_);
    // Never leave commands waiting on an event nobody will complete (an
    // exception between close() and open() gets here).
    if (!completed_) complete_locked();
    quit_ = true;
  }
  cv_.notify_all();
  if (watchdog_.joinable()) watchdog_.join();
}

void user_event_gate::close() {
  cl_int rc = CL_SUCCESS;
  opencl::event e(clCreateUserEvent(ctx_.get(), &rc));
  check(rc, "clCreateUserEvent");
  {
    std::lock_guard lock(m_);
    if (!completed_) complete_locked();
    event_ = std::move(e);
    completed_ = false;
    closed_ = true;
    forced_ = false;
    closed_at_ = std::chrono::steady_clock::now();
    if (!watchdog_.joinable()) watchdog_ = std::thread([this] { watch(); });
  }
  cv_.notify_all();
}

void user_event_gate::open() {
  std::lock_guard lock(m_);
  closed_ = false;
  if (!completed_) complete_locked();
  event_ = opencl::event();
  cv_.notify_all();
}

bool user_event_gate::forced() const {
  std::lock_guard lock(m_);
  return forced_;
}

std::string user_event_gate::give_way_rule() const {
  return fmt::format("its watchdog opens it after {} ms", deadline_.count());
}

void user_event_gate::complete_locked() {
  completed_ = true;
  // Completing can only fail for an invalid event; nothing useful to do then
  // but let the waiting commands' own errors surface.
  clSetUserEventStatus(event_.get(), CL_COMPLETE);
}

void user_event_gate::watch() {
  std::unique_lock lock(m_);
  while (!quit_) {
    if (!closed_ || completed_) {
      cv_.wait(lock);
      continue;
    }
    const auto due = closed_at_ + deadline_;
    if (std::chrono::steady_clock::now() < due) {
      cv_.wait_until(lock, due);
      continue;
    }
    // Still closed past the deadline: an enqueue is blocked behind the gate.
    forced_ = true;
    complete_locked();
  }
}

// ---- timer ------------------------------------------------------------------

namespace {

cl_ulong profile(const event& e, cl_profiling_info what, const char* name) {
  cl_ulong t = 0;
  check(clGetEventProfilingInfo(e.get(), what, sizeof t, &t, nullptr), "clGetEventProfilingInfo", name);
  return t;
}

}  // namespace

event_span_timer::event_span_timer(std::vector<cl_command_queue> lanes, double resolution_s,
                                   std::vector<std::string> lane_names)
    : names_(std::move(lane_names)), resolution_s_(resolution_s) {
  for (cl_command_queue q : lanes) lanes_.push_back({q, {}, {}, 0});
}

void event_span_timer::start() {
  for (auto& l : lanes_) l = {l.queue, {}, {}, 0};
  queued_to_end_s_ = 0;
}

void event_span_timer::stop() {
  for (auto& l : lanes_)
    if (l.last) check(clFlush(l.queue), "clFlush");
}

double event_span_timer::seconds() {
  std::vector<cl_event> lasts;
  for (auto& l : lanes_)
    if (l.last) lasts.push_back(l.last.get());
  if (lasts.empty()) return 0;
  const cl_int rc = clWaitForEvents(static_cast<cl_uint>(lasts.size()), lasts.data());
  if (rc != CL_SUCCESS) {
    // Name the command's own failure, not just "an event in the list failed".
    for (cl_event e : lasts) {
      cl_int status = CL_COMPLETE;
      clGetEventInfo(e, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr);
      if (status < 0) throw cl_error(status, "clWaitForEvents", "a timed command failed");
    }
    check(rc, "clWaitForEvents", fmt::format("{} events", lasts.size()));
  }
  cl_ulong begin = std::numeric_limits<cl_ulong>::max(), end = 0, queued = std::numeric_limits<cl_ulong>::max();
  for (auto& l : lanes_) {
    if (!l.first || !l.last) continue;
    const cl_ulong s = profile(l.first, CL_PROFILING_COMMAND_START, "CL_PROFILING_COMMAND_START");
    const cl_ulong q = profile(l.first, CL_PROFILING_COMMAND_QUEUED, "CL_PROFILING_COMMAND_QUEUED");
    const cl_ulong e = profile(l.last, CL_PROFILING_COMMAND_END, "CL_PROFILING_COMMAND_END");
    l.span_s = e > s ? static_cast<double>(e - s) * 1e-9 : 0.0;
    begin = std::min(begin, s);
    queued = std::min(queued, q);
    end = std::max(end, e);
  }
  if (end == 0) return 0;
  queued_to_end_s_ = end > queued ? static_cast<double>(end - queued) * 1e-9 : 0.0;
  return end > begin ? static_cast<double>(end - begin) * 1e-9 : 0.0;
}

void event_span_timer::add_parts(std::map<std::string, double>& parts) const {
  parts["queued_to_end"] += queued_to_end_s_;
  for (std::size_t l = 0; l < names_.size() && l < lanes_.size(); ++l) parts[names_[l]] += lanes_[l].span_s;
}

void event_span_timer::cancel() noexcept {
  for (auto& l : lanes_) clFinish(l.queue);
}

}  // namespace xfer::opencl
