#pragma once
// The extension point every backend implements (host, CUDA runtime/driver,
// OpenCL, Vulkan, XRT). The core expands a sweep into point_specs, asks the
// backend to prepare() each one, and drives the returned transfer's run(K) to
// sample it (core/sampling.hpp), verifying what it moved (core/verify.cpp).
//
// Where new things go (docs/layout.md, "Seams"): a new backend is a folder
// src/backends/<name>/ implementing `backend` plus one entry in
// src/backends/registry.cpp; a new route is declared in its backend's folder
// (route_kind::declare, listed in routes()) and never here; a new host memory
// kind is an entry of include/xfer/mem/kind_registry.hpp and its resource.
#include <compare>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>
#include <xfer/mem/resource.hpp>

namespace xfer {

// Which entries of the run's settings (config.settings, xfer/mem/settings.hpp)
// a point used: those of `component` under `scope`.
struct settings_ref {
  std::string component;
  std::string scope;
};


enum class direction { h2d, d2h, bidir, rw, d2d };

const char* to_string(direction d);
// Throws usage_error for an unknown name.
direction parse_direction(const std::string& name);
const std::vector<direction>& all_directions();

// What core knows about a route besides its name: the kind of mechanism, so
// rules that hold for every route of a kind (a kernel reaching host memory
// cannot beat the link) need no list of names. A backend picks one when it
// declares a route.
enum class route_family {
  copy,           // the API, or the CPU's memcpy, moves the bytes (copy engines, map, staging)
  kernel_host,    // a device kernel reads or writes host memory across the link
  kernel_device,  // a device kernel works in device memory
  latency,        // a round trip is timed, not a stream of bytes
  cpu_access,     // the CPU loads from or stores into memory the device maps
  peer,           // one device's memory to another's
  other,          // a name read from a result file that no route of this build declares
};
const char* to_string(route_family f);

// What a route is for, where a rule of the report needs more than its family
// (the result file's catalogue carries it, docs/result-schema.md): the
// report picks "the API's plain copy" or "the staged copier" by role, never
// by a route's name. Most routes have none.
enum class route_role {
  none,
  api_copy_blocking,     // the API's own copy call, returning when the bytes have landed
  api_copy_queued,       // the API's own copy call, queued and timed by the device
  staged_copier,         // libxfer's staged copier: pageable memory through pinned staging
  driver_batch,          // the driver's batched copy (its own answer to pageable memory)
  cpu_store,             // the CPU stores into memory the device maps: its time to store
  cpu_load,              // the CPU loads from memory the device maps
  cpu_store_round_trip,  // a CPU store until a device reader answers: a round trip
};
const char* to_string(route_role r);

// A route: one way of moving bytes, named as results and the command line
// spell it ("copy-sync", "cpu-store-nt-latency"). Names are open: a backend
// declares its own routes in its folder (route_kind::declare, e.g.
// backends/vulkan/routes.hpp); core names only the few below that its own
// logic or several backends use. A route_kind is an index into one
// process-wide table of declared names, so it compares, orders and hashes as
// cheaply as the enum it replaces; order is declaration order.
class route_kind {
 public:
  // memcpy, as the enum's first value was.
  constexpr route_kind() = default;
  // The route named `name`, of `family`: declared on first call, the same
  // route_kind on every later one. Throws std::logic_error where the name was
  // declared before with another family.
  static route_kind declare(std::string_view name, route_family family, route_role role = route_role::none);
  // The declared route of that name; nullopt where nothing declared it.
  static std::optional<route_kind> find(std::string_view name);
  // As find, but a name nothing declared becomes a route of family other
  // (a result file written by a build with other backends).
  static route_kind named(std::string_view name);

  const char* name() const;
  route_family family() const;
  route_role role() const;

  friend constexpr bool operator==(route_kind, route_kind) = default;
  friend constexpr auto operator<=>(route_kind, route_kind) = default;

  // Shared, well-known routes: core names them (fleet's health set, the
  // peer matrix, the link-limit rule) or several backends offer them.
  static const route_kind memcpy;         // host: one thread's memcpy
  static const route_kind copy_sync;      // the API's blocking copy, one after another
  static const route_kind copy_async;     // the API's queued copy, timed by device events
  static const route_kind kernel_host;    // a kernel reads or writes host memory over the link
  static const route_kind kernel_device;  // a kernel copies device memory to device memory
  static const route_kind staged;         // libxfer's staged copier: any host memory through pinned staging
  static const route_kind peer;           // device memory of one device to another's (backend::prepare_peer)

 private:
  constexpr explicit route_kind(std::uint32_t id) : id_(id) {}
  std::uint32_t id_ = 0;
};
// The shared routes' indexes are their rows in backend.cpp's table.
inline constexpr route_kind route_kind::memcpy{0};
inline constexpr route_kind route_kind::copy_sync{1};
inline constexpr route_kind route_kind::copy_async{2};
inline constexpr route_kind route_kind::kernel_host{3};
inline constexpr route_kind route_kind::kernel_device{4};
inline constexpr route_kind route_kind::staged{5};
inline constexpr route_kind route_kind::peer{6};

const char* to_string(route_kind r);
}  // namespace xfer

