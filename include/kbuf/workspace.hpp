#ifndef KBUF_WORKSPACE_HPP
#define KBUF_WORKSPACE_HPP

/// @file
/// `kbuf::Workspace`: temporaries inside kernels. A workspace is one temporary of its
/// allocator's current scope, cut into slots (one per team, or per concurrent thread, that can be
/// in flight at once) and spill lanes shared by all of them. Inside a kernel an `Arena` holds
/// one slot and serves takes from it in LIFO order; a take that does not fit spills into a lane,
/// and one that fits neither is served by the workspace's fallback region, so that a round's
/// results are whole and its need is known in full. After the kernels, `finish()` reads what
/// they needed, and the next workspace with the same label is sized for it.
///
/// How it works, and why (docs/workspace.md has the long form):
/// - **Memory.** `[header | slot and lane flags | region flags | per-slot records | slots x
///   slot_bytes | lanes x lane_bytes | fallback region]`, one allocation from the allocator. The
///   header holds a histogram of the arenas' needs; each slot's record holds the counts of the
///   arenas that held it, written by the holder alone (no atomic), and summed by `finish()`.
///   Header, flags and records are zeroed on the allocator's execution space instance when the
///   workspace is made.
/// - **Slots.** `per_team`: as many as teams can be in flight (the execution space's concurrency
///   over the threads of a team, at most the teams a GPU keeps resident, at most the league). A
///   team claims a free slot in `arena(team)`: one thread of the team probes the flags with
///   compare-and-swap, starting from its league rank, and the others wait for it
///   (`Kokkos::single`). The probe is bounded in time (it backs off between rounds); a team that
///   finds no slot goes without one and every take of it spills. `per_thread`: as many as
///   threads can be in flight (the concurrency, at most the policy's iterations); `arena(token)`
///   claims one the same way, from `token % slots()` on, so that any token value finds a slot
///   (a GPU's global `UniqueToken` has as many values as the device's concurrency). With a
///   `Kokkos::AUTO` team size the slots are counted for the team size the label's arenas ran
///   with, once they have run.
/// - **Takes.** Every thread (and vector lane) of a team calls `take` with the same arguments in
///   the same order, so each computes the same offset by itself: a take that fits its slot costs
///   no barrier and no atomic. A take that does not fit spills: the arena's first spill claims a
///   free lane (one pass over the lanes, never a wait), which it holds alone, as a second LIFO
///   stack, until its spilled takes are given back. A take that fits no lane (every lane taken,
///   or too large) is a fallback: a run of chunks of the workspace's fallback region, claimed
///   with compare-and-swap (one pass, never a wait, from the slot's home in the region on) and
///   given back after a device-scope fence when its frame or arena ends; on host backends the
///   host's heap serves what the region cannot. No kernel calls `malloc` on a device.
/// - **Learning.** Each arena counts what it needed at once (as if its slot were unbounded);
///   when it ends its need goes into the histogram. `finish()` keeps the histogram under the
///   label; the next workspace with that label picks, for its own number of slots, the slot
///   size, lanes and lane size that hold the fewest bytes with lanes enough that a spilling arena
///   rarely finds them all taken (impl/workspace_sizing.hpp). The sizes follow from the needs
///   alone, never from the schedule.
/// - **Check mode** (pass-through mode or `KBUF_ENABLE_DEBUG`): each take is followed by a guard
///   zone, checked when its frame or arena ends; `WorkspaceReport::overruns` counts the takes
///   whose zone was written. With `KBUF_ENABLE_DEBUG` the threads of a team also compare their
///   arenas before each step that synchronises them, through their slot's record and without a
///   barrier, and abort when they differ or when part of the team does not come.

#include <cstddef>
#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <type_traits>
#include <vector>

#include <Kokkos_Core.hpp>

#include <kbuf/buffer_allocator.hpp>
#include <kbuf/config.hpp>
#include <kbuf/errors.hpp>
#include <kbuf/impl/errors.hpp>
#include <kbuf/impl/extents.hpp>
#include <kbuf/impl/macros.hpp>
#include <kbuf/impl/team_ops.hpp>
#include <kbuf/impl/view_traits.hpp>
#include <kbuf/impl/workspace_device.hpp>
#include <kbuf/impl/workspace_sizing.hpp>

