#ifndef KBUF_WORKSPACE_HPP
#define KBUF_WORKSPACE_HPP

/// @file
/// `kbuf::Workspace`: temporaries inside kernels. A workspace is one temporary of its
/// allocator's current scope, cut into slots (one per team, or per concurrent thread, that can be
/// in flight at once) and a spill area shared by all of them. Inside a kernel an `Arena` holds
/// one slot and serves takes from it in LIFO order; a take that does not fit spills, one that
/// fits nowhere fails and says so. After the kernels, `finish()` reads what they needed, and the
/// next workspace with the same label is sized for it.
///
/// How it works, and why (docs/workspace.md has the long form):
/// - **Memory.** `[header | slot and lane flags | slots x slot_bytes | lanes x lane_bytes]`, one
///   allocation from the allocator. The header holds the counters and a histogram of the arenas'
///   needs; it and the flags are zeroed on the allocator's execution space instance when the
///   workspace is made.
/// - **Slots.** `per_team`: as many as teams can be in flight (the execution space's concurrency
///   over the team size, at most the league size). A team claims a free slot in `arena(team)`:
///   one thread of the team probes the flags with compare-and-swap, starting from its league
///   rank, and the others wait for it (`Kokkos::single`, one barrier). The probe is bounded:
///   when it runs out (more teams in flight than the concurrency said), the arena has no slot
///   and every take spills, so nothing waits forever. `per_thread`: the slot is the
///   `UniqueToken` value; the token's exclusivity is the slot's.
/// - **Takes.** Every thread of a team calls `take` with the same arguments in the same order,
///   so each computes the same offset by itself: a take that fits its slot costs no barrier and
///   no atomic. A take that does not fit spills: the arena's first spill claims a lane (one
///   thread, broadcast to the team), which it holds alone, as a second LIFO stack, until its
///   spilled takes are given back; an arena that finds every lane taken waits, bounded, for one
///   (a holder waits for nothing, so the wait ends).
/// - **Learning.** Each arena counts, locally, what it took and the most it needed at once (its
///   need, as if its slot were unbounded); when it ends, one thread adds its counts to the
///   header and its need to the histogram (quarter-octave buckets, each with its largest need).
///   `finish()` picks the slot size, among the needs seen and outgrown by at most one arena in
///   256, that makes `slots x slot + lanes x lane` smallest (impl/workspace_impl.hpp says how a
///   lane is sized). The sizes follow from the needs alone, never from the schedule, so a rerun
///   of the same needs completes, and a rare large need spills into a lane instead of making
///   every slot large.

#include <cstddef>
#include <cstdint>
#include <limits>
#include <ostream>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include <Kokkos_Core.hpp>

#include <kbuf/config.hpp>
#include <kbuf/errors.hpp>
#include <kbuf/impl/errors.hpp>
#include <kbuf/impl/extents.hpp>
#include <kbuf/impl/team_ops.hpp>
#include <kbuf/impl/view_traits.hpp>

// A pause in a spin: the host thread yields, so that the holder it waits for can run.
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
#define KBUF_IMPL_WORKSPACE_PAUSE() ((void)0)
#else
#define KBUF_IMPL_WORKSPACE_PAUSE() std::this_thread::yield()
#endif

namespace kbuf {

template <class MemorySpace>
class BufferAllocator;

/// A workspace's size per team of a `TeamPolicy`: bytes for each team in flight, and a spill
/// area shared by all of them. Both are the first round's guess: once a label has learned,
/// its workspaces are sized from what the last round needed.
struct per_team {
  std::size_t bytes;            ///< bytes of each slot
  std::size_t spill_bytes = 0;  ///< bytes of the spill area (one lane)
};
/// A workspace's size per concurrent thread (a `Kokkos::Experimental::UniqueToken` value), and
/// its spill area, as for `per_team`.
struct per_thread {
  std::size_t bytes;            ///< bytes of each slot
  std::size_t spill_bytes = 0;  ///< bytes of the spill area (one lane)
};

/// What the kernels between `workspace()` and `finish()` did with one workspace.
struct WorkspaceReport {
  std::size_t takes = 0;            ///< takes, served or not (zero-sized ones included)
  std::size_t spills = 0;           ///< takes served from the spill area
  std::size_t spill_bytes = 0;      ///< bytes of those takes (alignment included)
  std::size_t failed_takes = 0;     ///< takes served nowhere: empty views, `ok()` false
  std::size_t peak_slot_bytes = 0;  ///< the largest need of one slot, spills included
  /// True when every take was served: the kernels' results are whole.
  [[nodiscard]] bool complete() const noexcept { return failed_takes == 0; }

