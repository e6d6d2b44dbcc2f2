// kbuf-advisor's event sink: aggregates, verdicts and the replay. See advisor.hpp.
//
// How an allocation becomes a temporary of the replay. Each host thread has its own queue: the
// allocations it makes and the frees of them (whichever thread frees), in the order they came.
// The allocation at the head of a thread's queue waits for its verdict: once it is freed, it is a
// temporary if it lived at most max_kernels kernels of its thread, or (regions on) if it was
// freed before the innermost profiling region open at its allocation ended, and the replay
// serves it if its lifetime nests inside those of the temporaries the replay holds on that
// thread and space (kbuf releases in LIFO order; one freed before newer ones stays held until
// they go, up to max_hold kernels past its free, or for as long as its region is still open);
// once its thread has run more than max_kernels kernels without freeing it and its region (if
// any) has ended, it lives too long; once its thread's queue holds more than `window` events,
// it outlived the window. Each queue is then processed in order, so the replay of a thread sees
// that thread's temporaries in the order it took them. Only the thread's own events (and the
// frees of its allocations) move its queue: what other threads do, or how long they make this
// one wait, changes no verdict.
#include <kbuf_advisor/advisor.hpp>
#include <kbuf_advisor/replay.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <string_view>
#include <unordered_map>
#include <utility>

namespace kbuf_advisor {

namespace {

bool read_size(const char* name, std::size_t& value, std::size_t least,
               std::vector<std::string>& warnings) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return false;
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || text[0] == '-' || v < least) {
    warnings.push_back(std::string(name) + "='" + text + "' is not a whole number >= " +
                       std::to_string(least) + "; using " + std::to_string(value));
    return false;
  }
  value = static_cast<std::size_t>(v);
  return true;
}

int bit_width(std::uint64_t v) noexcept {
  int w = 0;
  while (v != 0) {
    ++w;
    v >>= 1;
  }
  return w;
}

}  // namespace

Settings Settings::from_environment(std::vector<std::string>& warnings) {
  Settings s;
  if (const char* out = std::getenv("KBUF_ADVISOR_OUTPUT")) s.output = out;
  read_size("KBUF_ADVISOR_KERNELS", s.max_kernels, 0, warnings);
  s.max_hold = s.max_kernels;  // unless said otherwise: held no longer than a temporary lives
  read_size("KBUF_ADVISOR_HOLD", s.max_hold, 0, warnings);
  read_size("KBUF_ADVISOR_WINDOW", s.window, 1, warnings);
  read_size("KBUF_ADVISOR_TRACE_EVENTS", s.trace_events, 0, warnings);
  read_size("KBUF_ADVISOR_NAMES", s.max_names, 1, warnings);
  read_size("KBUF_ADVISOR_TOP", s.top, 1, warnings);
  read_size("KBUF_ADVISOR_SITES", s.sites, 1, warnings);
  read_size("KBUF_ADVISOR_SITE_EVENTS", s.site_events, 0, warnings);
  if (const char* regions = std::getenv("KBUF_ADVISOR_REGIONS")) {
    const std::string v = regions;
    if (v == "1" || v == "0") {
      s.regions = v == "1";
    } else if (!v.empty()) {
      warnings.push_back("KBUF_ADVISOR_REGIONS='" + v + "' is not 1 or 0; using 1");
    }
  }
  if (const char* pick = std::getenv("KBUF_ADVISOR_PICK")) {
    const std::string v = pick;
    for (std::size_t at = 0; at <= v.size();) {
      const std::size_t comma = std::min(v.find(',', at), v.size());
      const std::string label = v.substr(at, comma - at);
      if (!label.empty() && std::find(s.pick.begin(), s.pick.end(), label) == s.pick.end()) {
        s.pick.push_back(label);
      }
      at = comma + 1;
    }
  }
  if (const char* rep = std::getenv("KBUF_ADVISOR_REPORT")) {
    const std::string r = rep;
    if (r == "stderr" || r == "stdout" || r == "off") {
      s.report = r;
    } else {
      warnings.push_back("KBUF_ADVISOR_REPORT='" + r +
                         "' is not stderr, stdout or off; using stderr");
    }
  }
  return s;
}

void Histogram::add(std::uint64_t v) noexcept {
  if (v < exact) {
    ++buckets[v];
  } else {
    ++buckets[exact + static_cast<std::size_t>(bit_width(v) - 7)];  // 64..127 -> exact + 0
  }
}

std::uint64_t Histogram::count() const noexcept {
  std::uint64_t n = 0;
  for (std::uint64_t b : buckets) n += b;
  return n;
}

double Histogram::quantile(double q) const noexcept {
  const std::uint64_t n = count();
  if (n == 0) return 0;
  // The smallest value with at least ceil(q n) values at or below it (the lower median).
  std::uint64_t rank = static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(n)));
  if (rank == 0) rank = 1;
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i < buckets.size(); ++i) {
    seen += buckets[i];
    if (seen >= rank) {
      if (i < exact) return static_cast<double>(i);
      return std::ldexp(1.0, static_cast<int>(i - exact) + 6);
    }
  }
  return 0;
}

bool inside_kokkos(const std::string& label) {
  // Kokkos 3.x and 4.x: BinSort ("Kokkos::SortImpl::BinSortFunctor::..."), sort_by_key
  // ("Kokkos::sort_by_key_via_sort::permute"), Random, ScatterView's duplicates, Kokkos::sort's
  // copy of a view it cannot sort in place, the std algorithms' temporaries, UnorderedMap's
  // arrays.
  const auto starts = [&](std::string_view prefix) {
    return label.compare(0, prefix.size(), prefix) == 0;
  };
  if (starts("Kokkos::") || starts("duplicated_") || starts("UnorderedMap ")) return true;
  for (std::string_view name :
       {"view_dc", "std_remove_if_tmp_view", "std_unique_tmp_view", "shift_left_impl",
        "shift_right_impl", "rotate_impl_for_pivot_in_left_half_impl"}) {
    if (label == name) return true;
  }
  return false;
}

const char* to_string(Reason r) noexcept {
  switch (r) {
    case Reason::too_long:
      return "lives too long";
    case Reason::out_of_order:
      return "freed out of LIFO order too late";
    case Reason::live_at_end:
      return "live at the end";
    case Reason::window:
      return "outlived the window";
    case Reason::kbuf_own:
      return "kbuf's own buffer or fallback";
    case Reason::count:
      break;
  }
  return "?";
}

namespace {
// The sum of `of(r)` over the replay's allocators.
template <class T, class Of>
T sum_over(const std::vector<ReplayResult>& replays, Of of) noexcept {
  T sum = 0;
  for (const ReplayResult& r : replays) sum += of(r);
  return sum;
}
}  // namespace

