// libxfer_cupti.so: the capture half of `xferbench trace`. CUDA loads it into
// a traced program (CUDA_INJECTION64_PATH, calling InitializeInjection at
// cuInit), or Python's xferbench.trace() loads it and calls xfer_trace_start.
// It subscribes to CUPTI's activity API and writes each copy, memset and
// kernel, and each memory API call, as one JSON line to DIR/cupti-PID.jsonl.
// It decides nothing: src/trace/capture.cpp reads the lines and the bill is
// made there. It never touches the program's data, streams or output.
//
// Lines (every time in CUPTI's nanosecond clock):
//   {"t":"process","pid":P,"ppid":Q,"argv":[...],"clock_ns":T}
//   {"t":"copy","dir":"h2d","src":"pageable","dst":"device","bytes":B,"start":S,"end":E,
//    "dev":D,"stream":N,"corr":C,"rcorr":R,"async":0}
//   {"t":"set","mem":"device","bytes":B,"start":S,"end":E,"dev":D,"stream":N,"corr":C,"async":1}
//   {"t":"kernel","start":S,"end":E,"dev":D,"stream":N}
//   {"t":"api","domain":"runtime","name":"cudaMemcpy","start":S,"end":E,"corr":C}
//   {"t":"error","what":"..."}       CUPTI refused (another profiler holds it, say)
//   {"t":"end","dropped":N,"clock_ns":T}  written at a clean stop; its absence means the
//                                    process ended before it (a signal, _exit)
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cupti.h>
#include <mutex>
#include <string>
#include <unistd.h>

namespace {

std::mutex lock;  // CUPTI may deliver buffers on its own thread
FILE* out = nullptr;
std::string last_error;
std::size_t dropped = 0;
bool subscribed = false;

// The buffer CUPTI fills before handing it back; large enough that a
// loop of small copies is flushed a few times a second, not per call.
constexpr std::size_t buffer_bytes = std::size_t{8} << 20;
// How often CUPTI hands back a partly filled buffer: what a killed program
// loses at most of its last records.
constexpr std::uint32_t flush_period_ms = 100;

const char* copy_direction(std::uint8_t k) {
  switch (k) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA: return "h2d";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH: return "d2h";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA: return "d2d";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return "h2h";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return "p2p";
    default: return "unknown";
  }
}

const char* memory_kind(std::uint32_t k) {
  switch (k) {
    case CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE: return "pageable";
    case CUPTI_ACTIVITY_MEMORY_KIND_PINNED: return "pinned";
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE:
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC:
    case CUPTI_ACTIVITY_MEMORY_KIND_ARRAY: return "device";
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED:
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC: return "managed";
    default: return "unknown";
  }
}

// Only the calls that move or set memory are kept: a training loop makes
// thousands of launches a second whose records the bill does not need.
bool memory_call(const char* name) {
  return name && (std::strstr(name, "Memcpy") || std::strstr(name, "Memset") || std::strstr(name, "Prefetch"));
}

void write_record(const CUpti_Activity* r) {
  switch (r->kind) {
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(r);
      std::fprintf(out,
                   "{\"t\":\"copy\",\"dir\":\"%s\",\"src\":\"%s\",\"dst\":\"%s\",\"bytes\":%llu,\"start\":%llu,"
                   "\"end\":%llu,\"dev\":%u,\"stream\":%u,\"corr\":%u,\"rcorr\":%u,\"async\":%d}\n",
                   copy_direction(m->copyKind), memory_kind(m->srcKind), memory_kind(m->dstKind),
                   static_cast<unsigned long long>(m->bytes), static_cast<unsigned long long>(m->start),
                   static_cast<unsigned long long>(m->end), m->deviceId, m->streamId, m->correlationId,
                   m->runtimeCorrelationId, (m->flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC) ? 1 : 0);
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(r);
      std::fprintf(out,
                   "{\"t\":\"set\",\"mem\":\"%s\",\"bytes\":%llu,\"start\":%llu,\"end\":%llu,\"dev\":%u,"
                   "\"stream\":%u,\"corr\":%u,\"async\":%d}\n",
                   memory_kind(m->memoryKind), static_cast<unsigned long long>(m->bytes),
                   static_cast<unsigned long long>(m->start), static_cast<unsigned long long>(m->end), m->deviceId,
                   m->streamId, m->correlationId, (m->flags & CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC) ? 1 : 0);
      break;
    }
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
    case CUPTI_ACTIVITY_KIND_KERNEL: {
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(r);
      std::fprintf(out, "{\"t\":\"kernel\",\"start\":%llu,\"end\":%llu,\"dev\":%u,\"stream\":%u}\n",
                   static_cast<unsigned long long>(k->start), static_cast<unsigned long long>(k->end), k->deviceId,
                   k->streamId);
      break;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: {
      const auto* a = reinterpret_cast<const CUpti_ActivityAPI*>(r);
      const bool runtime = r->kind == CUPTI_ACTIVITY_KIND_RUNTIME;
      const char* name = nullptr;
      cuptiGetCallbackName(runtime ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API, a->cbid, &name);
      if (!memory_call(name)) break;
      std::fprintf(out, "{\"t\":\"api\",\"domain\":\"%s\",\"name\":\"%s\",\"start\":%llu,\"end\":%llu,\"corr\":%u}\n",
                   runtime ? "runtime" : "driver", name, static_cast<unsigned long long>(a->start),
                   static_cast<unsigned long long>(a->end), a->correlationId);
      break;
    }
    default: break;
  }
}

