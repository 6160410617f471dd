// Many small blocks on one GPU (issue 38): each way of the block copier
// alone (loop, batch, kernel, pack), the copier's own choice ("auto") and
// one contiguous pinned copy of the same total, interleaved sample by
// sample (the order shuffled each round) so drift hits every way alike. Every way's result is checked once
// (every block at its destination) before it is timed.
//
//   build/bench/xfer_bench_blocks_study [reps [probe MiB]] > blocks.tsv
//
// Pinned rows add probes (probe-batch-Ns, probe-forked-8s, probe-*adjacent-8s,
// contiguous-same-array): a batch spread over N raw streams, or forked from
// the study's stream by events; the same count of copies of the same size
// with the host side or both sides adjacent; one copy from the scattered
// ways' own host array. Measured beside the ways, not ways themselves.
//
// Prints one line per (direction, host kind, block size, way): the median
// and best GB/s of `reps` copies. Not a test: speed lives here.
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <numeric>
#include <random>
#include <span>
#include <string>
#include <vector>
#include <xfer/mem/blocks/block_copier.hpp>
#include <xfer/mem/cuda/block_step.hpp>

namespace {

using namespace xfer;
using dir = mem::staged_direction;
using clock_type = std::chrono::steady_clock;

struct host_buffer {
  bool pinned;
  std::size_t bytes;
  unsigned char* p = nullptr;
  host_buffer(bool pin, std::size_t n) : pinned(pin), bytes(n) {
    if (pinned) {
      if (cudaHostAlloc(reinterpret_cast<void**>(&p), n, cudaHostAllocMapped) != cudaSuccess) std::abort();
    } else {
      p = static_cast<unsigned char*>(std::aligned_alloc(4096, (n + 4095) / 4096 * 4096));
    }
    for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<unsigned char>(i * 131 + (i >> 12));
  }
  ~host_buffer() { pinned ? (void)cudaFreeHost(p) : std::free(p); }
};

// Every destination block holds its source block.
bool moved_right(const mem::block_job& j, const unsigned char* dev_copy) {
  const bool h2d = j.direction == dir::to_device;
  const auto* host = static_cast<const unsigned char*>(j.host);
  for (const auto& p : j.pairs) {
    const unsigned char* src = (h2d ? host : dev_copy) + p.src * j.block_bytes;
    const unsigned char* dst = (h2d ? dev_copy : host) + p.dst * j.block_bytes;
    if (std::memcmp(src, dst, j.block_bytes) != 0) return false;
  }
  return true;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const unsigned reps = argc > 1 ? unsigned(std::atoi(argv[1])) : 15;
  auto step = cuda::make_block_step(0);
  // A second argument: the choice's calibration probe in MiB (the library's
  // default otherwise), to compare probe sizes against the ways they rank.
  mem::block_copier_options options;
  if (argc > 2) options.calibration.probe_bytes = std::size_t(std::atoi(argv[2])) << 20;
  mem::block_copier copier(*step, options);
  cudaStream_t stream;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  cudaStream_t probe_streams[16];
  for (auto& s : probe_streams) cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  cudaEvent_t fork_join[8];
  for (auto& e : fork_join) cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
  struct point {
    std::size_t blocks, block_bytes;
  };
  const std::vector<point> points{{4096, 16 << 10}, {16384, 4 << 10}, {256, 256 << 10},
                                  {128, 512 << 10}, {64, 1 << 20},    {32, 2 << 20}};
  std::printf("direction\thost\tblock_bytes\tblocks\tway\tmedian_GBps\tbest_GBps\tnote\n");
  for (const point& pt : points)
    for (bool pinned : {true, false})
      for (dir d : {dir::to_device, dir::to_host}) {
        // Both arrays twice the blocks moved: sources and destinations scattered.
        const std::size_t total = pt.blocks * pt.block_bytes, span = 2 * total;
        host_buffer host(pinned, span);
        const mem::device_ref dev = step->allocate(span);
        cudaMemset(dev.handle, 0, span);
        const auto pairs = mem::scattered_block_pairs(pt.blocks, 2 * pt.blocks, 2 * pt.blocks, 38);
        const mem::block_job job{d, host.p, span, dev, pt.block_bytes, pairs, stream};
        const auto access = step->access(host.p, span);
        host_buffer contiguous_host(true, total);
        // The ways to time: each mover alone, the copier's choice, one copy.
        std::vector<std::pair<std::string, std::function<void()>>> ways;
        std::vector<std::string> notes;
        for (mem::block_way w : mem::all_block_ways) {
          auto& m = copier.mover(w);
          if (const auto why = m.refusal(job, access); !why.empty()) {
            std::printf("%s\t%s\t%zu\t%zu\t%s\t-\t-\tskipped: %s\n", d == dir::to_device ? "h2d" : "d2h",
                        pinned ? "pinned" : "pageable", pt.block_bytes, pt.blocks, std::string(to_string(w)).c_str(),
                        why.c_str());
            continue;
          }
          ways.emplace_back(std::string(to_string(w)), [&m, &job, access] { m.move(job, access); });
        }
        ways.emplace_back("auto(" + std::string(to_string(copier.choose(job))) + ")", [&] { copier.copy(job); });
        // Probes, not ways of the copier (pinned rows only): what raw CUDA
        // calls reach beside the ways, and where the rest of the gap to one
        // contiguous copy lies (the batch way's cut:
        // docs/decisions/0003-block-copier-probe-and-ways.md). So:
        //   probe-batch-4s/16s      one batch cut over 4 or 16 raw streams
        //                           (the way's former and a larger count);
        //   probe-adjacent-8s       the same count of copies of the same size,
        //                           in one batch over 8 streams, between
        //                           adjacent places: the contiguous copy's
        //                           bytes cut in pieces. Near the batch way,
        //                           the cost is the copies' count; near the
        //                           contiguous copy, it is the scatter;
        //   probe-host-adjacent-8s  the host side adjacent, the device side
        //                           scattered as the pairs say: which side's
        //                           scatter costs.
        // The adjacent probes and the contiguous copy use another host array
        // than the scattered ways, and the way forks and joins with events;
        // these separate the array's cost from the scatter's. So:
        //   probe-same-array-adjacent-8s  adjacent, in the scattered ways'
        //                           own host array: the array or the scatter;
        //   contiguous-same-array   one copy from or to that array;
        //   probe-forked-8s         the raw batch over 8 streams forked from
        //                           and joined into the study's stream by
        //                           events without timing, as the way does:
        //                           the events or the way's other costs.
        std::vector<void*> dsts, srcs, adjacent_dsts, adjacent_srcs, host_adjacent_dsts, host_adjacent_srcs,
            same_array_dsts, same_array_srcs;
        std::vector<std::array<double, 4>> phases;  // open, submit, finish, close (us)
        const bool h2d = d == dir::to_device;
        auto* dv = static_cast<unsigned char*>(dev.handle);
        for (std::size_t i = 0; i < pairs.size(); ++i) {
          srcs.push_back((h2d ? host.p : dv) + pairs[i].src * pt.block_bytes);
          dsts.push_back((h2d ? dv : host.p) + pairs[i].dst * pt.block_bytes);
          adjacent_srcs.push_back((h2d ? contiguous_host.p : dv) + i * pt.block_bytes);
          adjacent_dsts.push_back((h2d ? dv : contiguous_host.p) + i * pt.block_bytes);
          host_adjacent_srcs.push_back(h2d ? contiguous_host.p + i * pt.block_bytes : srcs.back());
          host_adjacent_dsts.push_back(h2d ? dsts.back() : contiguous_host.p + i * pt.block_bytes);
          same_array_srcs.push_back((h2d ? host.p : dv) + i * pt.block_bytes);
          same_array_dsts.push_back((h2d ? dv : host.p) + i * pt.block_bytes);
        }
        // One batch of to[i] <- from[i] cut over n_streams: raw streams of
        // the probe's own, or (forked) the study's stream and n - 1 raw
        // streams that fork from it and join back by events, as the way does.
        const auto batch_over = [&](std::vector<void*>& to, std::vector<void*>& from, std::size_t n_streams,
                                    bool forked = false) {
#if CUDART_VERSION >= 13000
          const std::vector<std::size_t> sizes(from.size(), pt.block_bytes);
          cudaMemcpyAttributes attr{};
          attr.srcAccessOrder = cudaMemcpySrcAccessOrderAny;
          std::size_t first = 0;
          const std::size_t per = (from.size() + n_streams - 1) / n_streams;
          if (forked) cudaEventRecord(fork_join[0], stream);
          for (std::size_t k = 0; k < n_streams; ++k) {
            const std::size_t b = k * per, e = std::min(from.size(), b + per);
            if (b >= e) break;
            const cudaStream_t s = !forked ? probe_streams[k] : k == 0 ? stream : probe_streams[k - 1];
            if (forked && k > 0) cudaStreamWaitEvent(s, fork_join[0], 0);
            cudaMemcpyBatchAsync(to.data() + b, from.data() + b, sizes.data() + b, e - b, &attr, &first, 1, s);
            if (forked && k > 0) {
              cudaEventRecord(fork_join[k], s);
              cudaStreamWaitEvent(stream, fork_join[k], 0);
            }
          }
          if (forked) cudaStreamSynchronize(stream);
          else
            for (std::size_t k = 0; k < n_streams; ++k) cudaStreamSynchronize(probe_streams[k]);
#else
          (void)to, (void)from, (void)n_streams, (void)forked;
#endif
        };
        // One copy of `total` bytes between the device and host array h.
        const auto contiguous_copy = [&](unsigned char* h) {
          if (d == dir::to_device)
            cudaMemcpyAsync(dev.handle, h, total, cudaMemcpyHostToDevice, stream);
          else
            cudaMemcpyAsync(h, dev.handle, total, cudaMemcpyDeviceToHost, stream);
          cudaStreamSynchronize(stream);
        };
        // The ways before `checked` are checked once; the adjacent probes and
        // the contiguous copies after it move other bytes.
        std::size_t checked = ways.size();
        if (pinned && CUDART_VERSION >= 13000) {
          ways.emplace_back("probe-batch-4s", [&] { batch_over(dsts, srcs, 4); });
          ways.emplace_back("probe-batch-16s", [&] { batch_over(dsts, srcs, 16); });
          ways.emplace_back("probe-forked-8s", [&] { batch_over(dsts, srcs, 8, true); });
          // The batch way's steps through the step's queue, each timed: what
          // the way spends beyond probe-forked-8s (phases printed to stderr).
          ways.emplace_back("probe-way-phases", [&] {
            const auto t0 = clock_type::now();
            auto q = step->open_queue(stream);
            const auto t1 = clock_type::now();
            q->copy_batch(dsts.data(), srcs.data(), pt.block_bytes, srcs.size());
            const auto t2 = clock_type::now();
            q->finish();
            const auto t3 = clock_type::now();
            q.reset();
            const auto t4 = clock_type::now();
            const auto us = [](auto a, auto b) { return std::chrono::duration<double, std::micro>(b - a).count(); };
            phases.push_back({us(t0, t1), us(t1, t2), us(t2, t3), us(t3, t4)});
          });
          checked = ways.size();
          ways.emplace_back("probe-adjacent-8s", [&] { batch_over(adjacent_dsts, adjacent_srcs, 8); });
          ways.emplace_back("probe-host-adjacent-8s", [&] { batch_over(host_adjacent_dsts, host_adjacent_srcs, 8); });
          ways.emplace_back("probe-same-array-adjacent-8s", [&] { batch_over(same_array_dsts, same_array_srcs, 8); });
          ways.emplace_back("contiguous-same-array", [&] { contiguous_copy(host.p); });
        }
        ways.emplace_back("contiguous-pinned", [&] { contiguous_copy(contiguous_host.p); });
        // Checked once each (up to `checked`).
        std::vector<unsigned char> dev_copy(span);
        for (std::size_t i = 0; i < checked; ++i) {
          if (d == dir::to_host) std::memset(host.p, 0, span);
          cudaMemset(dev.handle, 0x77, d == dir::to_device ? span : 0);
          if (d == dir::to_host) {
            std::vector<unsigned char> pattern(span);
            for (std::size_t b = 0; b < span; ++b) pattern[b] = static_cast<unsigned char>(b * 7 + 1);
            cudaMemcpy(dev.handle, pattern.data(), span, cudaMemcpyHostToDevice);
          }
          ways[i].second();
          cudaMemcpy(dev_copy.data(), dev.handle, span, cudaMemcpyDeviceToHost);
          notes.push_back(moved_right(job, dev_copy.data()) ? "checked" : "WRONG BYTES");
        }
        notes.resize(ways.size(), "not checked (other bytes)");
        std::vector<std::vector<double>> seconds(ways.size());
        // The order is shuffled each round (a fixed seed), so each way follows
        // every other about as often. A rotation is not enough: it keeps who
        // runs before whom, and a way's rate depends on the one before it
        // (pack's threads still polling, lines left in the caches)
        // (docs/decisions/0003-block-copier-probe-and-ways.md).
        std::mt19937 order_rng(38);
        std::vector<std::size_t> order(ways.size());
        std::iota(order.begin(), order.end(), std::size_t{0});
        for (unsigned r = 0; r < reps + 1; ++r) {
          std::shuffle(order.begin(), order.end(), order_rng);
          for (const std::size_t i : order) {
            const auto t0 = clock_type::now();
            ways[i].second();
            const double s = std::chrono::duration<double>(clock_type::now() - t0).count();
            if (r > 0) seconds[i].push_back(s);  // the first round warms up
          }
        }
        for (std::size_t i = 0; i < ways.size(); ++i)
          std::printf("%s\t%s\t%zu\t%zu\t%s\t%.2f\t%.2f\t%s\n", d == dir::to_device ? "h2d" : "d2h",
                      pinned ? "pinned" : "pageable", pt.block_bytes, pt.blocks, ways[i].first.c_str(),
                      total / median(seconds[i]) / 1e9,
                      total / *std::min_element(seconds[i].begin(), seconds[i].end()) / 1e9, notes[i].c_str());
        std::fflush(stdout);
        if (!phases.empty()) {
          std::array<std::vector<double>, 4> by_phase;
          for (const auto& p : phases)
            for (std::size_t k = 0; k < 4; ++k) by_phase[k].push_back(p[k]);
          std::fprintf(stderr, "%s\t%zu\tway phases (median us): open %.1f, submit %.1f, finish %.1f, close %.1f\n",
                       d == dir::to_device ? "h2d" : "d2h", pt.block_bytes, median(by_phase[0]), median(by_phase[1]),
                       median(by_phase[2]), median(by_phase[3]));
        }
        step->deallocate(dev);
      }
  cudaStreamDestroy(stream);
  for (auto s : probe_streams) cudaStreamDestroy(s);
  for (auto e : fork_join) cudaEventDestroy(e);
  return 0;
}