namespace kbuf {

template <class MemorySpace>
class BufferAllocator;

/// A workspace's size per team of a `TeamPolicy`: bytes for each team in flight, and a spill
/// area shared by all of them. Both are the first round's guess: once a label has learned,
/// its workspaces are sized from what the last round needed.
struct per_team {
  std::size_t bytes;            ///< bytes of each slot
  std::size_t spill_bytes = 0;  ///< bytes of the spill area (one lane)
  /// Bytes of the first round's fallback region, which serves the takes that fit neither their
  /// slot nor a lane; 0 (the default): `slots x max(64 KiB, bytes)`, at most 256 MiB. Either is
  /// bounded by what the allocator's limit leaves.
  std::size_t fallback_bytes = 0;
};
/// A workspace's size per concurrent thread (a `Kokkos::Experimental::UniqueToken` value), and
/// its spill area, as for `per_team`.
struct per_thread {
  std::size_t bytes;               ///< bytes of each slot
  std::size_t spill_bytes = 0;     ///< bytes of the spill area (one lane)
  std::size_t fallback_bytes = 0;  ///< the first round's fallback region, as for `per_team`
};

/// What the kernels between `workspace()` and `finish()` did with one workspace.
struct WorkspaceReport {
  std::size_t takes = 0;            ///< takes, served or not (zero-sized ones included)
  std::size_t spills = 0;           ///< takes served from a spill lane
  std::size_t spill_bytes = 0;      ///< bytes of those takes (alignment included)
  std::size_t failed_takes = 0;     ///< takes served nowhere: empty views, `ok()` false
  std::size_t peak_slot_bytes = 0;  ///< the largest need of one slot, spills included
  /// True when every take was served: the kernels' results are whole.
  [[nodiscard]] bool complete() const noexcept { return failed_takes == 0; }

  /// Takes served outside the slots and lanes: by the workspace's fallback region, else (host
  /// backends only) by the host's heap: a take that fit neither its slot nor a lane. A first
  /// round from a small guess has them; a rerun has them only for arenas that found every lane
  /// taken (`lanes_missed`) or no slot.
  std::size_t fallbacks = 0;
  std::size_t fallback_bytes = 0;  ///< bytes of those takes (alignment included)
  /// Takes whose guard zone was written: an overrun past the end of the take (check mode only:
  /// pass-through mode or `KBUF_ENABLE_DEBUG`; 0 otherwise).
  std::size_t overruns = 0;
  bool checked = false;                 ///< whether the takes carried guard zones (check mode)
  std::size_t first_overrun_take = 0;   ///< the first overrun found: the take's index in its arena
  std::size_t first_overrun_bytes = 0;  ///< and the bytes written past its end (at most the zone)

  std::size_t arenas = 0;                 ///< arenas that ended (teams, or token holders)
  std::size_t slots = 0;                  ///< slots of the workspace
  std::size_t slot_bytes = 0;             ///< bytes of each slot
  std::size_t spill_lanes = 0;            ///< spill lanes of the workspace
  std::size_t lane_bytes = 0;             ///< bytes of each lane
  std::size_t spill_peak = 0;             ///< the most one arena asked of its lane at once
  std::size_t spilling_arenas = 0;        ///< arenas that spilled
  std::size_t lanes_missed = 0;           ///< of those, arenas that found every lane taken
  std::size_t unslotted_arenas = 0;       ///< arenas that found no free slot in their bounded probe
  std::size_t next_slot_bytes = 0;        ///< what the next workspace with this label gets per slot
  std::size_t next_spill_lanes = 0;       ///< its spill lanes (for as many slots as this one)
  std::size_t next_lane_bytes = 0;        ///< and the bytes of each
  double next_miss_probability = 0;       ///< how often a spilling arena will find every lane taken
  std::size_t fallback_region_bytes = 0;  ///< bytes of the workspace's fallback region
  std::size_t next_fallback_region_bytes = 0;  ///< and of the next one's
  /// The threads of the teams that held arenas (team size x vector length on a GPU, the team
  /// size on the host; 0 for per_thread arenas): what a `Kokkos::AUTO` team size resolved to.
  /// The next workspace with the label counts its slots for that team size.
  std::size_t team_threads = 0;
};

/// One-line text form: `takes 4096, spills 12 (98304 bytes), failed 0, fallbacks 0 (0 bytes),
/// ...`.
std::ostream& operator<<(std::ostream& os, const WorkspaceReport& r);

namespace Impl {

/// What `finish()` learned for one label; the allocator keeps one per label. The next workspace
/// made under the label is sized from `needs` for its own number of slots.
struct WorkspaceLearning {
  bool learned = false;
  WorkspaceNeeds needs;
  std::size_t team_threads = 0;  ///< the threads of the teams seen last (0: none seen)
  std::vector<const unsigned char*> unfinished;  ///< workspaces made and not finished yet
};

/// What an allocator's workspaces learned, per label (stable addresses: workspaces point at
/// their record). The allocator holds it by pointer and makes it with its first workspace.
struct WorkspaceRecords : std::map<std::string, WorkspaceLearning> {};

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
  /// by `arena(team)` or `arena(token)`. Not copyable: it is the slot.
  ///
  /// **Who calls.** A team's arena is team-collective: every thread *and every vector lane* of
  /// the team makes it and makes the same calls on it (`take`, `frame`, a frame's end, `end`),
  /// with the same arguments, in the same order, outside `Kokkos::single`, `TeamThreadRange`,
  /// `TeamVectorRange` and `ThreadVectorRange`; the memory a take gives is then shared by the
  /// team, and filled by its threads in those ranges. A call made by some threads or lanes only
  /// desynchronises their copies of the arena: with `KBUF_ENABLE_DEBUG` the next collective step
  /// (a spill, a checked take, a frame's end, the arena's end) aborts and says so, also when
  /// the rest of the team never comes to it (after `KBUF_WORKSPACE_CHECK_MS`); without it,
  /// takes overlap and a GPU may deadlock. An arena made by part of a team (`arena(team)` inside
  /// `Kokkos::single`) is not caught: its slot claim is the team's barrier. A `per_thread` arena
  /// belongs to the one thread that made it: with `arena(team)`, to that thread of the team and
  /// its vector lanes, which are to it what a team's threads are to a team's arena.
  class Arena {
   public:
    Arena(const Arena&) = delete;
    Arena& operator=(const Arena&) = delete;
    Arena& operator=(Arena&&) = delete;
    Arena(Arena&&) = delete;

