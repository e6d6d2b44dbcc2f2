#ifndef KBUF_IMPL_BUFFER_POLICY_HPP
#define KBUF_IMPL_BUFFER_POLICY_HPP

/// @file
/// kbuf's placement rules without Kokkos and without memory: where a temporary goes in the
/// buffer, when it is a fallback instead, what the need and the high-water mark become, when
/// and to what size the buffer regrows, and what a reset restores. `kbuf::BufferAllocator`
/// derives from it and moves every number through it; its memory (the buffer, the fallbacks),
/// fences, limits, Kokkos Tools reports and checkpoint records stay in the allocator. A replay
/// that holds no memory (kbuf-advisor's) uses the same class, so the two cannot drift apart.
/// Not part of the API.

#include <cstddef>
#include <cstdint>
#include <vector>

#include <kbuf/impl/allocator_records.hpp>
#include <kbuf/sizes.hpp>
#include <kbuf/statistics.hpp>

namespace kbuf {
namespace Impl {

/// Where the next temporary goes (BufferPolicy::place).
struct Placement {
  std::size_t start;       ///< its offset in the buffer if it fits
  std::size_t need_start;  ///< its offset in the need: as if everything live were carved, each
                           ///< with its worst-case padding
  bool fits;               ///< carved at `start`; otherwise a fallback
};

/// The numbers of one buffer allocator and the rules that move them. Addresses are integers:
/// the allocator passes its buffer's real address, a replay any multiple of the alignment.
/// Not thread-safe, like the allocator.
class BufferPolicy {
 public:
  /// Every temporary aligned to at least `alignment` (a power of two; the allocator checks).
  explicit BufferPolicy(std::size_t alignment) noexcept
      : alignment_(alignment), align_mask_(alignment - 1), align_neg_(~align_mask_) {}

  /// Bytes of the buffer in use, padding included.
  [[nodiscard]] std::size_t used() const noexcept {
    return static_cast<std::size_t>(top_ - origin_);
  }

  /// The peak need, the next growth target: the most bytes the live temporaries (fallbacks
  /// included, each with its worst-case padding) would have taken in the buffer.
  [[nodiscard]] std::size_t high_water_mark() const noexcept {
    const std::size_t need = used() + extra_;  // the peak since the last reset is the need now
    return need > hwm_ ? need : hwm_;
  }

  /// Bytes in the buffer.
  [[nodiscard]] std::size_t capacity() const noexcept { return capacity_; }
  /// Live temporaries (zero-sized ones aside).
  [[nodiscard]] std::size_t depth() const noexcept { return depth_; }
  /// Fallbacks, their bytes, regrowths, peaks (the other counters are the allocator's).
  [[nodiscard]] const Statistics& counters() const noexcept { return stats_; }

  /// True when the next acquisition on an empty allocator replaces the buffer first.
  [[nodiscard]] bool regrow_pending() const noexcept { return hwm_ > capacity_ || shrink_; }

  /// True when the next acquisition replaces the buffer first (growth when empty).
  [[nodiscard]] bool regrow_due() const noexcept { return depth_ == 0 && regrow_pending(); }

  /// True when a temporary that does not fit makes a larger buffer at once, under the live
  /// temporaries (grown_under_live), rather than a fallback: a growth is pending and the last
  /// reset left temporaries live (a caller's temporary held across calls, an outer scope), so
  /// a growth that waited for an empty allocator might wait for ever.
  [[nodiscard]] bool growth_blocked() const noexcept { return blocked_ && depth_ != 0; }

  /// The capacity of a buffer that serves `nbytes` aligned to `a` above the live temporaries,
  /// at their offsets: `buffer_size` of the high-water mark or of the temporary's end there,
  /// whichever is more. Precondition: the need plus `a` plus `nbytes` fits in size_t.
  [[nodiscard]] std::size_t capacity_under_live(std::size_t nbytes, std::size_t a) const {
    const std::size_t used = this->used();
    const std::size_t need_start = align_up(used + extra_, alignment_) + (a - alignment_);
    // Where it lands in a buffer aligned to alignment_ only: at most a - 1 bytes of padding.
    const std::size_t start = used + (a - 1) > need_start ? used + (a - 1) : need_start;
    const std::size_t end = start + nbytes;
    return buffer_size(end > hwm_ ? end : hwm_);
  }

  /// The buffer is now `capacity` bytes at `origin`, and the live temporaries keep their
  /// offsets: those carved before stay where they are, in the buffer replaced (which the
  /// allocator holds until they are released), and the next ones go above used(). Counted as a
  /// regrowth, and apart.
  void grown_under_live(std::uintptr_t origin, std::size_t capacity) noexcept {
    const std::size_t used = this->used();
    origin_ = origin;
    capacity_ = capacity;
    top_ = origin + used;
    blocked_ = false;
    shrink_ = false;
    ++stats_.regrows;
    ++stats_.regrows_under_live;
  }

  /// The capacity a regrowth leaves: `buffer_size(high-water mark)`, at most `largest` (what a
  /// limit leaves room for), never smaller than now unless a shrink was asked.
  /// Precondition: the high-water mark plus a page fits in size_t (the allocator checks).
  [[nodiscard]] std::size_t regrow_capacity(std::size_t largest) const {
    std::size_t capacity = buffer_size(hwm_);
    if (capacity > largest) capacity = largest;
    return capacity > capacity_ || (shrink_ && capacity != capacity_) ? capacity : capacity_;
  }

