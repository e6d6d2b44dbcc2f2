// One kbuf::BufferAllocator of the replay, without memory: kbuf's own rules
// (kbuf::Impl::BufferPolicy, the base class of BufferAllocator) driven in the order
// BufferAllocator's general path drives them (acquire_slow: regrow when empty and due, then
// carve, or grow under the live temporaries when a reset left a growth blocked, or fall back;
// a reset restores the point before a temporary). The differential test
// (tests/advisor/test_replay.cpp) runs the same programs through a real BufferAllocator and
// through this, and compares every number.
#ifndef KBUF_ADVISOR_REPLAY_HPP
#define KBUF_ADVISOR_REPLAY_HPP

#include <kbuf/impl/buffer_policy.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace kbuf_advisor {

class Replay {
 public:
  /// An allocator with no buffer yet (sizehint 0), every temporary aligned to `alignment`.
  explicit Replay(std::size_t alignment) : policy_(alignment), alignment_(alignment) {}

  /// The point a reset goes back to.
  struct Point {
    std::size_t depth, used;
  };

  /// Takes `nbytes` (the program's types are aligned below `alignment`); returns the point
  /// before it and whether the buffer held it (false: a fallback).
  Point acquire(std::size_t nbytes, bool& from_buffer) {
    if (nbytes == 0) {  // a zero-sized temporary: an empty view, nothing moves
      from_buffer = true;
      return Point{policy_.depth(), policy_.used()};
    }
    if (policy_.regrow_due()) {
      const std::size_t capacity = policy_.regrow_capacity(std::numeric_limits<std::size_t>::max());
      const bool replace = capacity != policy_.capacity();
      if (replace) policy_.set_buffer(origin(), capacity);
      policy_.regrown(replace);
    }
    const Point before{policy_.depth(), policy_.used()};
    kbuf::Impl::Placement place = policy_.place(nbytes, alignment_);
    if (!place.fits && policy_.growth_blocked()) {
      // A growth blocked by live temporaries: a larger buffer above them at once.
      const std::size_t capacity = policy_.capacity_under_live(nbytes, alignment_);
      if (capacity > policy_.capacity()) {
        policy_.grown_under_live(origin(), capacity);
        place = policy_.place(nbytes, alignment_);
      }
    }
    from_buffer = place.fits;
    if (place.fits) {
      policy_.carve(place, nbytes);
    } else {
      policy_.add_fallback(nbytes, alignment_);
      if (policy_.counters().regrows == 0) ++first_round_fallbacks_;
    }
    return before;
  }

  /// Releases everything taken after `p`.
  void release(const Point& p) { policy_.release(p.depth, p.used); }

  [[nodiscard]] const kbuf::Impl::BufferPolicy& policy() const noexcept { return policy_; }
  [[nodiscard]] std::size_t alignment() const noexcept { return alignment_; }
  [[nodiscard]] std::uint64_t first_round_fallbacks() const noexcept {
    return first_round_fallbacks_;
  }
  /// The capacity the next round would start with: the buffer a regrowth due now would make.
  [[nodiscard]] std::size_t next_capacity() const {
    return policy_.regrow_pending()
               ? policy_.regrow_capacity(std::numeric_limits<std::size_t>::max())
               : policy_.capacity();
  }

 private:
  // The buffer's address: any multiple of the alignment (no memory stands behind it).
  std::uintptr_t origin() const noexcept { return alignment_; }

  kbuf::Impl::BufferPolicy policy_;
  std::size_t alignment_;
  std::uint64_t first_round_fallbacks_ = 0;
};

/// One allocator of a replay of some call sites only: the whole replay's stream of temporaries
/// (takes numbered in its order, and their frees) with the other sites' left out. A temporary
/// freed while a newer one of these sites is held stays held until that one is freed too, as
/// the whole replay holds it (a kbuf scope around both).
class SiteReplay {
 public:
  explicit SiteReplay(std::size_t alignment) : replay_(alignment) {}

  /// The take numbered `index` (ascending), of `nbytes`.
  void take(std::uint64_t index, std::size_t nbytes) {
    bool from_buffer = false;
    const Replay::Point point = replay_.acquire(nbytes, from_buffer);
    ++temporaries_;
    if (from_buffer) ++from_buffer_;
    if (nbytes != 0) held_.push_back(Held{index, point, false});
  }

  /// The free of the take numbered `index`; nothing if that take was not one of these sites'.
  void free(std::uint64_t index) {
    const auto it = std::lower_bound(held_.begin(), held_.end(), index,
                                     [](const Held& h, std::uint64_t i) { return h.index < i; });
    if (it == held_.end() || it->index != index) return;
    it->dead = true;
    while (!held_.empty() && held_.back().dead) {
      replay_.release(held_.back().point);
      held_.pop_back();
    }
  }

  /// What a stretch of the stream repeated `times` more times adds, once a repetition of it
  /// from an empty allocator left every number but these two as it found them: the same
  /// placements again.
  void repeat(std::uint64_t temporaries, std::uint64_t from_buffer, std::uint64_t times) {
    temporaries_ += temporaries * times;
    from_buffer_ += from_buffer * times;
  }

  /// Nothing held.
  [[nodiscard]] bool empty() const noexcept { return held_.empty(); }
  [[nodiscard]] const Replay& replay() const noexcept { return replay_; }
  [[nodiscard]] std::uint64_t temporaries() const noexcept { return temporaries_; }
  [[nodiscard]] std::uint64_t from_buffer() const noexcept { return from_buffer_; }
  /// Temporaries carved from the buffer, less the buffers allocated.
  [[nodiscard]] std::int64_t allocations_avoided() const noexcept {
    return static_cast<std::int64_t>(from_buffer_) -
           static_cast<std::int64_t>(replay_.policy().counters().regrows);
  }

 private:
  struct Held {
    std::uint64_t index;
    Replay::Point point;
    bool dead;
  };
  Replay replay_;
  std::vector<Held> held_;  // ascending index
  std::uint64_t temporaries_ = 0, from_buffer_ = 0;
};

}  // namespace kbuf_advisor

#endif  // KBUF_ADVISOR_REPLAY_HPP
