// Where does first-time pinning's time go, and can registration overlap the
// touching of pages? (issue 15, item 4: 20 GB/s for 256 MiB and up; the
// pinned-fast kind touches every page with several threads, then registers
// the whole block once, and reached 16 to 18 GB/s on a GPU machine;
// docs/decisions/0009-fast-pinning.md.)
//
// For each size, five times each, on fresh huge-page-advised anonymous memory:
//   whole:   touch with T threads, then one cudaHostRegister (pinned-fast today);
//   overlap: the threads touch chunk i+1 while this thread registers chunk i,
//            so the block is several registrations;
// and then, on each block, cudaMemcpyAsync of the whole block to the device
// and of a 64 MiB range straddling two registrations, against cudaHostAlloc'd
// memory: a copy across registrations must still run at the pinned rate, or
// the overlap is no use to the pool.
//
//   xfer_bench_pin_probe [--threads T] [--chunk BYTES]
#include <sys/mman.h>

#include <algorithm>
#include <limits>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>
#include <cuda_runtime.h>
#include <xfer/mem/cuda/host_kinds.hpp>

namespace {

using clock_type = std::chrono::steady_clock;
double since(clock_type::time_point t0) { return std::chrono::duration<double>(clock_type::now() - t0).count(); }

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

void* map_huge(std::size_t bytes) {
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::runtime_error("mmap failed");
  ::madvise(p, bytes, MADV_HUGEPAGE);
  return p;
}

// Touches [p, p + bytes) chunk by chunk with `threads` threads, all on the
// same chunk (a write per 4 KiB page); chunks_done counts finished chunks.
void touch_chunks(unsigned char* p, std::size_t bytes, std::size_t chunk, unsigned threads,
                  std::atomic<std::size_t>& chunks_done) {
  const std::size_t chunks = (bytes + chunk - 1) / chunk;
  const std::size_t piece = std::max<std::size_t>(chunk / threads, 4096);
  const std::size_t per_chunk = (chunk + piece - 1) / piece;
  std::atomic<std::size_t> next{0};
  std::vector<std::atomic<std::size_t>> done(chunks);
  auto work = [&] {
    for (;;) {
      const std::size_t q = next.fetch_add(1);
      if (q >= chunks * per_chunk) return;
      const std::size_t c = q / per_chunk, at = c * chunk + (q % per_chunk) * piece;
      const std::size_t end = std::min({at + piece, (c + 1) * chunk, bytes});
      for (std::size_t i = at; i < end; i += 4096) reinterpret_cast<volatile unsigned char*>(p)[i] = 1;
      if (done[c].fetch_add(1) + 1 == per_chunk) {
        // Publish chunks in order: a later chunk may finish first.
        std::size_t expect = c;
        while (!chunks_done.compare_exchange_weak(expect, c + 1)) {
          if (expect > c) break;
          expect = c;
          std::this_thread::yield();
        }
      }
    }
  };
  std::vector<std::thread> team;
  for (unsigned t = 0; t < threads; ++t) team.emplace_back(work);
  for (auto& t : team) t.join();
}

// The median of five copies' rate; NaN (and the error printed once) when the
// copy is refused: a range over several registrations may be.
double copy_gbs(void* dev, const void* host, std::size_t bytes, cudaStream_t s) {
  std::vector<double> rates;
  for (int r = 0; r < 5; ++r) {
    const auto t0 = clock_type::now();
    cudaError_t e = cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, s);
    if (e == cudaSuccess) e = cudaStreamSynchronize(s);
    if (e != cudaSuccess) {
      static bool said = false;
      if (!said) std::printf("  (copy of %zu bytes refused: %s)\n", bytes, cudaGetErrorString(e));
      said = true;
      (void)cudaGetLastError();
      return std::numeric_limits<double>::quiet_NaN();
    }
    rates.push_back(bytes / since(t0) / 1e9);
  }
  std::sort(rates.begin(), rates.end());
  return rates[2];
}

}  // namespace