  /// Where `nbytes` (> 0) aligned to `a` (a power of two >= alignment) goes now.
  /// Precondition: the need plus `a` fits in size_t (the need counts memory that is held).
  [[nodiscard]] Placement place(std::size_t nbytes, std::size_t a) const noexcept {
    const std::size_t used = this->used();
    // The buffer's origin is aligned to alignment_, so a type aligned beyond it pads at most
    // (a - alignment_) bytes more.
    const std::size_t need_start = align_up(used + extra_, alignment_) + (a - alignment_);
    const std::size_t start = static_cast<std::size_t>(align_up(origin_ + used, a) - origin_);
    return Placement{start, need_start, start <= capacity_ && nbytes <= capacity_ - start};
  }

  /// Carves the temporary `place` found a room for. Returns its address.
  std::uintptr_t carve(const Placement& place, std::size_t nbytes) noexcept {
    top_ = origin_ + place.start + nbytes;
    set_extra(place.need_start - place.start);  // >= 0: the need's padding is the worst case
    ++depth_;
    new_peaks();
    return origin_ + place.start;
  }

  /// Counts a temporary of `nbytes` aligned to `a` served by a fallback: it takes no room in the
  /// buffer and all of its need.
  void add_fallback(std::size_t nbytes, std::size_t a) noexcept {
    ++stats_.fallbacks;
    stats_.fallback_bytes += nbytes;
    // The buffer would have grown already but for something live: the growth waits for empty.
    if (depth_ != 0 && regrow_pending()) ++stats_.fallbacks_awaiting_growth;
    const std::size_t used = this->used();
    set_extra(align_up(used + extra_, alignment_) + (a - alignment_) + nbytes - used);
    ++depth_;
    new_peaks();
  }

  /// Records a need that a limit refused to serve, so the next growth makes room for it.
  void record_need(std::size_t need) noexcept {
    if (need > hwm_) hwm_ = need;
  }

  /// The buffer is now `capacity` bytes at `origin` (aligned to the alignment), empty.
  void set_buffer(std::uintptr_t origin, std::size_t capacity) noexcept {
    origin_ = origin;
    capacity_ = capacity;
    top_ = origin;
    blocked_ = false;
  }

  /// The buffer now holds `capacity` bytes at the same origin, its temporaries where they are
  /// (growth in place, or a trim above the top).
  void set_capacity(std::size_t capacity) noexcept { capacity_ = capacity; }
  /// After a regrowth to regrow_capacity() (made or, under a limit, declined): counted when the
  /// buffer changed; a shrink asked is done.
  void regrown(bool replaced) noexcept {
    if (replaced) ++stats_.regrows;
    shrink_ = false;
    blocked_ = false;
  }

  /// Back to the point with `depth` live temporaries and `used` bytes: restores the need of
  /// the temporaries released. The caller frees their fallbacks.
  void release(std::size_t depth, std::size_t used) noexcept {
    if (depth_ > stats_.peak_live) stats_.peak_live = depth_;
    while (!records_.empty() && records_.back().depth >= depth) {
      extra_ = records_.back().extra;
      records_.pop_back();
    }
    depth_ = depth;
    top_ = origin_ + used;
    ++stats_.resets;
    // A growth due now waits for an empty allocator; with temporaries left live it is blocked,
    // and the next temporary that does not fit grows the buffer under them (growth_blocked).
    blocked_ = depth != 0 && regrow_pending();
  }

 protected:
  // For a temporary about to be counted at depth_: extra_ becomes `extra`, recorded if it
  // changes (the allocator reserves the room first, so this cannot fail).
  void set_extra(std::size_t extra) noexcept {
    if (extra == extra_) return;
    records_.push_back(ExtraRecord{depth_, extra_});
    extra_ = extra;
  }

  // After the need or used() grew: the high-water mark and the peak of used().
  void new_peaks() noexcept {
    const std::size_t used = this->used();
    const std::size_t need = used + extra_;
    if (need > hwm_) hwm_ = need;
    if (used > stats_.peak_used) stats_.peak_used = used;
  }

  std::size_t alignment_;
  std::uintptr_t align_mask_;
  std::uintptr_t align_neg_;
  std::uintptr_t origin_ = 0;  // the buffer's address (aligned to alignment_)
  std::size_t capacity_ = 0;
  std::uintptr_t top_ = 0;  // address of the end of the newest carved temporary (used())
  std::size_t extra_ = 0;   // the need (bytes everything live would take if carved, worst-case
                            // padding) minus used()
  std::size_t hwm_ = 0;     // peak need up to the last reset (or what sizehint set)
  bool shrink_ = false;     // sizehint(n, true) asked the next regrowth to shrink too
  bool blocked_ = false;    // the last reset left temporaries live with a growth due
  std::vector<ExtraRecord> records_;  // see ExtraRecord, oldest first
  std::size_t depth_ = 0;             // live temporaries, zero-sized ones aside
  Statistics stats_;
};

}  // namespace Impl
}  // namespace kbuf

#endif  // KBUF_IMPL_BUFFER_POLICY_HPP