void CUPTIAPI buffer_requested(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records) {
  *buffer = static_cast<std::uint8_t*>(std::aligned_alloc(8, buffer_bytes));
  *size = *buffer ? buffer_bytes : 0;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext context, std::uint32_t stream, std::uint8_t* buffer, std::size_t,
                               std::size_t valid) {
  {
    std::lock_guard g(lock);
    if (out) {
      CUpti_Activity* r = nullptr;
      while (cuptiActivityGetNextRecord(buffer, valid, &r) == CUPTI_SUCCESS) write_record(r);
      std::size_t lost = 0;
      if (cuptiActivityGetNumDroppedRecords(context, stream, &lost) == CUPTI_SUCCESS) dropped += lost;
      std::fflush(out);  // what a killed process leaves is what was flushed
    }
  }
  std::free(buffer);
}

// The program's own words, for the file's process list.
void write_process_line() {
  std::string argv;
  if (FILE* f = std::fopen("/proc/self/cmdline", "rb")) {
    std::string word;
    for (int c; (c = std::fgetc(f)) != EOF;) {
      if (c == 0) {
        argv += (argv.empty() ? "\"" : ",\"") + word + "\"";
        word.clear();
      } else if (c == '"' || c == '\\') {
        word += '\\';
        word += static_cast<char>(c);
      } else if (c >= 0x20) {
        word += static_cast<char>(c);
      }
    }
    std::fclose(f);
  }
  std::uint64_t now = 0;
  cuptiGetTimestamp(&now);
  std::fprintf(out, "{\"t\":\"process\",\"pid\":%d,\"ppid\":%d,\"argv\":[%s],\"clock_ns\":%llu}\n",
               static_cast<int>(getpid()), static_cast<int>(getppid()), argv.c_str(),
               static_cast<unsigned long long>(now));
  std::fflush(out);
}

bool check(CUptiResult r, const char* what) {
  if (r == CUPTI_SUCCESS) return true;
  const char* text = nullptr;
  cuptiGetResultString(r, &text);
  last_error = std::string(what) + ": " + (text ? text : "unknown CUPTI error");
  if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED || r == CUPTI_ERROR_NOT_INITIALIZED)
    last_error += " (is another profiler, nsys or ncu, attached?)";
  return false;
}

constexpr CUpti_ActivityKind kinds[] = {CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET,
                                        CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_RUNTIME,
                                        CUPTI_ACTIVITY_KIND_DRIVER};

int start(const char* dir) {
  std::lock_guard g(lock);
  if (subscribed) return 0;
  if (!dir || !*dir) {
    last_error = "no directory to write the records to";
    return 1;
  }
  const std::string path = std::string(dir) + "/cupti-" + std::to_string(getpid()) + ".jsonl";
  out = std::fopen(path.c_str(), "w");
  if (!out) {
    last_error = "cannot write " + path + ": " + std::strerror(errno);
    return 1;
  }
  write_process_line();
  bool ok = check(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed), "cuptiActivityRegisterCallbacks");
  for (const auto k : kinds)
    if (ok) ok = check(cuptiActivityEnable(k), "cuptiActivityEnable");
  if (!ok) {
    for (const auto k : kinds) cuptiActivityDisable(k);
    std::fprintf(out, "{\"t\":\"error\",\"what\":\"%s\"}\n", last_error.c_str());
    std::fclose(out);
    out = nullptr;
    return 1;
  }
  cuptiActivityFlushPeriod(flush_period_ms);
  subscribed = true;
  return 0;
}

int stop() {
  {
    std::lock_guard g(lock);
    if (!subscribed) return 0;
    subscribed = false;
  }
  // Outside the lock: the flush calls buffer_completed, which takes it.
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  for (const auto k : kinds) cuptiActivityDisable(k);
  std::uint64_t now = 0;
  cuptiGetTimestamp(&now);
  std::lock_guard g(lock);
  std::fprintf(out, "{\"t\":\"end\",\"dropped\":%zu,\"clock_ns\":%llu}\n", dropped, static_cast<unsigned long long>(now));
  const bool closed = std::fclose(out) == 0;
  out = nullptr;
  return closed ? 0 : 1;
}

}  // namespace

extern "C" {

// CUDA's injection entry point: registered to run at exit, after which
// (atexit runs in reverse) CUDA's own teardown still finds its contexts.
__attribute__((visibility("default"))) int InitializeInjection(void) {
  const char* dir = std::getenv("XFER_TRACE_DIR");
  if (start(dir) != 0) return 0;
  std::atexit([] { stop(); });
  return 1;
}

__attribute__((visibility("default"))) int xfer_trace_start(const char* dir) { return start(dir); }
__attribute__((visibility("default"))) int xfer_trace_stop(void) { return stop(); }
__attribute__((visibility("default"))) const char* xfer_trace_error(void) { return last_error.c_str(); }
}