    /// Ends the arena (as `end()`).
    KOKKOS_FUNCTION ~Arena() { end(); }

    /// An unmanaged View of `DataType` in `Layout`, one extent per runtime dimension: from the
    /// slot; else from a spill lane; else from the workspace's fallback region (and on host
    /// backends, when that is full, the host's heap). An empty view (data() null) for a zero
    /// size; and, with `ok()` false from then on, for an extent that is negative, a size that
    /// overflows, an extent a legacy View of rank 3 or more cannot hold (2^32 or more), or a
    /// fallback neither the region nor (host backends) the heap can serve.
    /// Uninitialised memory, aligned to the allocator's alignment (64 bytes at least), valid
    /// until the frame it was taken in (or the arena) ends. Team-collective (see the class).
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
        return refuse<V>();
      }
      unsigned long long nbytes = 0;
      if (!byte_count<DataType, V, T>(nbytes, extents...)) return refuse<V>();
      void* p = place(nbytes);
      if (p == nullptr) return V();
      return Impl::unmanaged_view<V>(p, extents...);
    }

    /// A frame: when it ends, what was taken after it is given back. Its end is the team's
    /// barrier (team arenas), so that no thread still reads what the next take hands out again:
    /// a loop of frames filled with `TeamThreadRange` needs no barrier of its own. Frames end in
    /// LIFO order. Team-collective (see the class).
    KOKKOS_FUNCTION Frame frame() { return Frame(*this); }

    /// False once a take could not be served.
    KOKKOS_FUNCTION bool ok() const { return ok_; }