std::size_t Results::capacity() const noexcept {
  return sum_over<std::size_t>(replays, [](const ReplayResult& r) { return r.capacity; });
}
std::int64_t Results::allocations_avoided() const noexcept {
  return sum_over<std::int64_t>(replays,
                                [](const ReplayResult& r) { return r.allocations_avoided(); });
}
std::uint64_t Results::first_round_fallbacks() const noexcept {
  return sum_over<std::uint64_t>(replays,
                                 [](const ReplayResult& r) { return r.first_round_fallbacks; });
}
std::uint64_t Results::fallbacks() const noexcept {
  return sum_over<std::uint64_t>(replays, [](const ReplayResult& r) { return r.fallbacks; });
}
std::uint64_t Results::served() const noexcept {
  return sum_over<std::uint64_t>(replays, [](const ReplayResult& r) { return r.temporaries; });
}

namespace {

constexpr std::uint32_t no_region = 0;          // regions[0]: outside every region
constexpr std::uint64_t series_columns = 2048;  // columns over the run (their width doubles)
constexpr double first_column_width = 1e-6;     // seconds
constexpr std::size_t round_limit = 4096;  // tokens of a round cut where the stack never empties
constexpr std::size_t marker_limit = 128;
constexpr std::size_t max_threads = 1024;  // at once; beyond, the rest share the last slot
constexpr std::size_t max_region_depth = 64;
constexpr std::uint64_t region_open = ~std::uint64_t{0};  // Pending::region_end while open

struct Pending {
  std::uint64_t seq = 0;  // the allocation's sequence number
  std::uint32_t label = 0, region = 0, thread = 0, space = 0;
  std::uint64_t size = 0, kernel_at = 0;
  double t = 0;
  bool freed = false, decided = false, served = false, zero = false;
  std::uint64_t lifetime_kernels = 0;
  std::uint32_t replay = 0;
  std::size_t slot = 0;     // its entry in the replay's stack
  std::uint64_t token = 0;  // its take's number in the replay's stream
  // Regions on: when the innermost region open at its allocation ended (State::clock; 0:
  // allocated outside every region; region_open: not yet), and when it was freed.
  std::uint64_t region_end = 0, free_clock = 0;
  bool in_region = false;  // freed before that region ended
};

struct Entry {
  std::uint32_t record;  // the allocation's Pending (State::records)
  bool free;
  double t;
};

struct OpenRegion {
  std::uint32_t id, name;
  double t0;
  std::uint64_t peak;
  // Regions on: the allocations made in it while it was the innermost (record, sequence
  // number), told when it ends; those whose record went to another allocation are dropped.
  std::vector<std::pair<std::uint32_t, std::uint64_t>> made{};
  std::size_t kept = 0;  // entries after the last drop
};

// What one host thread held in a column of time (the run cut into columns of one width, the
// same for every thread): the least, the most and the last, of its temporaries and of all it
// held. A column is kept only where something changed; in between, the last values held.
struct Column {
  std::uint64_t index;
  std::uint64_t tmin, tmax, tlast, hmin, hmax, hlast;
};

struct Series {
  std::vector<Column> columns;

  // From column `index` on, the thread holds `temp` bytes of temporaries and `held` in all.
  void add(std::uint64_t index, std::uint64_t temp, std::uint64_t held) {
    if (columns.empty() || columns.back().index != index) {
      // What was held when the column began counts too.
      const std::uint64_t t0 = columns.empty() ? 0 : columns.back().tlast;
      const std::uint64_t h0 = columns.empty() ? 0 : columns.back().hlast;
      columns.push_back(Column{index, t0, t0, t0, h0, h0, h0});
    }
    Column& c = columns.back();
    c.tmin = std::min(c.tmin, temp);
    c.tmax = std::max(c.tmax, temp);
    c.tlast = temp;
    c.hmin = std::min(c.hmin, held);
    c.hmax = std::max(c.hmax, held);
    c.hlast = held;
  }

  // Columns twice as wide: each pair merged.
  void widen() {
    std::size_t n = 0;
    for (std::size_t i = 0; i < columns.size(); ++i) {
      Column c = columns[i];
      c.index /= 2;
      if (n != 0 && columns[n - 1].index == c.index) {
        Column& a = columns[n - 1];
        a.tmin = std::min(a.tmin, c.tmin);
        a.tmax = std::max(a.tmax, c.tmax);
        a.tlast = c.tlast;
        a.hmin = std::min(a.hmin, c.hmin);
        a.hmax = std::max(a.hmax, c.hmax);
        a.hlast = c.hlast;
      } else {
        columns[n++] = c;
      }
    }
    columns.resize(n);
  }
};

// The replay's stream, kept for the per-site replays: a take of `value` bytes by the site
// `label`, or (label == free_token) the free of the take `value` tokens back.
constexpr std::uint32_t free_token = 0xffffffffu;
struct Token {
  std::uint64_t value;
  std::uint32_t label;
  bool operator==(const Token& o) const noexcept { return value == o.value && label == o.label; }
};

// A stretch of one allocator's stream, mostly from one empty stack to the next (a kbuf scope's
// worth); a program repeats them, and each is kept once.
struct Round {
  std::vector<Token> tokens;
  std::vector<std::uint32_t> labels;  // the sites it takes for, ascending
  std::uint64_t takes = 0;
};

// Names looked up without making a string: each kept once, in storage that does not move. The
// keys point into `text`: a copy would point into the original, so there is none (a vector of
// them must move them when it grows, though a deque's move may throw).
struct NameIndex {
  std::deque<std::string> text;
  std::unordered_map<std::string_view, std::uint32_t> index;

  NameIndex() = default;
  NameIndex(const NameIndex&) = delete;
  NameIndex& operator=(const NameIndex&) = delete;
  NameIndex(NameIndex&&) = default;
  NameIndex& operator=(NameIndex&&) = default;

  const std::uint32_t* find(std::string_view name) const {
    const auto found = index.find(name);
    return found == index.end() ? nullptr : &found->second;
  }
  void add(std::string_view name, std::uint32_t id) {
    text.emplace_back(name);
    index.emplace(text.back(), id);
  }
};

// The live allocations of one thread and space, oldest first: tells whether a free is of the
// newest (LIFO). Freed ones below the newest are marked and dropped as they surface, or all at
// once when they are the most.
struct LiveStack {
  std::vector<std::pair<std::uint64_t, bool>> seqs;  // (sequence number, freed), ascending
  std::size_t freed = 0;

  void push(std::uint64_t seq) { seqs.emplace_back(seq, false); }