// For unordered containers keyed by route.
template <>
struct std::hash<xfer::route_kind> {
  std::size_t operator()(xfer::route_kind r) const noexcept { return std::hash<std::string_view>{}(r.name()); }
};

namespace xfer {

// nullopt for a name no route has (route_kind::find).
std::optional<route_kind> parse_route_kind(std::string_view name);
// Streams the name (test failure messages, logs).
std::ostream& operator<<(std::ostream& os, route_kind r);

// Which clock timed a point's samples: the host's wall clock around blocking
// work, or the device's own events around the queued work.
enum class clock_kind { wall, event };
const char* to_string(clock_kind c);
// Throws std::invalid_argument for a name that is neither "wall" nor "event".
clock_kind parse_clock_kind(const std::string& name);
std::ostream& operator<<(std::ostream& os, clock_kind c);

struct device_info {
  int index = 0;
  std::string name;
  std::string type;               // "cpu", "gpu", "accelerator"
  std::uint64_t memory_bytes = 0;  // 0: unknown
  std::uint64_t max_alloc_bytes = 0;
  std::map<std::string, std::string> details = {};  // PCI address, versions, timer resolution, ...
  // Host memory kinds the backend offers that this device cannot use: name -> why.
  std::map<std::string, std::string> unavailable_kinds = {};
};

struct route_info {
  route_kind name;
  std::string description;
  std::vector<direction> directions;
  bool uses_host_memory = true;  // false: the host memory axis does not apply
  // The sizes a sweep measures this route at when it was given none (a route
  // that times a few message sizes, not a curve); empty: the sweep's own.
  std::vector<std::uint64_t> default_sizes = {};
  // Sizes below this cannot exist for the route (one 32-bit index for a
  // pointer chase): a sweep given no sizes leaves them out.
  std::uint64_t min_bytes = 0;
  // A route of the many-blocks workload (core/block_route.hpp): measured
  // only where a sweep asks for blocks (sweep_spec::block_sizes), at each
  // block size, and never in a plain sweep.
  bool block_workload = false;
};

struct kind_support {
  std::string name;
  bool available = true;
  std::string reason;  // why not, when unavailable
  std::string description;
  // Measured by the default run (the overview): the plain kinds every program
  // has (mem::overview_kind_names) and the backend's own fast kind; the rest
  // with -m or --full.
  bool overview = false;
};

// Marks the overview's kinds in a backend's list: the plain ones and `own`.
void mark_overview(std::vector<kind_support>& kinds, std::initializer_list<std::string_view> own);


// One block of a block point's list: block `src` of the source array to
// block `dst` of the destination (mem::block_pair's shape, kept here so the
// point needs no mem/blocks header).
struct block_pair_spec {
  std::int64_t src = 0;
  std::int64_t dst = 0;
};

struct point_spec {
  std::string backend;
  int device = 0;
  route_kind route = route_kind::copy_sync;
  direction dir = direction::h2d;
  std::string host_memory;  // "none" where the route uses none
  std::uint64_t bytes = 0;
  int peer = -1;  // route peer: the device copied to (device is the source); -1 otherwise
  // The many-blocks workload (core/block_route.hpp): `bytes` is each array's
  // size, moved as blocks of block_bytes (0: not a block point) by the
  // fixed-seed scattered list, or by block_list where the user gave one.
  std::uint64_t block_bytes = 0;
  std::shared_ptr<const std::vector<block_pair_spec>> block_list = nullptr;
};

// Costs of first use, measured once per point and never mixed into the samples.
// Negative means not measured.
struct first_use {
  double alloc_s = -1;           // allocate (and pin/register) the buffers
  double touch_s = -1;           // first write of the source pattern
  double first_transfer_s = -1;  // the first transfer from the fresh buffers
};

// One batch of reps transfers. parts names per-direction times where a route
// has several (bidir: "h2d", "d2h"). gate_fallback says why the batch ran
// ungated where its route gates (see timed_batches in core/timing.hpp).
struct sample {
  double seconds = 0;
  double wall_seconds = 0;
  std::map<std::string, double> parts;
  std::string gate_fallback;
};

// One place a sample writes (core's table, sample_check.hpp).
struct sample_destination;

// How core's verification reaches a place: to overwrite it (what was there
// may be lost: a poison), to read it (a check), or to change some of it
// (tests that corrupt a destination).
enum class place_access { overwrite, read, update };

// The first byte of a place that differs from its pattern, and what it holds.
struct place_mismatch {
  std::uint64_t offset = 0;
  unsigned char got = 0;
};

// A prepared point: buffers allocated, source filled.
class transfer {
 public:
  virtual ~transfer() = default;
  virtual sample run(std::size_t reps) = 0;
  // Poisons the destination(s), runs once untimed, checks what arrived;
  // throws verification_error on a mismatch.
  virtual void verify();
  // Every timed sample is checked too, outside its timed region:
  // poison_sample() before the batch poisons what it writes; check_sample()
  // after it verifies what the batch's last transfer left there (throwing
  // verification_error). A sample whose transfers corrupt the data, or never
  // land, fails the point instead of passing as a fast one.
  //
  // These three are core's (src/core/verify.cpp): they poison and check the
  // places() below through the accessors, and name a bad place the same way
  // for every backend. A route whose check is not "a pattern in a buffer" (a
  // pointer chase, a checksum, the CPU's own stores) overrides all three and
  // says why; the engine calls them the same either way.
  virtual void poison_sample();
  virtual void check_sample();
  // False where the route moves no data that could be checked (XRT's bo.sync
  // under its no-op emulation): the point is then never marked verified.
  virtual bool verifies_data() const { return true; }
  // What the backend says about how this point runs (point_result::note).
  virtual std::string note() const { return {}; }
  // The settings this point ran with (point_result::settings): the entries of
  // the run's settings log (mem::record_setting) it used; none for a route
  // whose library resolves nothing.
  virtual std::optional<settings_ref> settings_used() const { return std::nullopt; }
  virtual first_use setup_costs() const = 0;
  virtual clock_kind timer_kind() const = 0;
  virtual double timer_resolution_s() const = 0;
  // Bytes moved by one repetition (2x bytes for bidir and rw).
  virtual std::uint64_t bytes_per_rep() const = 0;