    /// Gives the slot back (team arenas: a barrier first, so that no thread still uses it),
    /// frees the arena's fallbacks, checks its guard zones (check mode), and adds the arena's
    /// counts to the workspace's. A take after it fails (aborts in debug builds). Called by the
    /// destructor if not before. Team-collective (see the class).
    KOKKOS_FUNCTION void end() {
      if (ended_) return;
      if (depth_ != 0) misuse("kbuf::Workspace::Arena::end while frames of it are live");
      check_team(step_end, 0);
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
        : header_(ws.header_),
          record_(slot >= 0 ? ws.records_ + static_cast<std::size_t>(slot) * Impl::wr_stride
                            : ws.header_ + Impl::wh_shared),
          flags_(ws.flags_),
          lane_flags_(ws.lane_flags_),
          spill_(ws.spill_),
          lanes_(ws.lanes_),
          lane_bytes_(ws.lane_bytes_),
          unit_(ws.unit_),
          guard_(ws.guard_),
          slot_bytes_(slot >= 0 ? ws.slot_bytes_ : 0),
          fast_bytes_(slot >= 0 && ws.guard_ == 0 ? ws.slot_bytes_ : 0),
          slot_mem_(slot >= 0 ? ws.slots_mem_ + static_cast<std::size_t>(slot) * ws.slot_bytes_
                              : nullptr),
          team_(team),
          slot_(slot),
          start_(slot >= 0 ? static_cast<std::size_t>(slot) : 0),
          owns_flag_(slot >= 0),
          shared_(slot < 0),
          region_(ws.region_) {}

    template <class V>
    KOKKOS_FUNCTION V refuse() {
      ok_ = false;
      ++failed_;
      ++takes_;
      return V();
    }

    // Byte count of a take, false for a negative extent, an extent the View cannot hold, or
    // an overflow.
    template <class DataType, class V, class T, class... Extents>
    KOKKOS_FUNCTION static bool byte_count(unsigned long long& nbytes, Extents... extents) {
      unsigned long long n = Impl::static_extent_product<DataType>::value * sizeof(T);
      bool good = true;
      const auto mul = [&](auto e) {
        if (Impl::negative_extent(e)) {
          good = false;
          return;
        }
        const unsigned long long x = static_cast<unsigned long long>(e);
        if constexpr (Impl::extents_held_in_32_bits<V>) {
          if (x > Impl::max_32_bit_extent) {
            good = false;
            return;
          }
        }
        if (x != 0 && n > (~0ull >> 2) / x) {  // below 2^62: no address computed overflows
          good = false;
          return;
        }
        n *= x;
      };
      (void)mul;
      (mul(extents), ...);
      bool held = true;
      if constexpr (Impl::extents_held_in_32_bits<V>) {
        held = !((static_cast<unsigned long long>(extents) > Impl::max_32_bit_extent) || ...);
      }
      if (!good && held && ((static_cast<unsigned long long>(extents) == 0) || ...) &&
          !(Impl::negative_extent(extents) || ...)) {
        good = true;  // a zero extent: the size is 0 whatever the others are
        n = 0;
      }
      nbytes = n;
      return good;
    }

    // Memory for a take of `nbytes`: the slot, a lane, a fallback, or null (zero bytes; or
    // failed, counted). The first branch is the hot path: a take that fits the rest of its slot
    // (`fast_bytes_` is the slot's size, or 0 in check mode, where every take has a guard).
    KOKKOS_FUNCTION void* place(unsigned long long nbytes) {
      const unsigned long long index = takes_++;
      if (nbytes == 0) return nullptr;  // an empty view: nothing moves, not a failure
      const unsigned long long n = (nbytes + unit_ - 1) & ~(unit_ - 1);  // unit: a power of 2
      if (slot_top_ + n <= fast_bytes_) {
        need_top_ += n;
        if (need_top_ > need_peak_) need_peak_ = need_top_;
        void* p = slot_mem_ + slot_top_;
        slot_top_ += n;
        return p;
      }
      if (guard_ != 0) return place_checked(nbytes, n, index);
      return find(n);
    }

    // `n` bytes (a multiple of the unit): the slot if it has room, else a spill.
    KOKKOS_FUNCTION void* find(unsigned long long n) {
      need_top_ += n;
      if (need_top_ > need_peak_) need_peak_ = need_top_;
      if (slot_top_ + n <= slot_bytes_) {
        void* p = slot_mem_ + slot_top_;
        slot_top_ += n;
        return p;
      }
      return spill(n);
    }

    // A take that does not fit the rest of the slot: the arena's lane (claimed at its first
    // spill, with one pass over the lanes), else a fallback.
    KOKKOS_FUNCTION void* spill(unsigned long long n) {
      ++events_;         // a frame's end restores the spill state only after events
      spill_want_ += n;  // asked of the lane, whatever serves it
      if (spill_want_ > spill_peak_) spill_peak_ = spill_want_;
      spilled_ = true;
      check_team(step_spill, n);
      // A lane is claimed when the arena holds no spilled take (none, or all given back).
      if (lane_ < 0 && lanes_ != 0 && n <= lane_bytes_ && spill_top_ == 0 &&
          fallbacks_ == nullptr) {
        LaneClaim claim{this};
        lane_ = Impl::team_single<int>(team_, claim);
        if (lane_ < 0) missed_ = true;
      }
      if (lane_ >= 0 && spill_top_ + n <= lane_bytes_) {
        void* p = spill_ + static_cast<std::size_t>(lane_) * lane_bytes_ + spill_top_;
        spill_top_ += n;
        ++spills_;
        spill_bytes_ += n;
        return p;
      }
      FallbackTake take{this, n};
      void* p = Impl::team_single<void*>(team_, take);
      if (p == nullptr) {
        ok_ = false;
        ++failed_;
        return nullptr;
      }
      fallbacks_ = p;
      ++events_;  // the block carries the new count (above every frame's begun before it)
      ++fallback_count_;
      fallback_bytes_ += n;
      return p;
    }

    // Check mode: a block of meta, data and guard zone, wherever it fits; its meta and zone
    // written by one thread of the team.
    KOKKOS_FUNCTION void* place_checked(unsigned long long nbytes, unsigned long long data,
                                        unsigned long long index) {
      check_team(step_checked_take, nbytes);  // before the guard's write, a step of the team
      unsigned char* block = static_cast<unsigned char*>(find(unit_ + data + guard_));
      if (block == nullptr) return nullptr;
      GuardWrite write{this, block, nbytes, index, data - nbytes + guard_, events_ + 1};
      (void)Impl::team_single<int>(team_, write);
      checks_ = block;
      ++events_;  // the block carries the new count
      return block + unit_;
    }

    // Claims a lane for the arena (one thread of the team): one pass, no wait.
    struct LaneClaim {
      Arena* arena;
      KOKKOS_FUNCTION int operator()() const {
        const Arena& a = *arena;
        return Impl::claim_slot(a.lane_flags_, a.lanes_, a.start_, 1);
      }
    };

    // A fallback block of `n` bytes (one thread of the team), searched for in the region from
    // the slot's home on.
    struct FallbackTake {
      Arena* arena;
      unsigned long long n;
      KOKKOS_FUNCTION void* operator()() const {
        const Arena& a = *arena;
        return Impl::fallback_take(n, a.unit_, a.fallbacks_, a.events_ + 1, a.region_,
                                   a.start_ * a.region_.home);
      }
    };

    // The meta and guard zone of a checked take (one thread of the team).
    struct GuardWrite {
      Arena* arena;
      unsigned char* block;
      unsigned long long nbytes, index, span, stamp;
      KOKKOS_FUNCTION int operator()() const {
        Impl::guard_write(block, arena->unit_, arena->checks_, nbytes, index, span, stamp);
        return 0;
      }
    };

    // What a frame restores, and the arena's events when it began: a frame's end that sees
    // none since (the common case: takes from the slot only) has nothing else to give back.
    struct Tops {
      unsigned long long slot, need, spill, want, events;
    };
    KOKKOS_FUNCTION Tops tops() const {
      return Tops{slot_top_, need_top_, spill_top_, spill_want_, events_};
    }

    // Gives back what was taken after `to` (one thread of the team, after the barrier): checks
    // the guard zones and frees the fallbacks made since (their stamps are above its event
    // count), and gives the lane back once the arena holds no spilled take. Returns the
    // overruns found.
    struct Release {
      Arena* arena;
      Tops to;
      bool all;  // the arena's end
      KOKKOS_FUNCTION unsigned long long operator()() const {
        Arena& a = *arena;
        unsigned long long overruns = 0;
        if (a.guard_ != 0) {
          const Impl::GuardFindings f = Impl::guard_check(a.checks_, to.events, a.unit_);
          Impl::guard_report(a.header_, f, a.guard_, KBUF_ENABLE_DEBUG != 0);
          overruns = f.overruns;
        }
        Impl::fallback_release(a.fallbacks_, to.events, a.region_);
        if (a.lane_ >= 0 && (all || to.spill == 0)) Impl::release_slot(a.lane_flags_, a.lane_);
        return overruns;
      }
    };

    // A frame's end after events: gives back the fallbacks and checked takes made since `t`,
    // and the lane if the frame began before it was claimed. Off the hot path (a frame's end
    // without events is the common one), so that the loops of takes keep their registers.
    KOKKOS_FUNCTION void release_since(const Tops& t) {
      // What is left of the chains, found by each thread before one of them frees the rest
      // (the blocks made since the frame began carry stamps above its event count).
      void* fallbacks = Impl::fallback_left(fallbacks_, t.events);
      void* checks = guard_ != 0 ? Impl::guard_left(checks_, t.events) : checks_;
      Impl::team_barrier(team_);
      Release release{this, t, false};
      overruns_ += Impl::team_single<unsigned long long>(team_, release);
      fallbacks_ = fallbacks;
      checks_ = checks;
      if (t.spill == 0) lane_ = -1;
    }

    KOKKOS_FUNCTION void end_frame(int index, const Tops& t) {
      if (ended_ || index != depth_ - 1) {
        misuse(ended_ ? "kbuf::Workspace::Frame ended after its arena"
                      : "kbuf::Workspace::Frame ended out of LIFO order");
        if (ended_) return;
      }
      --depth_;
      check_team(step_frame, static_cast<unsigned long long>(index));
      if (events_ != t.events) {  // a spill (lane, fallback) or a checked take since
        release_since(t);
      } else if (team_.sync) {
        // The frame's end is the team's barrier: what follows may hand its memory out again.
        Impl::team_barrier(team_);
      }
      slot_top_ = t.slot;
      need_top_ = t.need;
      spill_want_ = t.want;
      spill_top_ = t.spill;
    }

    // The arena's end, by one thread of the team: what it still holds, its counts, its slot.
    struct Flush {
      Arena* arena;
      KOKKOS_FUNCTION int operator()() const {
        Arena& a = *arena;
        Release release{arena, Tops{0, 0, 0, 0, 0}, true};
        const unsigned long long overruns = a.overruns_ + release();
        unsigned long long* r = a.record_;
        const bool shared = a.shared_;
        Impl::record_add(r, Impl::wr_takes, a.takes_, shared);
        Impl::record_add(r, Impl::wr_arenas, 1, shared);
        if (a.spilled_) {
          Impl::record_add(r, Impl::wr_spilling, 1, shared);
          Impl::record_add(r, Impl::wr_spills, a.spills_, shared);
          Impl::record_add(r, Impl::wr_spill_bytes, a.spill_bytes_, shared);
          Impl::record_add(r, Impl::wr_fallbacks, a.fallback_count_, shared);
          Impl::record_add(r, Impl::wr_fallback_bytes, a.fallback_bytes_, shared);
          Impl::record_add(r, Impl::wr_missed, a.missed_ ? 1 : 0, shared);
          Impl::record_max(r, Impl::wr_spill_peak, a.spill_peak_, shared);
        }
        Impl::record_add(r, Impl::wr_failed, a.failed_, shared);
        Impl::record_add(r, Impl::wr_overruns, overruns, shared);
        Impl::record_add(r, Impl::wr_unslotted, shared ? 1 : 0, shared);
        Impl::record_max(r, Impl::wr_peak_need, a.need_peak_, shared);
        if (a.team_.kind != Impl::team_none && !a.team_.per_thread) {
          Impl::record_max(r, Impl::wr_team_threads,
                           static_cast<unsigned long long>(a.team_.threads), shared);
        }
        Impl::record_need(r, a.header_ + Impl::wh_hist, a.need_peak_, shared);
        if (a.owns_flag_) Impl::release_slot(a.flags_, a.slot_);  // after the record's writes
        return 0;
      }
    };

    // Debug builds: every thread and vector lane of the team must have made the same takes and
    // frames; a collective step compares each one's copy of the arena (a mix of its counts and
    // tops: one word) with the others'. An arena with a slot compares them in the slot's record,
    // with no barrier, so that a thread that got there alone (a take or frame inside
    // Kokkos::single or a thread range: its team is elsewhere) aborts after a time bound instead
    // of waiting forever; an arena without a slot has no record of its own and compares them
    // through one thread's broadcast (a barrier of the team).
    // The step (and its size: a take's bytes, a frame's index) is part of the signature, so
    // that two threads whose counts agree by chance but that are about to make different steps
    // (each with barriers of its own) are told apart before either enters a barrier.
    enum Step : unsigned long long { step_spill = 1, step_checked_take, step_frame, step_end };
    KOKKOS_FUNCTION unsigned long long signature(Step step, unsigned long long size) const {
      unsigned long long h = 0x9E3779B97F4A7C15ull;
      const unsigned long long parts[6] = {
          takes_, slot_top_, need_top_, static_cast<unsigned long long>(depth_), step, size};
      for (const unsigned long long x : parts) {
        h ^= x + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
      }
      return h;
    }
    struct SignatureOf {
      unsigned long long signature;
      KOKKOS_FUNCTION unsigned long long operator()() const { return signature; }
    };
    KOKKOS_FUNCTION void check_team(Step step, unsigned long long size) const {
#if KBUF_ENABLE_DEBUG
      if (team_.kind == Impl::team_none || !team_.sync) return;
      const unsigned long long mine = signature(step, size);
      int agreed = 1;
      if (!shared_) {
        agreed = Impl::team_check(record_, static_cast<unsigned long long>(team_.threads), mine);
      } else {
        SignatureOf of{mine};
        agreed = Impl::team_single<unsigned long long>(team_, of) == mine ? 1 : 0;
      }
      Impl::team_check_report(shared_ ? nullptr : record_, agreed);
#else
      (void)step;
      (void)size;
#endif
    }

    KOKKOS_FUNCTION static void misuse(const char* what) {
#if KBUF_ENABLE_DEBUG
      Kokkos::abort(what);
#else
      (void)what;
#endif
    }

    unsigned long long* header_;
    unsigned long long* record_;  // the slot's own, or the shared one
    unsigned int* flags_;
    unsigned int* lane_flags_;
    unsigned char* spill_;
    std::size_t lanes_;
    unsigned long long lane_bytes_;
    unsigned long long unit_;
    unsigned long long guard_;  // bytes of guard zone after each take; 0: no check mode
    unsigned long long slot_bytes_;
    unsigned long long fast_bytes_;  // the slot's bytes the hot path serves (0 in check mode)
    unsigned char* slot_mem_;
    Impl::TeamHandle team_;
    int slot_;
    std::size_t start_;  // where the lane probe starts
    bool owns_flag_;
    bool shared_;  // no slot: the shared record, with atomics
    bool ok_ = true;
    bool ended_ = false;
    bool spilled_ = false;
    bool missed_ = false;
    int depth_ = 0;
    int lane_ = -1;
    unsigned long long slot_top_ = 0;
    unsigned long long need_top_ = 0;
    unsigned long long need_peak_ = 0;
    unsigned long long spill_top_ = 0;   // in the lane
    unsigned long long spill_want_ = 0;  // spilled, whatever served it
    unsigned long long spill_peak_ = 0;
    void* fallbacks_ = nullptr;      // the newest fallback block (a chain)
    void* checks_ = nullptr;         // the newest checked take's block (a chain)
    unsigned long long events_ = 0;  // lane claims, fallbacks and checked takes so far
    unsigned long long takes_ = 0;
    unsigned long long spills_ = 0;
    unsigned long long spill_bytes_ = 0;
    unsigned long long fallback_count_ = 0;
    unsigned long long fallback_bytes_ = 0;
    unsigned long long failed_ = 0;
    unsigned long long overruns_ = 0;
    Impl::FallbackRegion region_;  // last: the cold path's, after the words the hot path uses
  };

