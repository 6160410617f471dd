// The roofline bench's device part: the real staged copier under each
// design, through the library's API (make_staged_step, staged_copier with
// a given staged_tuning), timed beside a pinned copy of the same size on
// the same device in the same run (the step's own pinned memory and lane:
// cudaHostAlloc and cudaMemcpyAsync on a stream), pairs interleaved so a
// drifting machine moves both; every design's data checked both ways.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <vector>
#include <fmt/format.h>
#include <xfer/config.hpp>
#include <xfer/core/size.hpp>
#include <xfer/mem/staged/staged_copier.hpp>
#if XFER_HAVE_CUDA
#include <xfer/mem/cuda/staged_step.hpp>
#endif

#include "roofline.hpp"

namespace roofline {

#if !XFER_HAVE_CUDA

nlohmann::json run_device(const device_options&, dram_counter&) {
  std::printf("\n== device: not a CUDA build, no staged copier timed\n");
  return {{"skipped", "not built with CUDA"}};
}

std::unique_ptr<xfer::mem::device_step> gpu_step(std::string& why) {
  why = "not built with CUDA";
  return nullptr;
}

#else

namespace {

using clock_type = std::chrono::steady_clock;

template <class F>
double timed(F&& f) {
  const auto t0 = clock_type::now();
  f();
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

xfer::mem::staged_tuning tuning_of(const design& d) {
  xfer::mem::staged_tuning t;
  t.chunk_bytes = d.chunk;
  t.ring_depth = d.ring;
  t.threads = d.threads;
  t.stream_stores = d.stream_stores;
  t.size_chunks = d.size_chunks;
  // Every size through the pipeline: the pipeline is what is put on the roofline.
  t.handoff_to_device_bytes = t.handoff_to_host_bytes = 0;
  return t;
}

}  // namespace

std::unique_ptr<xfer::mem::device_step> gpu_step(std::string& why) {
  try {
    return xfer::cuda::make_staged_step(0);
  } catch (const std::exception& e) {
    why = e.what();
    return nullptr;
  }
}

nlohmann::json run_device(const device_options& o, dram_counter& counter) {
  std::string why;
  const std::unique_ptr<xfer::mem::device_step> step = gpu_step(why);
  if (!step) {
    std::printf("\n== device: none (%s)\n", why.c_str());
    return {{"skipped", why}};
  }
  const std::size_t max = *std::max_element(o.sizes.begin(), o.sizes.end());
  std::vector<unsigned char> src(max), back(max);
  for (std::size_t i = 0; i < max; ++i) src[i] = static_cast<unsigned char>(i * 131 + (i >> 13));
  std::memset(back.data(), 0, max);
  const xfer::mem::device_ref dev = step->allocate(max);
  auto& pinned_memory = step->staging_memory();
  void* pinned = pinned_memory.allocate(max, 4096);
  struct cleanup {
    xfer::mem::device_step& s;
    xfer::mem::device_ref d;
    void* p;
    std::size_t n;
    ~cleanup() {
      s.staging_memory().deallocate(p, n, 4096);
      s.deallocate(d);
    }
  } cleanup_{*step, dev, pinned, max};
  std::memcpy(pinned, src.data(), max);
  auto lane = step->open_lane(1);

  nlohmann::json out;
  out["device"] = step->device_key();
  out["step"] = std::string(step->name());
  out["points"] = nlohmann::json::array();
  std::printf("\n== device %s: staged copier against a pinned copy of the same size (median of interleaved pairs)\n",
              step->device_key().c_str());
  std::printf("%-16s %6s %4s %6s %5s %11s %11s %8s %7s %10s %11s %9s\n", "design", "size", "dir", "chunk", "fits",
              "staged GB/s", "pinned GB/s", "st/pin", "B/B", "", "bound GB/s", "st/bound");
  for (const auto& d : o.designs) {
    const auto tuning = tuning_of(d);
    xfer::mem::staged_copier_options options;
    options.tuning = tuning;
    xfer::mem::staged_copier copier(*step, options);
    for (const std::size_t n : o.sizes)
      for (const bool to_device : {true, false}) {
        auto pinned_copy = [&](bool h2d) {
          if (h2d) lane->to_device(pinned, dev, 0, n);
          else lane->to_host(pinned, dev, 0, n);
          lane->record(0);
          lane->wait(0);
        };
        auto plain_pinned = [&] { pinned_copy(to_device); };
        auto staged = [&] {
          if (to_device) copier.copy_to_device(dev, 0, src.data(), n);
          else copier.copy_to_host(back.data(), dev, 0, n);
        };
        plain_pinned();
        staged();  // warm-up: staging pinned and cached, threads awake
        std::vector<double> tp, ts;
        const auto start = clock_type::now();
        for (std::size_t pair = 0; pair < 200; ++pair) {
          if (pair >= 3 && std::chrono::duration<double>(clock_type::now() - start).count() > o.seconds) break;
          if (pair % 2 == 0) tp.push_back(timed(plain_pinned)), ts.push_back(timed(staged));
          else ts.push_back(timed(staged)), tp.push_back(timed(plain_pinned));
        }
        std::optional<double> counted;
        if (counter.available()) {
          counter.start();
          staged();
          const auto [r, w] = counter.stop();
          counted = (r + w) / static_cast<double>(n);
        }
        // The data: the staged copy one way, the pinned copy the other (the
        // pinned buffer holds the source's bytes again afterwards).
        const unsigned char* arrived = back.data();
        std::memset(back.data(), 0, n);
        if (to_device) {
          std::memset(pinned, 0, n);
          pinned_copy(true);  // the device zeroed first: a copy that moved nothing shows
          copier.copy_to_device(dev, 0, src.data(), n);
          pinned_copy(false);
          arrived = static_cast<const unsigned char*>(pinned);
        } else {
          pinned_copy(true);
          copier.copy_to_host(back.data(), dev, 0, n);
        }
        const bool intact = std::memcmp(arrived, src.data(), n) == 0;
        std::memcpy(pinned, src.data(), n);
        if (!intact)
          throw std::runtime_error(fmt::format("design {}, {} bytes {}: the data did not arrive intact", d.label, n,
                                               to_device ? "to the device" : "to the host"));
        const rate rs = summarize(static_cast<double>(n), ts), rp = summarize(static_cast<double>(n), tp);
        const std::size_t chunk = xfer::mem::staged_chunk_for(n, tuning, o.llc);
        const std::size_t slots = std::min<std::size_t>(d.ring, (n + chunk - 1) / chunk);
        const bool fit = fits(chunk * slots, o.llc, o.fit_fraction);
        const auto model = staged_model(to_device, fit, d.stream_stores);
        const auto bpb = bytes_per_byte(model, counted);
        const double b = bpb["value"].get<double>();
        const double link = o.link_gbs ? *o.link_gbs : rp.median_gbs;
        const double bound = std::min(link, b > 0 ? o.memory_gbs / b : link);
        std::printf("%-16s %6s %4s %6s %5s %11.2f %11.2f %7.0f%% %7.2f %10s %11.2f %8.0f%%\n", d.label.c_str(),
                    xfer::format_size(n).c_str(), to_device ? "h2d" : "d2h", xfer::format_size(chunk).c_str(),
                    fit ? "yes" : "no", rs.median_gbs, rp.median_gbs, 100 * rs.median_gbs / rp.median_gbs, b,
                    counted ? "(counted)" : "(model)", bound, 100 * rs.median_gbs / bound);
        std::fflush(stdout);
        out["points"].push_back({{"design", d.label},
                                 {"chunk_bytes", d.chunk},
                                 {"ring_depth", d.ring},
                                 {"threads", d.threads},
                                 {"stores", d.stream_stores ? "non-temporal" : "regular (memcpy)"},
                                 {"size_chunks", d.size_chunks},
                                 {"bytes", n},
                                 {"direction", to_device ? "h2d" : "d2h"},
                                 {"chunk_used_bytes", chunk},
                                 {"ring_used_bytes", chunk * slots},
                                 {"fits_llc", fit},
                                 {"staged", to_json(rs)},
                                 {"pinned_copy_async", to_json(rp)},
                                 {"dram_bytes_per_byte", bpb},
                                 {"link_gbs", link},
                                 {"link_from", o.link_gbs ? "--link-gbs" : "the pinned copy's median, this run"},
                                 {"roofline_bound_gbs", bound},
                                 {"verified", true}});
      }
  }
  return out;
}

#endif

}  // namespace roofline