  // ---- what core's verification asks of a transfer ----
  // The defaults throw std::logic_error: a transfer either names its places
  // and reaches them, or overrides verify/poison_sample/check_sample.
  //
  // The places one repetition writes, in order, and the pattern each then
  // holds: sample_destinations(direction) for a route that moves the point's
  // buffers, or a table of the route's own (static storage).
  virtual std::span<const sample_destination> places() const;
  // Bytes in each place.
  virtual std::uint64_t place_bytes() const;
  // Hands `use` the place's bytes in memory the CPU may touch now, and
  // afterwards puts back what `use` wrote (overwrite, update): host memory
  // directly, a device buffer mapped or copied through a host buffer.
  virtual void reach_place(const sample_destination& d, place_access a,
                           const std::function<void(std::span<std::byte>)>& use);
  // Poisons one place; the default writes core's poison through
  // reach_place. Override where the device does it without the CPU (a memset).
  virtual void poison_place(const sample_destination& d);
  // The first byte of a place that differs from its pattern; the default
  // reads it through reach_place. Override where the device can look in
  // place (a check kernel, rather than a GiB copied back).
  virtual std::optional<place_mismatch> find_mismatch(const sample_destination& d);
  // Step k of one repetition alone, finished before it returns, writing
  // places()[k]. verify() runs a route step by step where a place cannot be
  // poisoned before a whole repetition (rw reads back into its own source).
  virtual void run_step(std::size_t k);
};

// Throws verification_error naming the place, the first bad byte and what it
// holds: the one wording of a failed check, for every backend.
[[noreturn]] void throw_place_mismatch(const char* what, std::uint64_t bytes, const place_mismatch& m);

class backend {
 public:
  virtual ~backend() = default;
  virtual std::string name() const = 0;
  virtual std::string description() const = 0;
  virtual std::vector<device_info> devices() const = 0;
  virtual std::vector<route_info> routes() const = 0;
  virtual std::vector<kind_support> host_memory_kinds() const = 0;
  // Driver/runtime versions for the result file's system section.
  virtual std::map<std::string, std::string> versions() const { return {}; }
  // A host memory resource of the named kind, for other studies (the CPU
  // side, the allocator study) to use. Throws skip_point with the reason when
  // the kind is unknown or unavailable here. The default serves the kinds
  // every machine has (mem::make_host_kind); backends add their own.
  virtual std::unique_ptr<mem::host_resource> host_memory(const std::string& kind) const;
  // Throws skip_point when the point cannot run here (with why); anything
  // else it throws marks the point failed.
  virtual std::unique_ptr<transfer> prepare(const point_spec& point) = 0;
  // Why `route` can never move host memory of `kind` on this backend (a
  // kernel cannot address pageable memory, the staged copier is for pageable
  // memory), or "" when the pairing exists. The plan leaves such pairings out
  // unless both were named; prepare() still refuses them with the same words.
  virtual std::string pairing_gap(route_kind route, const std::string& kind) const;
  // A copy from point.device's memory to point.peer's (route peer, direction
  // d2d), and how it travels: "peer" (the devices reach each other's memory
  // directly), or "staged via host" (through a host buffer, where the API
  // gives no direct path). The default has no peer copies: skip_point.
  struct peer_copy {
    std::unique_ptr<transfer> copy;
    std::string path;
  };
  virtual peer_copy prepare_peer(const point_spec& point);
};

// A backend this build knows, present or not: impl is null when it cannot run
// on this machine (no driver, no platform), and reason says why.
struct backend_entry {
  std::string name;
  std::unique_ptr<backend> impl;
  std::string reason;
};

}  // namespace xfer