  /// LIFO release inside an arena: when it ends (its destructor), what was taken after it was
  /// made is given back, and the team meets at a barrier (team arenas). Not copyable.
  /// Team-collective, as the arena's calls.
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

  /// The arena of the calling team (a per_team workspace): every thread and vector lane of the
  /// team calls it (see `Arena`); one thread claims a free slot, the team waits for it. On a
  /// per_thread workspace, the arena of the calling thread of the team, shared by its vector
  /// lanes as Kokkos' `PerThread` scratch is: every vector lane of the thread calls it and makes
  /// the same calls on it, and a take's memory is filled by them in a `ThreadVectorRange`; one
  /// lane claims the slot (from the thread's rank in the league, league rank x team size + team
  /// rank, on), the others wait for it. In a team kernel with vector lanes this, not
  /// `arena(token)` with a token each lane holds, is the thread's arena: a GPU runs each vector
  /// lane as a thread of its own, which would hold an arena of its own.
  template <class TeamMember>
  KOKKOS_FUNCTION Arena arena(const TeamMember& team) const {
    if (!per_team_) {
      const Impl::TeamHandle h = Impl::thread_handle(team);
      const long long rank =
          static_cast<long long>(team.league_rank()) * team.team_size() + team.team_rank();
      SlotClaim claim{
          this, slots_ != 0 ? static_cast<int>(static_cast<unsigned long long>(rank) % slots_) : 0};
      const int slot = Impl::team_single<int>(h, claim);
      return Arena(*this, h, slot);
    }
    const Impl::TeamHandle h = Impl::team_handle(team);
    SlotClaim claim{this, team.league_rank()};
    const int slot = Impl::team_single<int>(h, claim);
    return Arena(*this, h, slot);
  }

