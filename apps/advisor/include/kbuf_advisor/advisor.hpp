// kbuf-advisor's core: what a Kokkos program allocates, how long each allocation lives, and what
// one kbuf::BufferAllocator per host thread and memory space would do with its temporaries,
// replayed through kbuf's own rules (kbuf/impl/buffer_policy.hpp). The Kokkos Tools library
// (tool.cpp) feeds it the events; tests and the benchmark feed it directly. It includes no Kokkos
// header and makes no Kokkos call: what it does never reaches the program's Kokkos.
//
// Thread-safe: every event takes one mutex; each host thread's verdicts follow from its own
// events alone. Its memory is bounded whatever the length of the run: aggregates per label,
// region, space and host thread (each capped), histograms of fixed size, a record per live
// allocation of the program (the program holds those anyway), the allocations still waiting
// for their verdict (at most `window` events per host thread) and the temporaries the replay
// still holds, time series and a trace of capped size (what is left out is counted and said).
#ifndef KBUF_ADVISOR_ADVISOR_HPP
#define KBUF_ADVISOR_ADVISOR_HPP

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kbuf_advisor {

/// The settings, each from an environment variable (read once, at load).
struct Settings {
  std::string output;                 ///< KBUF_ADVISOR_OUTPUT: folder of the three files
  std::size_t max_kernels = 8;        ///< KBUF_ADVISOR_KERNELS: a temporary lives at most
                                      ///< this many kernels of its thread
  std::size_t max_hold = 8;           ///< KBUF_ADVISOR_HOLD (default: max_kernels): kernels a
                                      ///< temporary freed out of LIFO order may stay held
                                      ///< past its free
  std::size_t window = 65536;         ///< KBUF_ADVISOR_WINDOW: events of a host thread an
                                      ///< allocation may await its verdict
  std::size_t trace_events = 200000;  ///< KBUF_ADVISOR_TRACE_EVENTS: trace size cap
  std::size_t max_names = 4096;       ///< KBUF_ADVISOR_NAMES: labels, regions, kernels kept
  std::size_t top = 12;               ///< KBUF_ADVISOR_TOP: rows per table in the report
  std::size_t sites = 64;             ///< KBUF_ADVISOR_SITES: call sites given a replay of
                                      ///< their own and one with every site above them
  std::size_t site_events = 1 << 20;  ///< KBUF_ADVISOR_SITE_EVENTS: events of the replay's
                                      ///< stream kept for those replays (repeats stored once)
  std::string report = "stderr";      ///< KBUF_ADVISOR_REPORT: stderr, stdout or off
  bool regions = true;                ///< KBUF_ADVISOR_REGIONS (1 or 0): an allocation freed
                                      ///< before the innermost profiling region open at its
                                      ///< allocation ends is a temporary, however many kernels
                                      ///< ran (a kbuf scope opened with the region serves it)
  std::vector<std::string> pick;      ///< KBUF_ADVISOR_PICK: labels (comma-separated) replayed
                                      ///< together into one buffer (Results::picked)

  /// From the environment; a value that cannot be read keeps the default and adds a line to
  /// `warnings`.
  static Settings from_environment(std::vector<std::string>& warnings);
};

/// Counts by powers of two above 63 and exactly below: lifetimes in kernels.
struct Histogram {
  static constexpr std::size_t exact = 64;
  std::array<std::uint64_t, exact + 64> buckets{};
  void add(std::uint64_t v) noexcept;
  [[nodiscard]] std::uint64_t count() const noexcept;
  /// The value at quantile q (0..1): exact below 64, a bucket's lower bound above.
  [[nodiscard]] double quantile(double q) const noexcept;
};

/// Why a temporary candidate was left to the program's own allocations in the replay.
enum class Reason : std::uint8_t {
  too_long,      ///< lived more than max_kernels kernels of its thread, and past the end of
                 ///< the profiling region it was allocated in (if any)
  out_of_order,  ///< freed so long after older temporaries that holding them (LIFO) would keep
                 ///< one more than max_hold kernels past its own free and past the end of the
                 ///< region it was allocated in
  live_at_end,   ///< never freed before Kokkos::finalize
  window,        ///< live while its thread's queue passed `window` events
  kbuf_own,      ///< a buffer or fallback of the program's own kbuf allocator
  count
};
const char* to_string(Reason r) noexcept;

/// What one label, region or space came to.
struct Aggregate {
  std::uint64_t count = 0, bytes = 0, frees = 0, lifo_frees = 0;
  std::uint64_t served = 0, served_bytes = 0;  ///< taken by the replay (buffer or fallback)
  std::uint64_t from_buffer = 0;               ///< of those, carved from its buffer
  std::array<std::uint64_t, static_cast<std::size_t>(Reason::count)> not_served{};
  Histogram kernels;  ///< lifetime in kernels of the allocating thread, freed ones
  Histogram micros;   ///< lifetime in microseconds, freed ones
};

struct SpaceTotals {
  std::string name;
  std::uint64_t allocations = 0, deallocations = 0, bytes = 0, held = 0, peak_held = 0;
};

/// One of kbuf's own record spaces ("kbuf:<label>"): temporaries a kbuf allocator of the
/// program served, reported apart and never counted as allocations.
struct KbufSpace {
  std::string name;
  std::uint64_t temporaries = 0, releases = 0, bytes = 0, held = 0, peak_held = 0;
};

/// One BufferAllocator of the replay (a host thread and a memory space).
struct ReplayResult {
  std::uint32_t thread = 0;
  std::string space;
  std::size_t alignment = 0;
  std::uint64_t temporaries = 0, from_buffer = 0, fallbacks = 0, first_round_fallbacks = 0;
  std::uint64_t regrows = 0;
  std::uint64_t released_late = 0;  ///< freed while a newer one was held: held until it went
  std::size_t capacity_at_end = 0, capacity = 0, high_water_mark = 0;
  /// Allocations of the program that this allocator makes unnecessary: temporaries carved from
  /// the buffer, less the buffers it allocated.
  [[nodiscard]] std::int64_t allocations_avoided() const noexcept {
    return static_cast<std::int64_t>(from_buffer) - static_cast<std::int64_t>(regrows);
  }
};

struct Named {
  std::string space, name;
  Aggregate a;
  std::uint64_t instances = 0, peak_held = 0;  ///< regions only
};

/// A column of the memory series: what was held during [begin, end) of the run, its least, its
/// most and its value at the end. Between two columns nothing changed: the earlier one's last
/// values were held.
struct SeriesColumn {
  double begin = 0, end = 0;  ///< seconds since the advisor started
  std::uint64_t temporaries_min = 0, temporaries_max = 0, temporaries_last = 0;
  std::uint64_t held_min = 0, held_max = 0, held_last = 0;  ///< temporaries and the rest
};

/// A call site (a label in a memory space) whose temporaries the replay serves, and what a
/// buffer serving it would do: alone, and together with every site above it in Results::sites.
struct Site {
  std::string space, label;
  std::uint64_t count = 0, bytes = 0;               ///< the site's allocations
  std::uint64_t temporaries = 0;                    ///< of those, temporaries the replay serves
  std::int64_t allocations_avoided = 0;             ///< by a buffer for this site alone
  std::size_t capacity = 0;                         ///< that buffer's capacity
  std::uint64_t fallbacks = 0;                      ///< that buffer's first-round fallbacks
  std::size_t cumulative_capacity = 0;              ///< the buffer this site and those above need
  std::int64_t cumulative_allocations_avoided = 0;  ///< by that buffer
  std::uint64_t first_round_fallbacks = 0;          ///< that buffer's first-round fallbacks
  std::uint64_t cumulative_fallbacks = 0;           ///< that buffer's fallbacks in all
  std::uint64_t cumulative_regrows = 0;             ///< that buffer's regrowths
  /// Kokkos itself allocates it (inside_kokkos()): no adopter can change it. Such sites come
  /// after every other in Results::sites.
  bool inside_kokkos = false;
};

/// True for a label that Kokkos itself allocates under, in its algorithms and containers:
/// "Kokkos::..." (BinSort's, sort_by_key's, Random's), ScatterView's "duplicated_<view>",
/// Kokkos::sort's "view_dc", the std algorithms' temporaries and UnorderedMap's arrays.
bool inside_kokkos(const std::string& label);

/// The sites KBUF_ADVISOR_PICK names, replayed together: what one buffer for them would do (per
/// host thread and memory space, summed), as Site's cumulative numbers are for a prefix.
struct Picked {
  std::vector<std::string> labels;    ///< picked and seen, in the order given
  std::vector<std::string> not_seen;  ///< picked but never allocated
  std::uint64_t temporaries = 0;      ///< theirs that the replay serves (and the buffer takes)
  std::size_t capacity = 0;           ///< the buffer they need together
  std::uint64_t first_round_fallbacks = 0, fallbacks = 0, regrows = 0;
  std::int64_t allocations_avoided = 0;
};

/// The temporaries one of the program's kbuf allocators served under one label: the part of a
/// call site already adopted, beside the allocations of that label the program still makes.
struct Adopted {
  std::string space;      ///< the allocator's memory space (its buffer's), or its record space
  std::string allocator;  ///< the record space, "kbuf:<allocator label>"
  std::string label;      ///< the temporary's label
  std::uint64_t temporaries = 0, bytes = 0, held = 0, peak_held = 0;
  std::uint64_t left = 0;           ///< allocations of the program under this label and space
  std::int64_t left_avoidable = 0;  ///< of those, avoided by a buffer for the site alone
};

struct Marker {
  double seconds = 0;
  std::string name;
};

/// One complete event of the trace (Chrome trace-event format): a kernel, a region, a fence or
/// a deep copy. (The bytes held, its counters, come from Results::series.)
struct TraceEvent {
  enum Kind : std::uint8_t { kernel, region, deep_copy, fence } kind;
  std::uint32_t thread = 0;
  std::uint32_t name = 0;  ///< index into Results::names
  double begin_us = 0, duration_us = 0;
  std::uint64_t bytes = 0;         ///< deep copies: bytes copied
  std::uint32_t to = 0, from = 0;  ///< deep copies: "label [space]" (Results::names)
};

/// Everything the report, the JSON, the SVG and the trace are made from.
struct Results {
  Settings settings;
  std::vector<std::string> warnings;
  double seconds = 0;
  std::uint64_t allocations = 0, deallocations = 0, bytes = 0, unmatched_frees = 0;
  std::uint64_t kernels = 0, fences = 0, deep_copies = 0, deep_copy_bytes = 0, pushes = 0;
  std::uint64_t threads = 0;       ///< host threads that made events
  std::uint64_t thread_slots = 0;  ///< slots they used (an exited thread's is reused)
  std::vector<SpaceTotals> spaces;
  std::vector<KbufSpace> kbuf_spaces;
  std::vector<Named> labels;        ///< most allocations first
  std::vector<Named> regions;       ///< most allocations first
  std::uint64_t names_dropped = 0;  ///< events whose label or region went to "(other)"
  std::vector<ReplayResult> replays;
  std::array<std::uint64_t, static_cast<std::size_t>(Reason::count)> not_served{};
  std::vector<Site> sites;           ///< most allocations avoided alone first
  std::uint64_t sites_left_out = 0;  ///< served sites past KBUF_ADVISOR_SITES
  /// Temporaries the per-site replays cover (all of them, unless KBUF_ADVISOR_SITE_EVENTS
  /// stopped the stream first: then its start).
  std::uint64_t site_stream_temporaries = 0;
  std::vector<Adopted> adopted;      ///< most temporaries first
  Picked picked;                     ///< empty unless KBUF_ADVISOR_PICK names sites
  std::vector<SeriesColumn> series;  ///< columns in which something changed, in time order
  double series_width = 0;           ///< seconds per column
  std::vector<Marker> markers;       ///< starts of outermost regions (a sample if many)
  std::uint64_t outer_regions = 0;   ///< outermost regions of the first thread, in all
  std::vector<std::string> names;    ///< trace names
  std::vector<TraceEvent> trace;
  std::uint64_t trace_dropped = 0;
  std::size_t peak_pending = 0;  ///< most events in one host thread's queue

  /// Summed over the replay's allocators.
  [[nodiscard]] std::size_t capacity() const noexcept;
  [[nodiscard]] std::int64_t allocations_avoided() const noexcept;
  [[nodiscard]] std::uint64_t first_round_fallbacks() const noexcept;
  [[nodiscard]] std::uint64_t fallbacks() const noexcept;
  [[nodiscard]] std::uint64_t served() const noexcept;
};

/// The event sink. All members are thread-safe.
class Advisor {
 public:
  explicit Advisor(Settings settings);
  ~Advisor();
  Advisor(const Advisor&) = delete;
  Advisor& operator=(const Advisor&) = delete;

  void allocate(const char* space, const char* label, const void* ptr, std::uint64_t size);
  void deallocate(const char* space, const char* label, const void* ptr, std::uint64_t size);
  /// Returns the handle end_kernel takes back.
  std::uint64_t begin_kernel(const char* name);
  void end_kernel(std::uint64_t handle);
  void push_region(const char* name);
  void pop_region();
  std::uint64_t begin_fence(const char* name);
  void end_fence(std::uint64_t handle);
  void begin_deep_copy(const char* dst_space, const char* dst_label, const char* src_space,
                       const char* src_label, std::uint64_t size);
  void end_deep_copy();

  /// Decides what still waits (live allocations: live at the end) and gathers the results.
  /// The advisor takes no events after it.
  Results finish();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

/// The terminal report.
std::string format_report(const Results& r);
/// kbuf-advisor.json's text.
std::string format_json(const Results& r);
/// kbuf-advisor.svg's text.
std::string format_svg(const Results& r);
/// kbuf-advisor.trace.json's text.
std::string format_trace(const Results& r);

/// Writes the three files into `dir` (made if missing, one level). Returns an empty string, or
/// what went wrong (for the line on stderr).
std::string write_outputs(const Results& r, const std::string& dir);

}  // namespace kbuf_advisor

#endif  // KBUF_ADVISOR_ADVISOR_HPP