  // Drops `seq`; true if it was the newest live one.
  bool free(std::uint64_t seq) {
    if (seqs.empty()) return false;
    if (seqs.back().first == seq) {
      seqs.pop_back();
      while (!seqs.empty() && seqs.back().second) {
        seqs.pop_back();
        --freed;
      }
      return true;
    }
    const auto it = std::lower_bound(
        seqs.begin(), seqs.end(), seq,
        [](const std::pair<std::uint64_t, bool>& e, std::uint64_t s) { return e.first < s; });
    if (it != seqs.end() && it->first == seq && !it->second) {
      it->second = true;
      if (++freed > seqs.size() / 2 + 16) {
        seqs.erase(std::remove_if(seqs.begin(), seqs.end(),
                                  [](const std::pair<std::uint64_t, bool>& e) { return e.second; }),
                   seqs.end());
        freed = 0;
      }
    }
    return false;
  }
};

// One host thread (a slot: a thread that exits hands it to the next new one, as
// kbuf::AllocatorPool hands an exited thread's allocator on).
struct ThreadState {
  std::uint64_t kernels = 0;
  std::uint64_t generation = 0;  // the thread holding the slot (ThreadSlot::generation)
  std::vector<OpenRegion> regions;
  std::vector<std::pair<std::uint32_t, double>> kernels_open, fences_open;
  struct Copy {
    double t0;
    std::uint64_t bytes;
    std::uint32_t to, from;
  };
  std::vector<Copy> copies_open;
  // This thread's allocations and the frees of them, in order; the head awaits its verdict.
  std::deque<Entry> queue;
  // Bytes this thread's decided allocations hold (temporaries of the replay, the rest), and
  // their series.
  std::uint64_t temp_held = 0, other_held = 0;
  Series series;
  std::vector<LiveStack> live;  // per memory space: for the share of LIFO frees
};

// A temporary the replay holds. One freed while a newer one is live stays held (dead) until
// every newer one is freed too, as a kbuf scope around them would release them together.
struct Held {
  Replay::Point point;            // the replay's point before it
  std::uint64_t free_kernel;      // its thread's kernel count when the program freed it
  std::uint64_t min_free_kernel;  // the least free_kernel of it and the ones below it
  bool dead;
  std::uint32_t record;  // its Pending, kept until it leaves the stack (for its region_end)
};

struct ReplayState {
  ReplayState(std::uint32_t t, std::uint32_t s, std::size_t alignment)
      : thread(t), space(s), replay(alignment) {}
  std::uint32_t thread, space;
  Replay replay;
  std::vector<Held> held;  // oldest first
  std::uint64_t temporaries = 0, from_buffer = 0, held_late = 0;
  // The stream: takes and frees numbered from 0; the open round, and the rounds closed so far
  // (a round's id, repeated so many times in a row).
  std::uint64_t tokens = 0;
  std::vector<Token> open;
  std::vector<std::pair<std::uint32_t, std::uint64_t>> runs;
  std::uint64_t recorded = 0;  // temporaries in those runs
  // Each site's temporaries alone, replayed as they come.
  std::unordered_map<std::uint32_t, SiteReplay> alone;
};

std::size_t alignment_of(const std::string& space) {
  // BufferAllocator's default_alignment: 64 in HostSpace (named "Host"), 256 elsewhere.
  return space == "Host" ? 64 : 256;
}

// Host thread slots, for the whole process: a thread takes the lowest free one at its first
// event and gives it back when it exits.
struct ThreadSlots {
  std::mutex mutex;
  std::vector<std::uint32_t> free;  // given back, to be reused
  std::uint32_t next = 0;
  std::uint64_t generations = 0;
};
ThreadSlots& thread_slots() {
  static ThreadSlots* slots = new ThreadSlots();  // never destroyed: threads may outlive statics
  return *slots;
}

struct ThreadSlot {
  std::uint32_t id;
  std::uint64_t generation;
  ThreadSlot() {
    ThreadSlots& s = thread_slots();
    std::lock_guard<std::mutex> lock(s.mutex);
    generation = ++s.generations;
    if (!s.free.empty()) {
      id = s.free.back();
      s.free.pop_back();
    } else if (s.next < max_threads - 1) {
      id = s.next++;
    } else {
      id = static_cast<std::uint32_t>(max_threads - 1);  // shared by every thread beyond
    }
  }
  ~ThreadSlot() {
    if (id == max_threads - 1) return;
    ThreadSlots& s = thread_slots();
    std::lock_guard<std::mutex> lock(s.mutex);
    s.free.push_back(id);
  }
  ThreadSlot(const ThreadSlot&) = delete;
  ThreadSlot& operator=(const ThreadSlot&) = delete;
};

const ThreadSlot& this_thread() {
  thread_local const ThreadSlot slot;
  return slot;
}

bool is_kbuf_space(const char* space) {
  return std::strncmp(space, "kbuf:", 5) == 0;
}

}  // namespace

namespace {
// One more allocation or temporary of `size` bytes in totals that count them (`count`), their
// bytes, the bytes held and the peak of those (a memory space's, a kbuf record space's, an
// adopted label's).
template <class Totals>
void count_held(Totals& totals, std::uint64_t& count, std::uint64_t size) {
  ++count;
  totals.bytes += size;
  totals.held += size;
  totals.peak_held = std::max(totals.peak_held, totals.held);
}
}  // namespace

struct Advisor::State {
  explicit State(Settings s) : settings(std::move(s)), t0(std::chrono::steady_clock::now()) {
    regions.push_back(Named{"", "(outside regions)", {}, 0, 0});
  }

  std::mutex mutex;
  Settings settings;
  std::chrono::steady_clock::time_point t0;
  bool finished = false;

  std::uint64_t seq = 0;    // allocations so far
  std::uint64_t clock = 0;  // frees and region ends so far (Pending::region_end, free_clock)
  std::uint64_t allocations = 0, deallocations = 0, bytes = 0, unmatched = 0;
  std::uint64_t kernels = 0, fences = 0, copies = 0, copy_bytes = 0, region_pushes = 0;
  std::uint64_t held = 0;          // bytes held in real spaces
  std::uint64_t threads_seen = 0;  // host threads that made an event

  std::vector<SpaceTotals> spaces;
  std::vector<KbufSpace> kbuf_spaces;
  std::vector<Named> labels, regions;
  std::vector<NameIndex> label_index;   // per memory space
  std::vector<std::string> kbuf_owner;  // per label: see kbuf_owner_of
  NameIndex region_index, names_index;
  std::uint64_t names_dropped = 0;
  std::vector<std::string> names;  // trace names

  std::vector<ThreadState> threads;
  std::unordered_map<const void*, std::uint32_t> live;  // pointer -> record
  // A record per allocation that is live or awaits its verdict or the processing of its free;
  // freed records are reused.
  std::vector<Pending> records;
  std::vector<std::uint32_t> free_records;
  std::size_t peak_pending = 0;  // most events in one thread's queue

  std::vector<ReplayState> replays;
  std::map<std::uint64_t, std::uint32_t> replay_index;
  std::array<std::uint64_t, static_cast<std::size_t>(Reason::count)> not_served{};

  std::vector<Marker> markers;
  std::uint64_t marker_stride = 1, outer_regions = 0;
  double column_width = first_column_width;

  // The rounds of every allocator's stream, each kept once; the events they and the runs take
  // (at most settings.site_events: past it the streams stop).
  std::vector<Round> rounds;
  std::unordered_multimap<std::uint64_t, std::uint32_t> round_index;
  std::uint64_t stream_kept = 0;
  bool stream_full = false;

  // kbuf's records by record space and label (Results::adopted): per record space (index of
  // kbuf_spaces) an index of its labels.
  std::vector<Adopted> adopted;
  std::vector<NameIndex> adopted_index;

  std::vector<TraceEvent> trace;
  std::uint64_t trace_dropped = 0;