  std::size_t arenas = 0;            ///< arenas that ended (teams, or token holders)
  std::size_t slots = 0;             ///< slots of the workspace
  std::size_t slot_bytes = 0;        ///< bytes of each slot
  std::size_t spill_lanes = 0;       ///< spill lanes of the workspace
  std::size_t lane_bytes = 0;        ///< bytes of each lane
  std::size_t spill_peak = 0;        ///< the most one arena asked of its lane at once
  std::size_t spilling_arenas = 0;   ///< arenas that spilled
  std::size_t lane_waits = 0;        ///< of those, arenas that waited for a free lane
  std::size_t lanes_missed = 0;      ///< arenas whose bounded wait found no lane
  std::size_t unslotted_arenas = 0;  ///< arenas that found no free slot in their bounded probe
  std::size_t next_slot_bytes = 0;   ///< what the next workspace with this label gets per slot
  std::size_t next_spill_lanes = 0;  ///< its spill lanes
  std::size_t next_lane_bytes = 0;   ///< and the bytes of each
};

/// One-line text form: `takes 4096, spills 12 (98304 bytes), failed 0, peak slot 24576 bytes, ...`.
std::ostream& operator<<(std::ostream& os, const WorkspaceReport& r);

namespace Impl {

/// What `finish()` learned for one label; the allocator keeps one per label.
struct WorkspaceLearning {
  bool learned = false;
  std::size_t slot_bytes = 0;
  std::size_t lanes = 0;
  std::size_t lane_bytes = 0;
  std::size_t rounds = 0;                        ///< finish() calls for this label
  std::vector<const unsigned char*> unfinished;  ///< workspaces made and not finished yet
};

/// The header's counters (unsigned long long each).
enum workspace_counter : int {
  wc_takes,
  wc_spills,
  wc_spill_bytes,
  wc_failed,
  wc_peak_need,
  wc_spill_peak,  // the most one arena asked of its lane at once, served or not
  wc_arenas,
  wc_spilling,    // arenas that spilled
  wc_lane_waits,  // spilling arenas that waited for a lane
  wc_no_lane,     // spilling arenas whose bounded wait found none
  wc_unslotted,
  wc_count
};

/// Buckets of the needs' histogram: 0..4 bytes one each, then four per octave.
inline constexpr int workspace_buckets = 256;

KOKKOS_INLINE_FUNCTION int floor_log2(unsigned long long m) {
  int e = 0;
  for (int shift = 32; shift > 0; shift >>= 1) {
    if ((m >> shift) != 0) {
      m >>= shift;
      e += shift;
    }
  }
  return e;
}

/// The bucket of a need of `n` bytes.
KOKKOS_INLINE_FUNCTION int need_bucket(unsigned long long n) {
  if (n <= 4) return static_cast<int>(n);
  const unsigned long long m = n - 1;  // >= 4
  const int e = floor_log2(m);         // >= 2
  const int sub = static_cast<int>((m >> (e - 2)) & 3u);
  return 5 + 4 * (e - 2) + sub;
}

/// `extent_is_negative` for kernels.
template <class E>
KOKKOS_INLINE_FUNCTION bool negative_extent(E e) {
  if constexpr (std::is_signed<E>::value) {
    return e < 0;
  } else {
    (void)e;
    return false;
  }
}

/// The workspace's atomics. On the host they are the compiler's own (`__atomic`), which stay
/// atomic whatever Kokkos was built with (a Serial-only Kokkos 3 makes its atomics plain
/// operations) and which ThreadSanitizer understands; in device code, Kokkos'.
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
template <class T>
KOKKOS_INLINE_FUNCTION T atomic_cas(T* p, T expected, T desired) {
  return Kokkos::atomic_compare_exchange(p, expected, desired);
}
template <class T>
KOKKOS_INLINE_FUNCTION T atomic_add(T* p, T v) {
  return Kokkos::atomic_fetch_add(p, v);
}
template <class T>
KOKKOS_INLINE_FUNCTION void atomic_max(T* p, T v) {
  (void)Kokkos::atomic_fetch_max(p, v);
}
template <class T>
KOKKOS_INLINE_FUNCTION void atomic_store(T* p, T v) {
  Kokkos::memory_fence();
  (void)Kokkos::atomic_exchange(p, v);
}
template <class T>
KOKKOS_INLINE_FUNCTION T atomic_load(T* p) {
  return *static_cast<volatile T*>(p);
}
KOKKOS_INLINE_FUNCTION void acquire_fence() {
  Kokkos::memory_fence();
}
#else
template <class T>
KOKKOS_INLINE_FUNCTION T atomic_cas(T* p, T expected, T desired) {
  __atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
  return expected;  // the value seen: `expected` itself on success
}
template <class T>
KOKKOS_INLINE_FUNCTION T atomic_add(T* p, T v) {
  return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}
template <class T>
KOKKOS_INLINE_FUNCTION void atomic_max(T* p, T v) {
  T old = __atomic_load_n(p, __ATOMIC_RELAXED);
  while (old < v &&
         !__atomic_compare_exchange_n(p, &old, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
}
template <class T>
KOKKOS_INLINE_FUNCTION void atomic_store(T* p, T v) {
  __atomic_store_n(p, v, __ATOMIC_RELEASE);
}
template <class T>
KOKKOS_INLINE_FUNCTION T atomic_load(T* p) {
  return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}
KOKKOS_INLINE_FUNCTION void acquire_fence() {}  // atomic_cas acquires already
#endif

/// A free slot among the `n` flags at `flags`, probed from `start` on with compare-and-swap,
/// `rounds` times round; -1 when none was free that often.
KOKKOS_INLINE_FUNCTION int claim_slot(unsigned int* flags, std::size_t n, std::size_t start,
                                      std::size_t rounds) {
  if (n == 0) return -1;
  const std::size_t bound = n * rounds;
  std::size_t i = start % n;
  for (std::size_t attempt = 0; attempt < bound; ++attempt) {
    if (atomic_load(&flags[i]) == 0u && atomic_cas(&flags[i], 0u, 1u) == 0u) {
      acquire_fence();  // what the slot's last holder wrote is done with
      return static_cast<int>(i);
    }
    i = i + 1 == n ? 0 : i + 1;
  }
  return -1;
}

/// Frees a slot `claim_slot` gave.
KOKKOS_INLINE_FUNCTION void release_slot(unsigned int* flags, int slot) {
  atomic_store(&flags[slot], 0u);  // after everything the holder did with the slot
}

/// Waits, bounded, for a free lane among the `n` flags at `flags` (a lane is held by one
/// arena at a time, which never waits while it holds one: the wait ends when a holder's spill
/// is given back). -1 when `rounds` probes of all lanes found none.
KOKKOS_INLINE_FUNCTION int wait_for_lane(unsigned int* flags, std::size_t n, std::size_t start,
                                         std::size_t rounds) {
  for (std::size_t r = 0; r < rounds; ++r) {
    const int lane = claim_slot(flags, n, start, 1);
    if (lane >= 0) return lane;
    KBUF_IMPL_WORKSPACE_PAUSE();
  }
  return -1;
}

}  // namespace Impl

/// Temporaries inside kernels, carved from a `BufferAllocator` as one temporary of its current
/// scope (see the file's comment). Trivially copyable: capture it by value in kernels. Made by
/// `BufferAllocator::workspace`; valid until the scope it was made in ends. Call `finish()`
/// after the kernels and before that scope ends.
template <class MemorySpace>
class Workspace {
 public:
  /// The memory space of every take.
  using memory_space = MemorySpace;
  /// The type of a take: an unmanaged View in `MemorySpace`.
  template <class DataType, class Layout = Kokkos::LayoutRight>
  using view = Kokkos::View<DataType, Layout, MemorySpace, Kokkos::MemoryUnmanaged>;

  class Frame;

  /// One slot, held while the arena lives (or until `end()`), with a LIFO stack of takes. Made
  /// by `arena(team)` (team-collective: every thread of the team makes it, with the same
  /// arguments, and makes the same calls on it in the same order) or `arena(token)`. Not
  /// copyable: it is the slot.
  class Arena {
   public:
    Arena(const Arena&) = delete;
    Arena& operator=(const Arena&) = delete;
    Arena& operator=(Arena&&) = delete;
    Arena(Arena&&) = delete;

    /// Ends the arena (as `end()`).
    KOKKOS_FUNCTION ~Arena() { end(); }

    /// An unmanaged View of `DataType` in `Layout`, one extent per runtime dimension, from the
    /// slot, else the spill area; an empty view (data() null) when neither has room, or for an
    /// extent that is negative or a size that overflows, and `ok()` is false from then on.
    /// Uninitialised memory, aligned to the allocator's alignment. Team arenas: every thread
    /// calls it with the same arguments; they get the same view, and a spill costs one barrier.
    template <class DataType, class Layout = Kokkos::LayoutRight, class... Extents>
    KOKKOS_FUNCTION view<DataType, Layout> take(Extents... extents) {
      using V = view<DataType, Layout>;
      using T = typename V::value_type;
      static_assert(sizeof...(Extents) == static_cast<std::size_t>(V::rank_dynamic),
                    "kbuf::Workspace::Arena::take: pass exactly one extent per runtime "
                    "dimension of DataType (one per '*')");
      static_assert((std::is_integral<Extents>::value && ...),
                    "kbuf::Workspace::Arena::take: extents must be integers");
      static_assert(std::is_trivially_destructible<T>::value,
                    "kbuf::Workspace::Arena::take: the value type must be trivially "
                    "destructible");
      static_assert(Impl::is_contiguous_layout<Layout>,
                    "kbuf::Workspace::Arena::take: Layout must be Kokkos::LayoutRight or "
                    "Kokkos::LayoutLeft");
      static_assert(alignof(T) <= 64,
                    "kbuf::Workspace::Arena::take: takes are aligned to 64 bytes (at least the "
                    "allocator's alignment): a value type aligned beyond 64 is not served");
      if (ended_) {
        misuse("kbuf::Workspace::Arena::take after the arena ended");
        ok_ = false;
        ++failed_;
        ++takes_;
        return V();
      }
      unsigned long long nbytes = 0;
      if (!byte_count<DataType, T>(nbytes, extents...)) {
        ok_ = false;
        ++failed_;
        ++takes_;
        return V();
      }
      void* p = place(nbytes);
      if (p == nullptr) return V();
      return Impl::unmanaged_view<V>(p, extents...);
    }

    /// A frame: when it ends, what was taken after it is given back (team arenas: by every
    /// thread; a frame that gave back spilled memory costs one barrier). Frames end in LIFO
    /// order.
    KOKKOS_FUNCTION Frame frame() { return Frame(*this); }

    /// False once a take could not be served.
    KOKKOS_FUNCTION bool ok() const { return ok_; }

    /// Gives the slot back (team arenas: a barrier first, so that no thread still uses it) and
    /// adds the arena's counts to the workspace's. A take after it fails (aborts in debug
    /// builds). Called by the destructor if not before.
    KOKKOS_FUNCTION void end() {
      if (ended_) return;
      if (depth_ != 0) misuse("kbuf::Workspace::Arena::end while frames of it are live");
      Impl::team_barrier(team_);
      Flush flush{this};
      (void)Impl::team_single<int>(team_, flush);
      ended_ = true;
    }

    /// The slot this arena holds (-1 for none).
    KOKKOS_FUNCTION int slot() const { return slot_; }

   private:
    friend class Workspace;
    friend class Frame;

    KOKKOS_FUNCTION Arena(const Workspace& ws, Impl::TeamHandle team, int slot)
        : counters_(ws.counters_),
          hist_(ws.hist_),
          flags_(ws.flags_),
          lane_flags_(ws.lane_flags_),
          spill_(ws.spill_),
          lanes_(ws.lanes_),
          lane_bytes_(ws.lane_bytes_),
          unit_(ws.unit_),
          slot_bytes_(slot >= 0 ? ws.slot_bytes_ : 0),
          slot_mem_(slot >= 0 ? ws.slots_mem_ + static_cast<std::size_t>(slot) * ws.slot_bytes_
                              : nullptr),
          team_(team),
          slot_(slot),
          start_(slot >= 0 ? slot : 0),
          owns_flag_(ws.per_team_ && slot >= 0),
          unslotted_(slot < 0) {}

    // Byte count of a take, false for a negative extent or an overflow.
    template <class DataType, class T, class... Extents>
    KOKKOS_FUNCTION static bool byte_count(unsigned long long& nbytes, Extents... extents) {
      unsigned long long n = Impl::static_extent_product<DataType>::value * sizeof(T);
      bool good = true;
      const auto mul = [&](auto e) {
        if (Impl::negative_extent(e)) {
          good = false;
          return;
        }
        const unsigned long long x = static_cast<unsigned long long>(e);
        if (x != 0 && n > (~0ull >> 2) / x) {  // below 2^62: no address computed overflows
          good = false;
          return;
        }
        n *= x;
      };
      (void)mul;
      (mul(extents), ...);
      if (!good && ((static_cast<unsigned long long>(extents) == 0) || ...) &&
          !(Impl::negative_extent(extents) || ...)) {
        good = true;  // a zero extent: the size is 0 whatever the others are
        n = 0;
      }
      nbytes = n;
      return good;
    }

    // Memory for a take of `nbytes`: the slot, the arena's spill lane, or null (failed,
    // counted).
    KOKKOS_FUNCTION void* place(unsigned long long nbytes) {
      ++takes_;
      if (nbytes == 0) return nullptr;  // an empty view: nothing moves, not a failure
      const unsigned long long n = (nbytes + unit_ - 1) / unit_ * unit_;
      need_top_ += n;
      if (need_top_ > need_peak_) need_peak_ = need_top_;
      if (slot_top_ + n <= slot_bytes_) {
        void* p = slot_mem_ + slot_top_;
        slot_top_ += n;
        return p;
      }
      // A spill: what the arena asks of its lane counts, served or not.
      spill_want_ += n;
      if (spill_want_ > spill_peak_) spill_peak_ = spill_want_;
      spilled_ = true;
      if (lane_ < 0 && lanes_ != 0 && n <= lane_bytes_) {
        LaneClaim claim{this};
        lane_ = Impl::team_single<int>(team_, claim);
      }
      if (lane_ < 0 || spill_top_ + n > lane_bytes_) {
        ok_ = false;
        ++failed_;
        return nullptr;
      }
      void* p = spill_ + static_cast<std::size_t>(lane_) * lane_bytes_ + spill_top_;
      spill_top_ += n;
      ++spills_;
      spill_bytes_ += n;
      return p;
    }

    // Claims a spill lane for the arena (one thread of the team): a free one at once, else a
    // bounded wait for one.
    struct LaneClaim {
      Arena* arena;
      KOKKOS_FUNCTION int operator()() const {
        Arena& a = *arena;
        int lane = Impl::claim_slot(a.lane_flags_, a.lanes_, a.start_, 1);
        if (lane < 0) {
          Impl::atomic_add(&a.counters_[Impl::wc_lane_waits], 1ull);
          lane = Impl::wait_for_lane(a.lane_flags_, a.lanes_, a.start_, lane_wait_rounds);
          if (lane < 0) Impl::atomic_add(&a.counters_[Impl::wc_no_lane], 1ull);
        }
        return lane;
      }
    };

    // Gives the lane back (one thread of the team).
    struct LaneRelease {
      Arena* arena;
      KOKKOS_FUNCTION int operator()() const {
        Impl::release_slot(arena->lane_flags_, arena->lane_);
        return 0;
      }
    };

    // The arena's end, by one thread of the team: its lane, its counts, its slot.
    struct Flush {
      Arena* arena;
      KOKKOS_FUNCTION int operator()() const {
        Arena& a = *arena;
        if (a.lane_ >= 0) Impl::release_slot(a.lane_flags_, a.lane_);
        unsigned long long* c = a.counters_;
        Impl::atomic_add(&c[Impl::wc_takes], a.takes_);
        if (a.spilled_) {
          Impl::atomic_add(&c[Impl::wc_spilling], 1ull);
          Impl::atomic_add(&c[Impl::wc_spills], a.spills_);
          Impl::atomic_add(&c[Impl::wc_spill_bytes], a.spill_bytes_);
          Impl::atomic_max(&c[Impl::wc_spill_peak], a.spill_peak_);
        }
        if (a.failed_ != 0) Impl::atomic_add(&c[Impl::wc_failed], a.failed_);
        if (a.unslotted_) Impl::atomic_add(&c[Impl::wc_unslotted], 1ull);
        Impl::atomic_max(&c[Impl::wc_peak_need], a.need_peak_);
        Impl::atomic_add(&c[Impl::wc_arenas], 1ull);
        const int b = Impl::need_bucket(a.need_peak_);
        Impl::atomic_add(&a.hist_[2 * b], 1ull);
        Impl::atomic_max(&a.hist_[2 * b + 1], a.need_peak_);
        if (a.owns_flag_) Impl::release_slot(a.flags_, a.slot_);
        return 0;
      }
    };

    // What a frame restores.
    struct Tops {
      unsigned long long slot, need, spill, want;
    };
    KOKKOS_FUNCTION Tops tops() const {
      return Tops{slot_top_, need_top_, spill_top_, spill_want_};
    }

    KOKKOS_FUNCTION void end_frame(int index, const Tops& t) {
      if (ended_ || index != depth_ - 1) {
        misuse(ended_ ? "kbuf::Workspace::Frame ended after its arena"
                      : "kbuf::Workspace::Frame ended out of LIFO order");
        if (ended_) return;
      }
      --depth_;
      slot_top_ = t.slot;
      need_top_ = t.need;
      spill_want_ = t.want;
      spill_top_ = t.spill;
      if (spill_top_ == 0 && lane_ >= 0) {
        // The lane is empty again: give it to an arena that waits (no thread still uses it).
        Impl::team_barrier(team_);
        LaneRelease release{this};
        (void)Impl::team_single<int>(team_, release);
        lane_ = -1;
      }
    }

    KOKKOS_FUNCTION static void misuse(const char* what) {
#if KBUF_ENABLE_DEBUG
      Kokkos::abort(what);
#else
      (void)what;
#endif
    }

    // Probes of all the lanes an arena's wait makes before it goes without one: long enough
    // for a holder to finish its spill (it waits for nothing meanwhile).
    static constexpr std::size_t lane_wait_rounds = std::size_t{1} << 26;

    unsigned long long* counters_;
    unsigned long long* hist_;
    unsigned int* flags_;
    unsigned int* lane_flags_;
    unsigned char* spill_;
    std::size_t lanes_;
    unsigned long long lane_bytes_;
    unsigned long long unit_;
    unsigned long long slot_bytes_;
    unsigned char* slot_mem_;
    Impl::TeamHandle team_;
    int slot_;
    std::size_t start_;  // where the lane probe starts
    bool owns_flag_;
    bool unslotted_;
    bool ok_ = true;
    bool ended_ = false;
    bool spilled_ = false;
    int depth_ = 0;
    int lane_ = -1;
    unsigned long long slot_top_ = 0;
    unsigned long long need_top_ = 0;
    unsigned long long need_peak_ = 0;
    unsigned long long spill_top_ = 0;   // in the lane
    unsigned long long spill_want_ = 0;  // asked of the lane, failed takes included
    unsigned long long spill_peak_ = 0;
    unsigned long long takes_ = 0;
    unsigned long long spills_ = 0;
    unsigned long long spill_bytes_ = 0;
    unsigned long long failed_ = 0;
  };

  /// LIFO release inside an arena: when it ends (its destructor), what was taken after it was
  /// made is given back. Not copyable.
  class Frame {
   public:
    Frame(const Frame&) = delete;
    Frame& operator=(const Frame&) = delete;
    Frame(Frame&&) = delete;
    Frame& operator=(Frame&&) = delete;
    KOKKOS_FUNCTION ~Frame() { arena_.end_frame(index_, tops_); }

   private:
    friend class Arena;
    KOKKOS_FUNCTION explicit Frame(Arena& a) : arena_(a), index_(a.depth_++), tops_(a.tops()) {}
    Arena& arena_;
    int index_;
    typename Arena::Tops tops_;
  };

  Workspace() = default;  ///< an empty workspace: no slots; made by BufferAllocator::workspace

  /// The arena of the calling team (team-collective: every thread of the team calls it). Claims
  /// a free slot (one thread, one barrier).
  template <class TeamMember>
  KOKKOS_FUNCTION Arena arena(const TeamMember& team) const {
    const Impl::TeamHandle h = Impl::team_handle(team);
    if (!per_team_) misuse_static("kbuf::Workspace::arena(team) on a per_thread workspace");
    SlotClaim claim{this, team.league_rank()};
    const int slot = Impl::team_single<int>(h, claim);
    return Arena(*this, h, slot);
  }

  /// The arena of the thread holding `token` (a `UniqueToken` value, below `slots()`), for a
  /// per_thread workspace. A token out of range gets no slot (every take spills; debug builds
  /// abort).
  KOKKOS_FUNCTION Arena arena(int token) const {
    int slot = token;
    if (per_team_ || token < 0 || static_cast<std::size_t>(token) >= slots_) {
      misuse_static(per_team_ ? "kbuf::Workspace::arena(token) on a per_team workspace"
                              : "kbuf::Workspace::arena(token): the token is not below slots()");
      slot = -1;
    }
    return Arena(*this, Impl::TeamHandle{}, slot);
  }

  /// Slots: teams, or threads, that can hold an arena at once.
  KOKKOS_FUNCTION std::size_t slots() const noexcept {
    return slots_;
  }
  /// Bytes of each slot.
  KOKKOS_FUNCTION std::size_t slot_bytes() const noexcept {
    return slot_bytes_;
  }
  /// Bytes of the spill area: `spill_lanes()` lanes of `lane_bytes()`.
  KOKKOS_FUNCTION std::size_t spill_bytes() const noexcept {
    return lanes_ * static_cast<std::size_t>(lane_bytes_);
  }
  /// Spill lanes: an arena that spills holds one, alone, until its spill is given back; an
  /// arena that finds none free waits (bounded) for one.
  KOKKOS_FUNCTION std::size_t spill_lanes() const noexcept {
    return lanes_;
  }
  /// Bytes of each spill lane: the most one arena can spill at once.
  KOKKOS_FUNCTION std::size_t lane_bytes() const noexcept {
    return static_cast<std::size_t>(lane_bytes_);
  }
  /// Bytes the workspace takes from its allocator (header and flags included).
  std::size_t bytes() const noexcept {
    return total_;
  }
  /// The label it learns under.
  const char* label() const noexcept {
    return label_;
  }

  /// Fences the allocator's execution space instance (the kernels that used the workspace must
  /// have run on it, or have been fenced), reads what they did, and records under the label
  /// what the next workspace needs. Call it once, before the scope the workspace was made in
  /// ends.
  /// @throws kbuf::logic_error if the workspace was already finished, was not made by an
  /// allocator, or its memory was released (its scope ended).
  WorkspaceReport finish();

 private:
  template <class>
  friend class BufferAllocator;

  // Claims a slot for a team (one thread): a free flag from the league rank on, bounded.
  struct SlotClaim {
    const Workspace* ws;
    int league_rank;
    KOKKOS_FUNCTION int operator()() const {
      return Impl::claim_slot(ws->flags_, ws->slots_, static_cast<std::size_t>(league_rank),
                              probe_rounds);
    }
  };

  // Rounds over all the slots a team's claim probes before it goes without one.
  static constexpr std::size_t probe_rounds = 4096;

  KOKKOS_FUNCTION static void misuse_static(const char* what) {
    Arena::misuse(what);
  }

  unsigned char* base_ = nullptr;
  unsigned long long* counters_ = nullptr;
  unsigned long long* hist_ = nullptr;  // count and largest need, per bucket
  unsigned int* flags_ = nullptr;
  unsigned char* slots_mem_ = nullptr;
  unsigned int* lane_flags_ = nullptr;
  unsigned char* spill_ = nullptr;
  std::size_t slots_ = 0;
  std::size_t slot_bytes_ = 0;
  std::size_t lanes_ = 0;
  unsigned long long lane_bytes_ = 0;
  unsigned long long unit_ = 64;
  std::size_t total_ = 0;
  bool per_team_ = true;
  const char* label_ = "";  // the learning record's key (lives in the allocator)
  Impl::WorkspaceLearning* learning_ = nullptr;
  BufferAllocator<MemorySpace>* owner_ = nullptr;
};

}  // namespace kbuf

#endif  // KBUF_WORKSPACE_HPP
