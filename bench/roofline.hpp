#pragma once
// What the roofline bench's parts share (memory_roofline.cpp: the CPU side
// and main; roofline_common.cpp: statistics, the DRAM model, caches and
// counters; roofline_device.cpp: the staged copier on a GPU beside a pinned
// copy; roofline_contention.cpp: the copy engine while CPU threads copy).
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>
#include <nlohmann/json.hpp>

namespace roofline {

// Best and median rate of timed repetitions over `bytes`, raw samples kept.
struct rate {
  double best_gbs = 0, median_gbs = 0;
  std::vector<double> seconds;
};
rate summarize(double bytes, std::vector<double> seconds);
nlohmann::json to_json(const rate& r);

// ---- DRAM bytes per byte delivered ------------------------------------------

// The model (not a count) of the DRAM traffic of one byte moved through a
// staging ring, term by term. Host to device: the source read from DRAM (1);
// the staging write (regular stores: 1 plus 1 read-for-ownership; streaming
// stores: 1, no RFO); the copy engine's read of staging (1). Device to host:
// the copy engine's write of staging (1), the CPU's read of it (1), the
// destination's write (1, plus 1 RFO with regular stores). Where the ring
// stays in the last-level cache the staging terms are 0 (on Intel hosts the
// device reads recent writes from the LLC and DDIO writes into it), except
// the staging write of streaming stores, which go to DRAM whatever the ring.
struct dram_model {
  double source = 0, staging_write = 0, staging_rfo = 0, device = 0, cpu_read = 0, destination = 0,
         destination_rfo = 0;
  double total() const {
    return source + staging_write + staging_rfo + device + cpu_read + destination + destination_rfo;
  }
};
dram_model staged_model(bool to_device, bool ring_fits_llc, bool stream_stores);
nlohmann::json to_json(const dram_model& m);

// ---- the machine ------------------------------------------------------------

// DRAM traffic counted by the memory controllers (uncore_imc cas_count_read
// and cas_count_write through perf_event_open), where the machine exposes
// them; a VM usually does not, and unavailable() then says why.
class dram_counter {
 public:
  dram_counter();
  ~dram_counter();
  dram_counter(const dram_counter&) = delete;
  dram_counter& operator=(const dram_counter&) = delete;
  bool available() const noexcept { return why_.empty(); }
  const std::string& unavailable() const noexcept { return why_; }
  void start();
  // Bytes read and written since start().
  std::pair<double, double> stop();

 private:
  struct counter {
    int fd;
    double bytes_per_count;
    bool write;
  };
  std::vector<counter> counters_;
  std::string why_;
};

// DRAM bytes per byte delivered: counted where a counter ran, else the model,
// always labelled so.
nlohmann::json bytes_per_byte(const dram_model& model, std::optional<double> counted_total);

// ---- staged designs -----------------------------------------------------------

// One way to configure the copier: "chunk/ring[/threads][/nt][/size]", e.g.
// "1M/8", "8M/4/12/nt". nt: streaming stores; size: the chunk chosen per
// copy size (staged_tuning::size_chunks).
struct design {
  std::size_t chunk = 0;
  unsigned ring = 0, threads = 0;
  bool stream_stores = false, size_chunks = false;
  std::string label;
  std::size_t ring_bytes() const { return chunk * ring; }
};
design parse_design(const std::string& text, unsigned default_threads);

// Fits the LLC in the model's sense: the ring at most `fraction` of it (the
// rest is left to the source's lines streaming through).
bool fits(std::size_t ring_bytes, std::size_t llc, double fraction);

struct device_options {
  std::vector<design> designs;
  std::vector<std::size_t> sizes;
  double seconds = 0.3;  // sampling budget per design, size and direction
  std::size_t llc = 0;
  double fit_fraction = 0.5;
  double memory_gbs = 0;           // the machine's bandwidth (DRAM bytes/s, model)
  std::optional<double> link_gbs;  // given by the user: replaces the pinned rate as the link
};
// Runs every design on GPU 0 beside a pinned copy of the same size (CUDA
// builds only; elsewhere it returns a note saying so). Throws on a data
// mismatch.
nlohmann::json run_device(const device_options& o, dram_counter& counter);

// ---- the contention probe (roofline_contention.cpp) ---------------------------

}  // namespace roofline
namespace xfer::mem {
class device_step;
}
namespace roofline {

// GPU 0's device step (CUDA builds, a GPU present), else null with `why`
// saying why not.
std::unique_ptr<xfer::mem::device_step> gpu_step(std::string& why);

// 0, 2, 4, 8, 12 and the library's default (default_staged_threads), each once.
std::vector<unsigned> default_contention_threads();

// The copy engine's rate while N CPU threads copy through a ring, and the
// threads' rate meanwhile (roofline_contention.cpp says how).
struct contention_options {
  bool enabled = false, only = false;  // --contention: add the probe; --contention-only: nothing else
  std::vector<unsigned> threads = default_contention_threads();  // 0: the engine alone
  std::vector<double> paces_gbs{0, 55};  // the threads' aggregate target; 0: flat out. 55: the link's
  double window_s = 0.3;
  unsigned windows = 3;                                  // rounds: median and spread of these
  std::size_t buffer_bytes = std::size_t{1} << 30;       // pageable, split into one slice per thread
  std::size_t chunk_bytes = std::size_t{8} << 20;        // the ring: slots x chunk (the copier's 8 MiB x 4)
  unsigned slots = 4;
  std::size_t engine_bytes = std::size_t{64} << 20;      // each of the engine's own copies
  bool shared_ring = true;                               // also the engine moving the ring's chunks
  bool demote = false;  // h2d: CLDEMOTE each piece after writing it, as the copier does for copies below the LLC's size
  std::string step = "gpu";                              // gpu, or host (the host step: tests)
  bool device = true;                                    // false (--no-device): the threads alone
  // Throws std::invalid_argument naming the option.
  void validate() const;
};
// Takes the option `name` (and its value() where it has one) when it is the
// probe's: true; false where it is not.
bool contention_option(const std::string& name, const std::function<std::string()>& value, contention_options& o);
// Runs the probe, prints its table and returns its JSON. Throws on a device
// error, std::invalid_argument on options that do not fit together.
nlohmann::json run_contention(const contention_options& o);
nlohmann::json run_contention(const contention_options& o, xfer::mem::device_step* step, const std::string& device);

}  // namespace roofline