  double now() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }

  // The calling thread's state (its slot's; a new thread in a reused slot is counted).
  std::uint32_t thread_id(const ThreadSlot& slot) {
    ThreadState& ts = thread(slot.id);
    if (ts.generation != slot.generation) {
      ts.generation = slot.generation;
      ++threads_seen;
    }
    return slot.id;
  }

  // An event of the calling host thread: f(its index) under the lock, or, once the advisor has
  // finished, nothing (a value-initialised result: 0 for a handle).
  template <class F>
  auto on_thread(F&& f) -> decltype(f(std::uint32_t{})) {
    using R = decltype(f(std::uint32_t{}));
    const ThreadSlot& slot = this_thread();
    std::lock_guard<std::mutex> lock(mutex);
    if (finished) return R();
    return f(thread_id(slot));
  }

  ThreadState& thread(std::uint32_t t) {
    if (t >= threads.size()) threads.resize(t + 1);
    return threads[t];
  }

  std::uint32_t space_id(const char* name) {
    for (std::size_t i = 0; i < spaces.size(); ++i) {
      if (spaces[i].name == name) return static_cast<std::uint32_t>(i);
    }
    spaces.push_back(SpaceTotals{name});
    label_index.emplace_back();
    return static_cast<std::uint32_t>(spaces.size() - 1);
  }

  LiveStack& live_stack(std::uint32_t t, std::uint32_t space) {
    std::vector<LiveStack>& v = threads[t].live;
    if (space >= v.size()) v.resize(space + 1);
    return v[space];
  }

  std::size_t kbuf_space(const char* name) {
    for (std::size_t i = 0; i < kbuf_spaces.size(); ++i) {
      if (kbuf_spaces[i].name == name) return i;
    }
    kbuf_spaces.push_back(KbufSpace{name});
    adopted_index.emplace_back();
    return kbuf_spaces.size() - 1;
  }

  // kbuf's record of a temporary labelled `label` in the record space `k`: its entry in
  // `adopted`; past max_names labels, the shared "(other)" one.
  Adopted& adopted_entry(std::size_t k, const char* label) {
    NameIndex& index = adopted_index[k];
    if (const std::uint32_t* found = index.find(label)) return adopted[*found];
    std::string_view name(label);
    const bool other = adopted.size() >= settings.max_names;
    if (other) {
      ++names_dropped;
      name = std::string_view("\0(other)", 8);  // no label of the program's
      if (const std::uint32_t* found = index.find(name)) return adopted[*found];
    }
    Adopted a;
    a.allocator = kbuf_spaces[k].name;
    a.space = a.allocator;
    a.label = other ? std::string("(other)") : std::string(name);
    adopted.push_back(std::move(a));
    index.add(name, static_cast<std::uint32_t>(adopted.size() - 1));
    return adopted.back();
  }

  // A label or region entry; past max_names, the shared "(other)" one.
  std::uint32_t intern(std::vector<Named>& table, NameIndex& index, const char* space,
                       const char* name) {
    if (const std::uint32_t* found = index.find(name)) return *found;
    if (table.size() >= settings.max_names) {
      ++names_dropped;
      constexpr std::string_view other("\0(other)", 8);  // no name of the program's
      if (const std::uint32_t* found = index.find(other)) return *found;
      table.push_back(Named{"*", "(other)", {}, 0, 0});
      index.add(other, static_cast<std::uint32_t>(table.size() - 1));
      return static_cast<std::uint32_t>(table.size() - 1);
    }
    table.push_back(Named{space, name, {}, 0, 0});
    index.add(name, static_cast<std::uint32_t>(table.size() - 1));
    return static_cast<std::uint32_t>(table.size() - 1);
  }

  std::uint32_t trace_name(const char* name) {
    if (const std::uint32_t* found = names_index.find(name)) return *found;
    const char* kept = names.size() >= settings.max_names ? "(other)" : name;
    if (const std::uint32_t* found = names_index.find(kept)) return *found;
    names.emplace_back(kept);
    names_index.add(kept, static_cast<std::uint32_t>(names.size() - 1));
    return static_cast<std::uint32_t>(names.size() - 1);
  }

  // True if kept (the trace's last event).
  bool add_trace(TraceEvent::Kind kind, std::uint32_t t, std::uint32_t name, double begin,
                 double end) {
    if (trace.size() >= settings.trace_events) {
      ++trace_dropped;
      return false;
    }
    TraceEvent e{kind};
    e.thread = t;
    e.name = name;
    e.begin_us = begin * 1e6;
    e.duration_us = (end - begin) * 1e6;
    trace.push_back(e);
    return true;
  }

  // A record of kbuf's own (a temporary in the space "kbuf:<allocator label>"), taken or
  // released: counted for the record space and for the adopted label, never as an allocation.
  void kbuf_record(const char* space, const char* label, std::uint64_t size, bool taken) {
    const std::size_t i = kbuf_space(space);
    KbufSpace& k = kbuf_spaces[i];
    Adopted& a = adopted_entry(i, label);
    if (taken) {
      count_held(k, k.temporaries, size);
      count_held(a, a.temporaries, size);
    } else {
      ++k.releases;
      k.held -= std::min(k.held, size);
      a.held -= std::min(a.held, size);
    }
  }

  // Ends the newest span (a kernel, a fence) that the calling thread opened in its list `open`:
  // one trace event.
  void end_span(std::vector<std::pair<std::uint32_t, double>> ThreadState::*open,
                TraceEvent::Kind kind) {
    on_thread([&](std::uint32_t t) {
      auto& spans = threads[t].*open;
      if (spans.empty()) return;
      const auto [name, t0] = spans.back();
      spans.pop_back();
      add_trace(kind, t, name, t0, now());
    });
  }

  static std::uint64_t key(std::uint32_t t, std::uint32_t s) {
    return (static_cast<std::uint64_t>(t) << 32) | s;
  }

  ReplayState& replay_for(std::uint32_t t, std::uint32_t s, std::uint32_t& index) {
    const auto found = replay_index.find(key(t, s));
    if (found != replay_index.end()) {
      index = found->second;
      return replays[index];
    }
    replays.emplace_back(t, s, alignment_of(spaces[s].name));
    index = static_cast<std::uint32_t>(replays.size() - 1);
    replay_index.emplace(key(t, s), index);
    return replays.back();
  }

  // True for a buffer or fallback of one of the program's kbuf allocators: an allocation
  // labelled "<L>::buffer" or "<L>::fallback" while kbuf's records of the allocator <L> (space
  // "kbuf:<L>") came in. (Its buffer comes before its first record, but its verdict after it.)
  bool kbuf_own(std::uint32_t label) const {
    const std::string& space = kbuf_owner[label];
    if (space.empty()) return false;
    for (const KbufSpace& k : kbuf_spaces) {
      if (k.name == space) return true;
    }
    return false;
  }

  // For a new label: "kbuf:<L>" if it is "<L>::buffer" or "<L>::fallback", else empty.
  static std::string kbuf_owner_of(std::string_view name) {
    for (std::string_view suffix : {std::string_view("::buffer"), std::string_view("::fallback")}) {
      if (name.size() > suffix.size() && name.substr(name.size() - suffix.size()) == suffix) {
        return "kbuf:" + std::string(name.substr(0, name.size() - suffix.size()));
      }
    }
    return std::string();
  }

  // ---- each thread's decided stream ---------------------------------------------------------

  void not_serve(Pending& p, Reason r) {
    p.decided = true;
    p.served = false;
    const auto i = static_cast<std::size_t>(r);
    ++labels[p.label].a.not_served[i];
    ++regions[p.region].a.not_served[i];
    ++not_served[i];
  }

  // The verdict on the allocation at the head of its thread's queue (freed, or forced), and its
  // place in the replay.
  void decide(Pending& p, bool at_end) {
    ThreadState& ts = threads[p.thread];
    if (kbuf_own(p.label)) {
      not_serve(p, Reason::kbuf_own);
    } else if (!p.freed) {
      if (at_end) {
        not_serve(p, Reason::live_at_end);
      } else if (ts.kernels - p.kernel_at > settings.max_kernels && p.region_end != region_open) {
        not_serve(p, Reason::too_long);
      } else {
        not_serve(p, Reason::window);
      }
    } else if (p.lifetime_kernels > settings.max_kernels && !p.in_region) {
      not_serve(p, Reason::too_long);
    } else {
      std::uint32_t index = 0;
      ReplayState& r = replay_for(p.thread, p.space, index);
      // Freed after temporaries the replay holds below it: they stay held until it is freed. Up
      // to max_hold kernels past their own free that is what a kbuf scope around them does, and
      // so is any hold inside the region a held one was allocated in (a scope opened with the
      // region holds it to the region's end); beyond, it is not served.
      const std::uint64_t free_kernel = p.kernel_at + p.lifetime_kernels;
      const auto held_too_long = [&](const Held& h) {
        return free_kernel > h.free_kernel && free_kernel - h.free_kernel > settings.max_hold &&
               records[h.record].region_end <= p.free_clock;
      };
      if (!r.held.empty() && free_kernel > r.held.back().min_free_kernel &&
          free_kernel - r.held.back().min_free_kernel > settings.max_hold &&
          std::any_of(r.held.begin(), r.held.end(), held_too_long)) {
        not_serve(p, Reason::out_of_order);
      } else {
        bool from_buffer = false;
        const Replay::Point point = r.replay.acquire(static_cast<std::size_t>(p.size), from_buffer);
        p.decided = true;
        p.served = true;
        p.replay = index;
        p.zero = p.size == 0;
        if (!p.zero) {
          const std::uint64_t below =
              r.held.empty() ? free_kernel : std::min(free_kernel, r.held.back().min_free_kernel);
          p.slot = r.held.size();
          r.held.push_back(
              Held{point, free_kernel, below, false, static_cast<std::uint32_t>(&p - &records[0])});
        }
        p.token = r.tokens++;
        r.alone.try_emplace(p.label, r.replay.alignment())
            .first->second.take(p.token, static_cast<std::size_t>(p.size));
        record(r, Token{p.size, p.label}, r.held.empty());
        ++r.temporaries;
        if (from_buffer) ++r.from_buffer;
        for (Named* n : {&labels[p.label], &regions[p.region]}) {
          ++n->a.served;
          n->a.served_bytes += p.size;
          if (from_buffer) ++n->a.from_buffer;
        }
      }
    }
    (p.served ? ts.temp_held : ts.other_held) += p.size;
    const std::uint64_t column = column_of(p.t);
    threads[p.thread].series.add(column, ts.temp_held, ts.temp_held + ts.other_held);
  }

  // The column of the memory series that holds the time t; past series_columns columns, every
  // column becomes twice as wide.
  std::uint64_t column_of(double t) {
    while (t / column_width >= static_cast<double>(series_columns)) {
      column_width *= 2;
      for (ThreadState& ts : threads) ts.series.widen();
    }
    return t > 0 ? static_cast<std::uint64_t>(t / column_width) : 0;
  }

  // Adds a token to the open round of r's stream; a round ends where the replay holds nothing
  // (`empty`) or at round_limit tokens.
  void record(ReplayState& r, Token token, bool empty) {
    if (stream_full) return;
    r.open.push_back(token);
    if (empty || r.open.size() >= round_limit) close_round(r);
  }

  // Keeps the open round of r's stream: once, and once more in its run if it repeats the last.
  void close_round(ReplayState& r) {
    if (r.open.empty()) return;
    if (!stream_full) {
      std::uint64_t hash = 1469598103934665603ull;  // FNV-1a over the tokens' numbers
      for (const Token& t : r.open) {
        for (std::uint64_t v : {t.value, static_cast<std::uint64_t>(t.label)}) {
          hash = (hash ^ v) * 1099511628211ull;
        }
      }
      std::uint32_t id = free_token;
      const auto range = round_index.equal_range(hash);
      for (auto it = range.first; it != range.second; ++it) {
        if (rounds[it->second].tokens == r.open) id = it->second;
      }
      const bool new_round = id == free_token;
      const bool new_run = new_round || r.runs.empty() || r.runs.back().first != id;
      const std::uint64_t need = (new_round ? r.open.size() : 0) + (new_run ? 1 : 0);
      if (stream_kept + need > settings.site_events) {
        stream_full = true;  // the per-site replays cover the streams up to here
      } else {
        stream_kept += need;
        if (new_round) {
          Round round;
          round.tokens = r.open;
          for (const Token& t : round.tokens) {
            if (t.label == free_token) continue;
            ++round.takes;
            round.labels.push_back(t.label);
          }
          std::sort(round.labels.begin(), round.labels.end());
          round.labels.erase(std::unique(round.labels.begin(), round.labels.end()),
                             round.labels.end());
          id = static_cast<std::uint32_t>(rounds.size());
          rounds.push_back(std::move(round));
          round_index.emplace(hash, id);
        }
        if (new_run) {
          r.runs.emplace_back(id, 1);
        } else {
          ++r.runs.back().second;
        }
        r.recorded += rounds[id].takes;
      }
    }
    r.open.clear();
  }

  // Processes thread t's queue from its head while the head's verdict is known (all of it at
  // the end).
  void process(std::uint32_t t, bool at_end) {
    ThreadState& ts = threads[t];
    if (ts.queue.size() > peak_pending) peak_pending = ts.queue.size();
    while (!ts.queue.empty()) {
      const Entry e = ts.queue.front();
      Pending& p = records[e.record];
      if (!e.free) {
        if (!p.decided) {
          const bool known = p.freed || (ts.kernels - p.kernel_at > settings.max_kernels &&
                                         p.region_end != region_open);
          if (!known && !at_end && ts.queue.size() <= settings.window) return;
          decide(p, at_end && !p.freed);
        }
        ts.queue.pop_front();  // its record waits for its free (or the end)
        continue;
      }
      // A free: the allocation's verdict came before it.
      if (p.served && !p.zero) {
        ReplayState& r = replays[p.replay];
        r.held[p.slot].dead = true;
        if (p.slot + 1 != r.held.size()) ++r.held_late;  // a newer one is still held
        while (!r.held.empty() && r.held.back().dead) {
          r.replay.release(r.held.back().point);
          free_records.push_back(r.held.back().record);
          r.held.pop_back();
        }
        const std::uint64_t token = r.tokens++;
        r.alone.find(p.label)->second.free(p.token);
        record(r, Token{token - p.token, free_token}, r.held.empty());
      }
      (p.served ? ts.temp_held : ts.other_held) -= p.size;
      const std::uint64_t column = column_of(e.t);
      ts.series.add(column, ts.temp_held, ts.temp_held + ts.other_held);
      if (!p.served || p.zero) free_records.push_back(e.record);  // else when it leaves the stack
      ts.queue.pop_front();
    }
  }

  // The threads' series summed column by column: a thread without a column there holds what
  // it held at the end of its last one. With one host thread the columns are exact; with
  // several, a column's least and most are the sums of each thread's (the true least is no
  // smaller, the true most no larger).
  std::vector<SeriesColumn> merged_series(double end) const {
    struct At {
      std::uint64_t index;
      std::uint32_t thread;
      const Column* c;
    };
    std::vector<At> all;
    for (std::uint32_t t = 0; t < threads.size(); ++t) {
      for (const Column& c : threads[t].series.columns) all.push_back(At{c.index, t, &c});
    }
    std::stable_sort(all.begin(), all.end(),
                     [](const At& a, const At& b) { return a.index < b.index; });
    std::vector<std::pair<std::uint64_t, std::uint64_t>> last(threads.size());  // temp, held
    std::uint64_t temp = 0, held = 0;  // the sums of `last`
    std::vector<SeriesColumn> out;
    for (std::size_t i = 0; i < all.size();) {
      std::size_t j = i;
      // Unsigned sums that wrap: what the column's threads add to the others' last values.
      std::uint64_t tmin = temp, tmax = temp, hmin = held, hmax = held;
      for (; j < all.size() && all[j].index == all[i].index; ++j) {
        const Column& c = *all[j].c;
        auto& [lt, lh] = last[all[j].thread];
        tmin += c.tmin - lt;
        tmax += c.tmax - lt;
        hmin += c.hmin - lh;
        hmax += c.hmax - lh;
        temp += c.tlast - lt;
        held += c.hlast - lh;
        lt = c.tlast;
        lh = c.hlast;
      }
      const double begin = static_cast<double>(all[i].index) * column_width;
      out.push_back(SeriesColumn{std::min(end, begin), std::min(end, begin + column_width), tmin,
                                 tmax, temp, hmin, hmax, held});
      i = j;
    }
    return out;
  }

  // Replays the stream of `r` through `sr`, the sites `in` says only; `skip` says of a round
  // that it takes for none of them. A run of one round, once a repetition of it from an empty
  // allocator left it empty and its numbers as they were, adds the rest at once.
  template <class In, class Skip>
  void play(const ReplayState& r, SiteReplay& sr, In in, Skip skip) const {
    std::uint64_t index = 0;
    for (const auto& [id, times] : r.runs) {
      const Round& round = rounds[id];
      const std::uint64_t n = round.tokens.size();
      if (skip(id)) {
        index += n * times;
        continue;
      }
      for (std::uint64_t k = 0; k < times; ++k) {
        const bool was_empty = sr.empty();
        const kbuf::Impl::BufferPolicy& p = sr.replay().policy();
        const std::uint64_t fallbacks = p.counters().fallbacks, regrows = p.counters().regrows;
        const std::size_t hwm = p.high_water_mark(), capacity = p.capacity();
        const std::uint64_t temporaries = sr.temporaries(), from_buffer = sr.from_buffer();
        for (const Token& t : round.tokens) {
          if (t.label == free_token) {
            sr.free(index - t.value);
          } else if (in(t.label)) {
            sr.take(index, static_cast<std::size_t>(t.value));
          }
          ++index;
        }
        if (was_empty && sr.empty() && k + 1 < times && p.counters().fallbacks == fallbacks &&
            p.counters().regrows == regrows && p.high_water_mark() == hwm &&
            p.capacity() == capacity) {
          const std::uint64_t rest = times - k - 1;
          sr.repeat(sr.temporaries() - temporaries, sr.from_buffer() - from_buffer, rest);
          index += n * rest;
          break;
        }
      }
    }
  }

  // Results::sites: the served sites by what each avoids alone, and a replay of the stream per
  // prefix of that list.
  void site_results(Results& out) const {
    struct Alone {
      std::uint32_t label;
      std::int64_t avoided = 0;
      std::uint64_t temporaries = 0, fallbacks = 0;
      std::size_t capacity = 0;
    };
    std::vector<Alone> alone(labels.size());
    for (std::uint32_t l = 0; l < labels.size(); ++l) alone[l].label = l;
    for (const ReplayState& r : replays) {
      for (const auto& [label, sr] : r.alone) {
        Alone& a = alone[label];
        a.avoided += sr.allocations_avoided();
        a.temporaries += sr.temporaries();
        a.fallbacks += sr.replay().first_round_fallbacks();
        a.capacity += sr.replay().next_capacity();
      }
    }
    std::vector<Alone> order;
    std::vector<bool> kokkos(labels.size());
    for (const Alone& a : alone) {
      if (labels[a.label].a.served != 0) order.push_back(a);
      kokkos[a.label] = inside_kokkos(labels[a.label].name);
    }
    // Kokkos' own sites after every other: no adopter can change them.
    std::stable_sort(order.begin(), order.end(), [&](const Alone& a, const Alone& b) {
      if (kokkos[a.label] != kokkos[b.label]) return static_cast<bool>(kokkos[b.label]);
      if (a.avoided != b.avoided) return a.avoided > b.avoided;
      const Aggregate &x = labels[a.label].a, &y = labels[b.label].a;
      if (x.served_bytes != y.served_bytes) return x.served_bytes > y.served_bytes;
      return labels[a.label].name < labels[b.label].name;
    });
    const std::size_t listed = std::min(order.size(), settings.sites);
    out.sites_left_out = order.size() - listed;
    std::vector<std::uint32_t> rank(labels.size(), free_token);
    for (std::size_t i = 0; i < listed; ++i) rank[order[i].label] = static_cast<std::uint32_t>(i);
    std::vector<std::uint32_t> round_rank(rounds.size(), free_token);  // its best site's
    for (std::size_t i = 0; i < rounds.size(); ++i) {
      for (std::uint32_t l : rounds[i].labels) round_rank[i] = std::min(round_rank[i], rank[l]);
    }
    for (std::size_t k = 0; k < listed; ++k) {
      const Alone& a = order[k];
      const Named& n = labels[a.label];
      Site site;
      site.space = n.space;
      site.label = n.name;
      site.count = n.a.count;
      site.bytes = n.a.bytes;
      site.temporaries = a.temporaries;
      site.allocations_avoided = a.avoided;
      site.capacity = a.capacity;
      site.fallbacks = a.fallbacks;
      site.inside_kokkos = kokkos[a.label];
      for (const ReplayState& r : replays) {
        SiteReplay sr(r.replay.alignment());
        play(
            r, sr, [&](std::uint32_t l) { return rank[l] <= k; },
            [&](std::uint32_t id) { return round_rank[id] > k; });
        site.cumulative_capacity += sr.replay().next_capacity();
        site.cumulative_allocations_avoided += sr.allocations_avoided();
        site.first_round_fallbacks += sr.replay().first_round_fallbacks();
        site.cumulative_fallbacks += sr.replay().policy().counters().fallbacks;
        site.cumulative_regrows += sr.replay().policy().counters().regrows;
      }
      out.sites.push_back(site);
    }
    for (const ReplayState& r : replays) out.site_stream_temporaries += r.recorded;
  }

  // Results::picked: the sites KBUF_ADVISOR_PICK names (under any memory space), replayed
  // together as a prefix of Results::sites is.
  void picked_results(Results& out) const {
    Picked& picked = out.picked;
    if (settings.pick.empty()) return;
    std::vector<bool> in(labels.size());
    for (const std::string& name : settings.pick) {
      bool seen = false;
      for (std::uint32_t l = 0; l < labels.size(); ++l) {
        if (labels[l].name == name && labels[l].space != "*") in[l] = seen = true;
      }
      (seen ? picked.labels : picked.not_seen).push_back(name);
    }
    std::vector<bool> round_in(rounds.size());
    for (std::size_t i = 0; i < rounds.size(); ++i) {
      for (std::uint32_t l : rounds[i].labels) round_in[i] = round_in[i] || in[l];
    }
    for (const ReplayState& r : replays) {
      SiteReplay sr(r.replay.alignment());
      play(
          r, sr, [&](std::uint32_t l) { return static_cast<bool>(in[l]); },
          [&](std::uint32_t id) { return !round_in[id]; });
      picked.temporaries += sr.temporaries();
      picked.capacity += sr.replay().next_capacity();
      picked.allocations_avoided += sr.allocations_avoided();
      picked.first_round_fallbacks += sr.replay().first_round_fallbacks();
      picked.fallbacks += sr.replay().policy().counters().fallbacks;
      picked.regrows += sr.replay().policy().counters().regrows;
    }
  }

  // Results::adopted: each kbuf record space's memory space (its allocator's buffers'), and
  // what the program still allocates under the same label there.
  void adopted_results(Results& out) const {
    out.adopted = adopted;
    for (Adopted& a : out.adopted) {
      for (std::size_t l = 0; l < labels.size(); ++l) {
        if (kbuf_owner[l] == a.allocator) {
          a.space = labels[l].space;
          break;
        }
      }
      for (const Named& n : labels) {
        if (n.space == a.space && n.name == a.label) a.left = n.a.count;
      }
      for (const Site& site : out.sites) {
        if (site.space == a.space && site.label == a.label)
          a.left_avoidable = site.allocations_avoided;
      }
    }
    std::stable_sort(
        out.adopted.begin(), out.adopted.end(),
        [](const Adopted& x, const Adopted& y) { return x.temporaries > y.temporaries; });
  }
};