  /// The arena of the calling thread, for a per_thread workspace: `token` is a value of any
  /// `Kokkos::Experimental::UniqueToken` of the execution space (the global one, whose size is
  /// the device's concurrency, or one of another size), or any other number the thread holds
  /// alone while the arena lives. The arena claims a free slot, probing from `token % slots()`
  /// on as a team's claim does: with slots for every thread in flight, that slot is free, and
  /// the claim is one compare-and-swap; a token of a value above the slots finds a free one all
  /// the same. A negative token gets no slot: every take spills (debug builds abort).
  KOKKOS_FUNCTION Arena arena(int token) const {
    int slot = -1;
    if (per_team_ || token < 0) {
      misuse_static(per_team_ ? "kbuf::Workspace::arena(token) on a per_team workspace"
                              : "kbuf::Workspace::arena(token): a negative token");
    } else {
      slot = Impl::claim_slot(flags_, slots_, static_cast<std::size_t>(token), probe_rounds);
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
  /// arena that finds none free is served by fallback allocations (it never waits).
  KOKKOS_FUNCTION std::size_t spill_lanes() const noexcept {
    return lanes_;
  }
  /// Bytes of each spill lane: the most one arena can spill into it at once.
  KOKKOS_FUNCTION std::size_t lane_bytes() const noexcept {
    return static_cast<std::size_t>(lane_bytes_);
  }
  /// Bytes of the fallback region: what serves the takes that fit neither their slot nor a
  /// lane, with no heap (a first round's is `per_team::fallback_bytes`, or `slots() x
  /// max(64 KiB, bytes)`; a rerun's is sized for the arenas that may find every lane taken).
  KOKKOS_FUNCTION std::size_t fallback_region_bytes() const noexcept {
    return static_cast<std::size_t>(region_.chunks << region_.shift);
  }
  /// Bytes of the guard zone after each take: 0 unless in check mode (pass-through mode or
  /// `KBUF_ENABLE_DEBUG`).
  KOKKOS_FUNCTION std::size_t guard_bytes() const noexcept {
    return static_cast<std::size_t>(guard_);
  }
  /// Bytes the workspace takes from its allocator (header, flags, records and the fallback region
  /// included).
  std::size_t bytes() const noexcept {
    return total_;
  }
  /// The label it learns under.
  const char* label() const noexcept {
    return label_;
  }

  /// Fences the allocator's execution space instance (the kernels that used the workspace must
  /// have run on it), reads what they did, and records under the label what they needed, for
  /// the next workspace with that label. Call it once, before the scope the workspace was made
  /// in ends.
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
      const int slot =
          Impl::claim_slot(ws->flags_, ws->slots_, Impl::slot_hint(league_rank), probe_rounds);
      KBUF_IMPL_IF_ON_HOST((if (slot >= 0) Impl::last_slot() = static_cast<std::size_t>(slot);))
      return slot;
    }
  };