int main(int argc, char** argv) try {
  unsigned threads = std::clamp(std::thread::hardware_concurrency(), 1u, 16u);
  std::size_t chunk = std::size_t{64} << 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--threads") threads = static_cast<unsigned>(std::stoul(argv[i + 1]));
    else if (a == "--chunk") chunk = std::stoull(argv[i + 1]);
  }
  check(cudaSetDevice(0), "cudaSetDevice");
  check(cudaFree(nullptr), "context");
  cudaStream_t s;
  check(cudaStreamCreate(&s), "cudaStreamCreate");
  const std::size_t span = std::size_t{64} << 20;
  void* dev = nullptr;
  check(cudaMalloc(&dev, std::size_t{1} << 30), "cudaMalloc");
  void* pinned = nullptr;
  check(cudaHostAlloc(&pinned, std::size_t{1} << 30, cudaHostAllocPortable), "cudaHostAlloc");
  std::memset(pinned, 1, std::size_t{1} << 30);
  std::printf("threads %u, overlap chunk %zu MiB; cudaHostAlloc'd reference: %.2f GB/s (1 GiB), %.2f GB/s (64 MiB)\n",
              threads, chunk >> 20, copy_gbs(dev, pinned, std::size_t{1} << 30, s), copy_gbs(dev, pinned, span, s));
  std::printf("%8s %8s %3s %9s %9s %9s %9s %11s %11s %9s\n", "size", "mode", "run", "touch ms", "reg ms", "total ms",
              "pin GB/s", "copy GB/s", "straddle", "unreg ms");
  for (const std::size_t bytes : {std::size_t{256} << 20, std::size_t{1} << 30}) {
    // The library's pinned-fast kind, as the pool would use it.
    auto fast = xfer::cuda::make_cuda_host_kind("pinned-fast");
    for (int run = 0; run < 5; ++run) {
      const auto t0 = clock_type::now();
      void* p = fast->allocate(bytes, 4096);
      const double total = since(t0);
      const double whole = copy_gbs(dev, p, bytes, s);
      const auto t2 = clock_type::now();
      fast->deallocate(p, bytes, 4096);
      std::printf("%6zuMi %8s %3d %9s %9s %9.2f %9.2f %11.2f %11s %9.2f\n", bytes >> 20, "library", run, "-", "-",
                  total * 1e3, bytes / total / 1e9, whole, "-", since(t2) * 1e3);
      std::fflush(stdout);
    }
    for (const bool overlap : {false, true}) {
      for (int run = 0; run < 5; ++run) {
        auto* p = static_cast<unsigned char*>(map_huge(bytes));
        std::vector<unsigned char*> regs;
        double touch_ms = 0, reg_ms = 0;
        const auto t0 = clock_type::now();
        if (!overlap) {
          std::atomic<std::size_t> done{0};
          touch_chunks(p, bytes, bytes, threads, done);
          touch_ms = since(t0) * 1e3;
          const auto t1 = clock_type::now();
          check(cudaHostRegister(p, bytes, cudaHostRegisterPortable), "cudaHostRegister");
          reg_ms = since(t1) * 1e3;
          regs.push_back(p);
        } else {
          std::atomic<std::size_t> done{0};
          std::thread toucher([&] { touch_chunks(p, bytes, chunk, threads, done); });
          const std::size_t chunks = (bytes + chunk - 1) / chunk;
          for (std::size_t c = 0; c < chunks; ++c) {
            while (done.load() <= c) std::this_thread::yield();
            const auto t1 = clock_type::now();
            check(cudaHostRegister(p + c * chunk, std::min(chunk, bytes - c * chunk), cudaHostRegisterPortable),
                  "cudaHostRegister (chunk)");
            reg_ms += since(t1) * 1e3;
            regs.push_back(p + c * chunk);
          }
          toucher.join();
        }
        const double total = since(t0);
        const double whole = copy_gbs(dev, p, bytes, s);
        // 64 MiB across the middle: two registrations when overlapped.
        const std::size_t mid = (bytes / 2 / chunk) * chunk;
        const double straddle = copy_gbs(dev, p + mid - span / 2, span, s);
        const auto t2 = clock_type::now();
        for (auto* r : regs) check(cudaHostUnregister(r), "cudaHostUnregister");
        const double unreg_ms = since(t2) * 1e3;
        ::munmap(p, bytes);
        std::printf("%6zuMi %8s %3d %9.2f %9.2f %9.2f %9.2f %11.2f %11.2f %9.2f\n", bytes >> 20,
                    overlap ? "overlap" : "whole", run, touch_ms, reg_ms, total * 1e3, bytes / total / 1e9, whole,
                    straddle, unreg_ms);
        std::fflush(stdout);
      }
    }
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "xfer_bench_pin_probe: %s\n", e.what());
  return 1;
}