Advisor::Advisor(Settings settings) : state_(std::make_unique<State>(std::move(settings))) {}
Advisor::~Advisor() = default;

void Advisor::allocate(const char* space, const char* label, const void* ptr, std::uint64_t size) {
  const ThreadSlot& slot = this_thread();
  std::lock_guard<std::mutex> lock(state_->mutex);
  State& s = *state_;
  if (s.finished) return;
  const double now = s.now();
  if (is_kbuf_space(space)) {
    s.kbuf_record(space, label, size, true);
    return;
  }
  const std::uint32_t t = s.thread_id(slot);
  const std::uint64_t seq = ++s.seq;
  const std::uint32_t sp = s.space_id(space);
  SpaceTotals& st = s.spaces[sp];
  count_held(st, st.allocations, size);
  ++s.allocations;
  s.bytes += size;
  s.held += size;
  ThreadState& ts = s.threads[t];
  Pending p;
  p.label = s.intern(s.labels, s.label_index[sp], space, label);
  if (p.label >= s.kbuf_owner.size()) {
    s.kbuf_owner.push_back(State::kbuf_owner_of(s.labels[p.label].name));
  }
  p.region = ts.regions.empty() ? no_region : ts.regions.back().id;
  p.thread = t;
  p.space = sp;
  p.size = size;
  p.kernel_at = ts.kernels;
  p.t = now;
  for (Named* n : {&s.labels[p.label], &s.regions[p.region]}) {
    ++n->a.count;
    n->a.bytes += size;
  }
  for (OpenRegion& r : ts.regions) r.peak = std::max(r.peak, s.held);
  if (p.region == no_region) {
    s.regions[no_region].peak_held = std::max(s.regions[no_region].peak_held, s.held);
  }
  const auto old = s.live.find(ptr);
  if (old != s.live.end()) {
    // Freed without Kokkos telling (cannot happen with Kokkos' own records): forget it.
    s.live.erase(old);
  }
  p.seq = seq;
  std::uint32_t record;
  if (!s.free_records.empty()) {
    record = s.free_records.back();
    s.free_records.pop_back();
    s.records[record] = p;
  } else {
    record = static_cast<std::uint32_t>(s.records.size());
    s.records.push_back(p);
  }
  if (s.settings.regions && !ts.regions.empty()) {
    OpenRegion& open = ts.regions.back();
    s.records[record].region_end = region_open;
    if (open.made.size() >= 2 * open.kept + 64) {  // drop those whose record was reused
      open.made.erase(std::remove_if(open.made.begin(), open.made.end(),
                                     [&](const std::pair<std::uint32_t, std::uint64_t>& m) {
                                       return s.records[m.first].seq != m.second;
                                     }),
                      open.made.end());
      open.kept = open.made.size();
    }
    open.made.emplace_back(record, seq);
  }
  s.live.emplace(ptr, record);
  s.live_stack(t, sp).push(seq);
  ts.queue.push_back(Entry{record, false, now});
  s.process(t, false);
}

