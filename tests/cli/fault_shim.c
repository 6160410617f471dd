/* Fault injection for the end-to-end tests, loaded with LD_PRELOAD: it stands
 * in for memcpy, and for copies of exactly XFER_FAULT_BYTES bytes, after the
 * first XFER_FAULT_AFTER of them (default 0), and, with XFER_FAULT_AFTER_S,
 * only once that many seconds have passed since the first of them (faults
 * that start late in a point's sampling), it either never returns
 * (XFER_FAULT=hang: a transfer stuck in the driver) or flips the first byte
 * it wrote (XFER_FAULT=corrupt: a link or engine that corrupts data). Every
 * other copy goes to the C library's memcpy. memset of that size can hang too
 * (below). The host backend's copies are
 * plain memcpy calls, so a real sweep meets these faults. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef void* (*memcpy_fn)(void*, const void*, size_t);

static memcpy_fn real_memcpy;
static size_t fault_bytes;
static long fault_after;
static double fault_after_s = -1; /* < 0: from the first copy on */
static atomic_llong first_ns;     /* when the first copy of that size came (0: none yet) */
static int fault_kind; /* 0 none, 1 hang, 2 corrupt */
static const char* hung_file; /* XFER_FAULT_HUNG_FILE: made when a copy starts to hang */
static atomic_long seen;
static atomic_int initialising;

/* Used while dlsym itself may copy: a loop the compiler must not turn back
 * into a memcpy call. */
__attribute__((optimize("no-tree-loop-distribute-patterns"))) static void* byte_copy(void* d, const void* s,
                                                                                        size_t n) {
  volatile unsigned char* dst = d;
  const unsigned char* src = s;
  for (size_t i = 0; i < n; ++i) dst[i] = src[i];
  return d;
}

static void init(void) {
  if (atomic_exchange(&initialising, 1)) return;
  const char* kind = getenv("XFER_FAULT");
  const char* bytes = getenv("XFER_FAULT_BYTES");
  const char* after = getenv("XFER_FAULT_AFTER");
  fault_kind = !kind ? 0 : strcmp(kind, "hang") == 0 ? 1 : strcmp(kind, "corrupt") == 0 ? 2 : 0;
  fault_bytes = bytes ? strtoull(bytes, NULL, 10) : 0;
  fault_after = after ? strtol(after, NULL, 10) : 0;
  const char* after_s = getenv("XFER_FAULT_AFTER_S");
  if (after_s) fault_after_s = strtod(after_s, NULL);
  hung_file = getenv("XFER_FAULT_HUNG_FILE");
  real_memcpy = (memcpy_fn)dlsym(RTLD_NEXT, "memcpy");
}

/* Hangs for good, saying so first where asked (open and close copy nothing). */
static void hang(void) {
  if (hung_file) close(open(hung_file, O_CREAT | O_WRONLY, 0644));
  for (;;) pause();
}

/* Whether a copy of the faulting size comes late enough (XFER_FAULT_AFTER_S). */
static int late_enough(void) {
  if (fault_after_s < 0) return 1;
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  const long long now = (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
  long long none = 0;
  atomic_compare_exchange_strong(&first_ns, &none, now);
  return (double)(now - atomic_load(&first_ns)) >= fault_after_s * 1e9;
}

void* memcpy(void* dst, const void* src, size_t n) {
  if (!real_memcpy) {
    init();
    if (!real_memcpy) return byte_copy(dst, src, n);
  }
  if (fault_kind && n == fault_bytes && late_enough() && atomic_fetch_add(&seen, 1) >= fault_after) {
    if (fault_kind == 1) hang();
    real_memcpy(dst, src, n);
    ((unsigned char*)dst)[0] ^= 0xFF;
    return dst;
  }
  return real_memcpy(dst, src, n);
}

/* memset too, for XFER_FAULT=hang only: alloc's first touch of a block is a
 * memset, and a hang there must not keep a signal from ending the run. */
typedef void* (*memset_fn)(void*, int, size_t);
static memset_fn real_memset;
static atomic_int finding_memset;

/* Used while dlsym itself may set memory, as byte_copy is. */
__attribute__((optimize("no-tree-loop-distribute-patterns"))) static void* byte_set(void* d, int c, size_t n) {
  volatile unsigned char* dst = d;
  for (size_t i = 0; i < n; ++i) dst[i] = (unsigned char)c;
  return d;
}

void* memset(void* dst, int c, size_t n) {
  if (!real_memset) {
    if (atomic_exchange(&finding_memset, 1)) return byte_set(dst, c, n);
    if (!real_memcpy) init();
    real_memset = (memset_fn)dlsym(RTLD_NEXT, "memset");
    if (!real_memset) {
      atomic_store(&finding_memset, 0);
      return byte_set(dst, c, n);
    }
  }
  if (fault_kind == 1 && n == fault_bytes && atomic_fetch_add(&seen, 1) >= fault_after) hang();
  return real_memset(dst, c, n);
}