  // Rounds over all the slots a team's claim probes, backing off between them, before it goes
  // without one: with as many slots as teams in flight, a slot frees while the probe lasts.
  static constexpr std::size_t probe_rounds = 64;

  KOKKOS_FUNCTION static void misuse_static(const char* what) {
    Arena::misuse(what);
  }

  unsigned char* base_ = nullptr;
  unsigned long long* header_ = nullptr;
  unsigned int* flags_ = nullptr;
  unsigned int* lane_flags_ = nullptr;
  unsigned long long* records_ = nullptr;
  unsigned char* slots_mem_ = nullptr;
  unsigned char* spill_ = nullptr;
  Impl::FallbackRegion region_;
  std::size_t slots_ = 0;
  std::size_t slot_bytes_ = 0;
  std::size_t lanes_ = 0;
  unsigned long long lane_bytes_ = 0;
  unsigned long long unit_ = 64;
  unsigned long long guard_ = 0;
  std::size_t total_ = 0;
  bool per_team_ = true;
  const char* label_ = "";  // the learning record's key (lives in the allocator)
  Impl::WorkspaceLearning* learning_ = nullptr;
  BufferAllocator<MemorySpace>* owner_ = nullptr;
};

/// `arena.take<DataType, Layout>(extents...)` as a free function, for generic code where the
/// arena's type depends on a template parameter and the member call would need `.template`:
/// `auto w = kbuf::take<double*>(arena, n);`. Team-collective as the member.
template <class DataType, class Layout = Kokkos::LayoutRight, class Arena, class... Extents>
KOKKOS_INLINE_FUNCTION auto take(Arena& arena, Extents... extents)
    -> decltype(arena.template take<DataType, Layout>(extents...)) {
  return arena.template take<DataType, Layout>(extents...);
}

}  // namespace kbuf

#include <kbuf/impl/workspace_impl.hpp>  // BufferAllocator::workspace, Workspace::finish

#endif  // KBUF_WORKSPACE_HPP