void Advisor::deallocate(const char* space, const char* label, const void* ptr,
                         std::uint64_t size) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  State& s = *state_;
  if (s.finished) return;
  const double now = s.now();
  if (is_kbuf_space(space)) {
    s.kbuf_record(space, label, size, false);
    return;
  }
  ++s.deallocations;
  const std::uint32_t sp = s.space_id(space);
  ++s.spaces[sp].deallocations;
  const auto found = s.live.find(ptr);
  if (found == s.live.end()) {
    ++s.unmatched;
    s.spaces[sp].held -= std::min(s.spaces[sp].held, size);
    s.held -= std::min(s.held, size);
    return;
  }
  const std::uint32_t record = found->second;
  s.live.erase(found);
  Pending& p = s.records[record];
  s.spaces[p.space].held -= p.size;
  s.held -= p.size;
  p.freed = true;
  // In kernels of the allocating thread, whichever thread frees it: the allocating thread's
  // allocator would hold it.
  p.lifetime_kernels = s.threads[p.thread].kernels - p.kernel_at;
  p.free_clock = ++s.clock;
  p.in_region = p.region_end == region_open;
  const bool lifo = s.live_stack(p.thread, p.space).free(p.seq);
  const double micros = (now - p.t) * 1e6;
  for (Named* n : {&s.labels[p.label], &s.regions[p.region]}) {
    ++n->a.frees;
    if (lifo) ++n->a.lifo_frees;
    n->a.kernels.add(p.lifetime_kernels);
    n->a.micros.add(static_cast<std::uint64_t>(micros));
  }
  const std::uint32_t owner = p.thread;
  s.threads[owner].queue.push_back(Entry{record, true, now});
  s.process(owner, false);
}

std::uint64_t Advisor::begin_kernel(const char* name) {
  State& s = *state_;
  return s.on_thread([&](std::uint32_t t) {
    ThreadState& ts = s.threads[t];
    ++ts.kernels;
    ++s.kernels;
    ts.kernels_open.emplace_back(s.trace_name(name), s.now());
    // A kernel may tell that the head lives too long.
    if (!ts.queue.empty()) s.process(t, false);
    return s.kernels;
  });
}

void Advisor::end_kernel(std::uint64_t handle) {
  (void)handle;
  state_->end_span(&ThreadState::kernels_open, TraceEvent::kernel);
}

void Advisor::push_region(const char* name) {
  State& s = *state_;
  s.on_thread([&](std::uint32_t t) {
    ThreadState& ts = s.threads[t];
    ++s.region_pushes;
    const std::uint32_t id = s.intern(s.regions, s.region_index, "", name);
    ++s.regions[id].instances;
    const double now = s.now();
    if (ts.regions.size() < max_region_depth) {
      ts.regions.push_back(OpenRegion{id, s.trace_name(name), now, s.held});
    } else {
      ts.regions.push_back(OpenRegion{no_region, s.trace_name(name), now, s.held});
    }
    if (ts.regions.size() == 1 && t == 0) {  // an outermost region of the first thread: a marker
      if (s.outer_regions++ % s.marker_stride == 0) {
        s.markers.push_back(Marker{now, name});
        if (s.markers.size() > marker_limit) {
          std::vector<Marker> kept;
          for (std::size_t i = 0; i < s.markers.size(); i += 2) kept.push_back(s.markers[i]);
          s.markers = std::move(kept);
          s.marker_stride *= 2;
        }
      }
    }
  });
}

void Advisor::pop_region() {
  State& s = *state_;
  s.on_thread([&](std::uint32_t t) {
    ThreadState& ts = s.threads[t];
    if (ts.regions.empty()) return;
    const OpenRegion r = std::move(ts.regions.back());
    ts.regions.pop_back();
    Named& n = s.regions[r.id];
    n.peak_held = std::max(n.peak_held, r.peak);
    s.add_trace(TraceEvent::region, t, r.name, r.t0, s.now());
    if (!r.made.empty()) {
      // Its allocations not freed yet live past their region; the kernel rule decides them.
      const std::uint64_t end = ++s.clock;
      for (const auto& [record, seq] : r.made) {
        Pending& p = s.records[record];
        if (p.seq == seq && p.region_end == region_open) p.region_end = end;
      }
      if (!ts.queue.empty()) s.process(t, false);
    }
  });
}

std::uint64_t Advisor::begin_fence(const char* name) {
  State& s = *state_;
  return s.on_thread([&](std::uint32_t t) {
    ++s.fences;
    s.threads[t].fences_open.emplace_back(s.trace_name(name), s.now());
    return s.fences;
  });
}

void Advisor::end_fence(std::uint64_t handle) {
  (void)handle;
  state_->end_span(&ThreadState::fences_open, TraceEvent::fence);
}

void Advisor::begin_deep_copy(const char* dst_space, const char* dst_label, const char* src_space,
                              const char* src_label, std::uint64_t size) {
  State& s = *state_;
  s.on_thread([&](std::uint32_t t) {
    ++s.copies;
    s.copy_bytes += size;
    const std::string to = std::string(dst_label) + " [" + dst_space + "]";
    const std::string from = std::string(src_label) + " [" + src_space + "]";
    s.threads[t].copies_open.push_back(
        ThreadState::Copy{s.now(), size, s.trace_name(to.c_str()), s.trace_name(from.c_str())});
  });
}

void Advisor::end_deep_copy() {
  State& s = *state_;
  s.on_thread([&](std::uint32_t t) {
    ThreadState& ts = s.threads[t];
    if (ts.copies_open.empty()) return;
    const ThreadState::Copy c = ts.copies_open.back();
    ts.copies_open.pop_back();
    if (s.add_trace(TraceEvent::deep_copy, t, s.trace_name("deep_copy"), c.t0, s.now())) {
      TraceEvent& e = s.trace.back();
      e.bytes = c.bytes;
      e.to = c.to;
      e.from = c.from;
    }
  });
}

Results Advisor::finish() {
  std::lock_guard<std::mutex> lock(state_->mutex);
  State& s = *state_;
  Results r;
  r.settings = s.settings;
  if (s.finished) return r;
  s.finished = true;
  for (std::uint32_t t = 0; t < s.threads.size(); ++t) s.process(t, true);
  r.seconds = s.now();
  r.allocations = s.allocations;
  r.deallocations = s.deallocations;
  r.bytes = s.bytes;
  r.unmatched_frees = s.unmatched;
  r.kernels = s.kernels;
  r.fences = s.fences;
  r.deep_copies = s.copies;
  r.deep_copy_bytes = s.copy_bytes;
  r.pushes = s.region_pushes;
  r.threads = s.threads_seen;
  for (const ThreadState& ts : s.threads) r.thread_slots += ts.generation != 0 ? 1 : 0;
  r.spaces = s.spaces;
  r.kbuf_spaces = s.kbuf_spaces;
  const auto by_count = [](const Named& a, const Named& b) {
    if (a.a.count != b.a.count) return a.a.count > b.a.count;
    if (a.a.bytes != b.a.bytes) return a.a.bytes > b.a.bytes;
    return a.name < b.name;
  };
  r.labels = s.labels;
  std::stable_sort(r.labels.begin(), r.labels.end(), by_count);
  for (const Named& n : s.regions) {
    if (n.a.count != 0 || n.instances != 0) r.regions.push_back(n);
  }
  std::stable_sort(r.regions.begin(), r.regions.end(), by_count);
  r.names_dropped = s.names_dropped;
  for (const ReplayState& rs : s.replays) {
    ReplayResult x;
    x.thread = rs.thread;
    x.space = s.spaces[rs.space].name;
    x.alignment = rs.replay.alignment();
    x.temporaries = rs.temporaries;
    x.from_buffer = rs.from_buffer;
    x.fallbacks = rs.replay.policy().counters().fallbacks;
    x.first_round_fallbacks = rs.replay.first_round_fallbacks();
    x.regrows = rs.replay.policy().counters().regrows;
    x.released_late = rs.held_late;
    x.capacity_at_end = rs.replay.policy().capacity();
    x.capacity = rs.replay.next_capacity();
    x.high_water_mark = rs.replay.policy().high_water_mark();
    r.replays.push_back(x);
  }
  r.not_served = s.not_served;
  for (ReplayState& rs : s.replays) s.close_round(rs);
  s.site_results(r);
  s.picked_results(r);
  s.adopted_results(r);
  r.series = s.merged_series(r.seconds);
  r.series_width = s.column_width;
  r.markers = s.markers;
  r.outer_regions = s.outer_regions;
  r.names = s.names;
  r.trace = std::move(s.trace);
  r.trace_dropped = s.trace_dropped;
  r.peak_pending = s.peak_pending;
  return r;
}

}  // namespace kbuf_advisor
