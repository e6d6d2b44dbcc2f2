// The reference model of kbuf::BufferAllocator, written from the documented semantics (not from
// the code): where a temporary must land, when it falls back, when the buffer regrows and to
// what size, what used(), high_water_mark() and the statistics are, which checkpoints are still
// valid, and which requests are refused. Shared by the model test (tests/unit/test_model.cpp)
// and the fuzzer (fuzz/fuzz_allocator.cpp); it computes and never asserts, so each can check
// with its own machinery. It depends on kbuf only for kbuf::page_size() and kbuf::Statistics.
#ifndef KBUF_TEST_MODEL_HPP
#define KBUF_TEST_MODEL_HPP

#include <kbuf/kbuf.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace kbuf_model {

constexpr std::size_t size_max = std::numeric_limits<std::size_t>::max();

/// `n` rounded up to a multiple of `a`; the caller guarantees no overflow.
inline std::size_t align_up(std::size_t n, std::size_t a) {
  return (n + a - 1) / a * a;
}

/// kbuf::buffer_size as documented: 0 for 0; the next power of two up to a page; above, a whole
/// number of pages. False when the rounded size does not fit in size_t (kbuf::logic_error).
inline bool buffer_size(std::size_t n, std::size_t* out) {
  const std::size_t page = kbuf::page_size();
  if (n == 0) {
    *out = 0;
  } else if (n <= page) {
    std::size_t p = 1;
    while (p < n) p <<= 1;
    *out = p;
  } else {
    if (n > size_max - (page - 1)) return false;
    *out = (n + page - 1) / page * page;
  }
  return true;
}

/// Documented: a View with three or more runtime extents holds each below 2^32 (Kokkos stores
/// them in 32 bits); a larger extent is refused with kbuf::logic_error.
inline bool extents_held_in_32_bits(int rank_dynamic) {
  return rank_dynamic >= 3;
}

/// The verdict on the extents of an allocate: the byte count, or a refusal (kbuf::logic_error)
/// for a negative extent, an extent the View cannot hold, or a size that overflows size_t. A
/// zero extent makes the size 0 whatever the others multiply to. `entry_bytes` is the size of
/// the value type times the static extents.
inline bool byte_count(std::size_t entry_bytes, const std::int64_t* extents, int rank_dynamic,
                       std::size_t* bytes) {
  for (int i = 0; i < rank_dynamic; ++i) {
    if (extents[i] < 0) return false;
  }
  if (extents_held_in_32_bits(rank_dynamic)) {
    for (int i = 0; i < rank_dynamic; ++i) {
      if (static_cast<std::uint64_t>(extents[i]) > 0xFFFFFFFFu) return false;
    }
  }
  for (int i = 0; i < rank_dynamic; ++i) {
    if (extents[i] == 0) {
      *bytes = 0;
      return true;
    }
  }
  std::size_t product = entry_bytes;
  for (int i = 0; i < rank_dynamic; ++i) {
    const auto e = static_cast<std::uint64_t>(extents[i]);
    if (e > size_max / product) return false;  // product >= 1: no extent is zero here
    product *= static_cast<std::size_t>(e);
  }
  *bytes = product;
  return true;
}

/// The same for one unsigned extent (a rank-1 View given a std::size_t).
inline bool byte_count(std::size_t entry_bytes, std::uint64_t extent, std::size_t* bytes) {
  if (extent != 0 && extent > size_max / entry_bytes) return false;
  *bytes = entry_bytes * static_cast<std::size_t>(extent);
  return true;
}

/// A live temporary as the model sees it.
struct Temporary {
  unsigned char* data = nullptr;
  std::size_t nbytes = 0;
  std::size_t align = 1;
  bool fallback = false;
  std::uint64_t token = 0;   // unique, increasing: the order of allocation
  std::uint32_t seed = 0;    // free for the caller (e.g. a byte pattern's)
  bool in_replaced = false;  // carved from a buffer since replaced under live temporaries
};

/// A checkpoint: the point of the LIFO history when it was taken.
struct Checkpoint {
  int owner = -1;           // the model's id; -1: default-constructed
  std::uint64_t token = 0;  // the newest live temporary then, 0 for none
  std::size_t depth = 0, used = 0, need = 0, nfallbacks = 0;
};

/// What an allocate of `nbytes` (> 0) must do, decided before the call.
struct Plan {
  std::size_t nbytes = 0;
  std::size_t a = 0;                    // the temporary's alignment: max(alignment(), alignof(T))
  std::size_t need_start = 0;           // the need before it, with its worst-case padding
  bool need_overflows = false;          // it cannot even be counted: kbuf::out_of_memory
  bool regrow_unrepresentable = false;  // no buffer size holds the high-water mark: the same
  bool regrow = false;                  // a pending regrowth to new_capacity comes first
  std::size_t new_capacity = 0;
  // A growth blocked by live temporaries: if it does not fit, a buffer of under_live_capacity
  // is taken at once, above them (BufferAllocator's growth under live temporaries).
  bool may_grow_under_live = false;
  std::size_t under_live_capacity = 0;

  /// The allocate must throw kbuf::out_of_memory, whatever memory there is.
  bool cannot_be_had() const { return need_overflows || regrow_unrepresentable; }
};

/// Where a planned temporary went: carved at offset `start` of the buffer, or a fallback.
struct Placement {
  bool fits = false;
  std::size_t start = 0;
};

/// The model of one allocator.
class Allocator {
 public:
  Allocator(int id, std::size_t alignment, std::size_t capacity, std::size_t hwm = 0)
      : id(id), alignment(alignment), capacity(capacity), hwm(hwm) {}

  int id;
  std::size_t alignment;
  std::size_t capacity;
  std::size_t used = 0;  // end of the newest carved temporary
  std::size_t need = 0;  // what the live temporaries would take if carved (worst-case padding)
  std::size_t hwm = 0;
  bool shrink = false;  // sizehint(n, true) asked the next regrowth to shrink too
  // Documented: a reset that leaves temporaries live while a growth is due (the high-water mark
  // above the capacity, or a shrink asked) blocks that growth; the next temporary that does not
  // fit then takes a larger buffer at once, above the live ones, at their offsets, and the
  // buffer replaced is held (not a live fallback) until a reset to the lowest depth the
  // allocator had while it was the buffer (known while another replaced buffer is held, else
  // 0: until empty), which frees it (after a fence).
  bool blocked = false;
  std::vector<std::size_t> replaced;  // for each buffer replaced and held: that depth
  std::size_t tenure_low = 0;         // the lowest depth since the buffer became the buffer
  std::uintptr_t base = 0;            // the buffer's address, as last seen
  std::vector<Temporary> live;
  std::size_t nfallbacks = 0;
  std::uint64_t next_token = 1;
  kbuf::Statistics stats{};

  std::size_t depth() const { return live.size(); }
  bool empty() const { return live.empty(); }

  Checkpoint checkpoint() const {
    Checkpoint cp;
    cp.owner = id;
    cp.token = live.empty() ? 0 : live.back().token;
    cp.depth = depth();
    cp.used = used;
    cp.need = need;
    cp.nfallbacks = nfallbacks;
    return cp;
  }

  /// Valid while every temporary live when it was taken is still live: with LIFO release and
  /// increasing tokens, while its newest one is still live at the same depth.
  bool valid(const Checkpoint& cp) const {
    return cp.owner == id && cp.depth <= depth() &&
           (cp.depth == 0 || live[cp.depth - 1].token == cp.token);
  }

  /// reset(cp) of a valid checkpoint (or reset(): the empty checkpoint of this model).
  void release_to(const Checkpoint& cp) {
    bool frees = nfallbacks > cp.nfallbacks;
    const std::size_t held_before = replaced.size();
    replaced.erase(std::remove_if(replaced.begin(), replaced.end(),
                                  [&](std::size_t low) { return low >= cp.depth; }),
                   replaced.end());
    if (replaced.size() != held_before) frees = true;
    tenure_low = std::min(tenure_low, cp.depth);
    if (frees) ++stats.fences;  // fallbacks and buffers replaced are freed after a fence
    live.resize(cp.depth);
    nfallbacks = cp.nfallbacks;
    used = cp.used;
    need = cp.need;
    ++stats.resets;
    blocked = cp.depth != 0 && (hwm > capacity || shrink);
  }
  void reset() { release_to(Checkpoint{id, 0, 0, 0, 0, 0}); }

  /// The rules for an allocate of `nbytes` (> 0) of a type aligned to `type_alignment`.
  Plan plan(std::size_t nbytes, std::size_t type_alignment) const {
    Plan p;
    p.nbytes = nbytes;
    p.a = std::max(alignment, type_alignment);
    p.need_start = align_up(need, alignment) + (p.a - alignment);
    p.need_overflows = nbytes > size_max - p.need_start;
    p.new_capacity = capacity;
    // A pending regrowth happens first: an empty allocator whose high-water mark exceeds its
    // capacity, or which was asked to shrink.
    if (!p.need_overflows && empty() && (hwm > capacity || shrink)) {
      std::size_t target = 0;
      if (!buffer_size(hwm, &target)) {
        p.regrow_unrepresentable = true;
      } else if (target > capacity || (shrink && target != capacity)) {
        p.regrow = true;
        p.new_capacity = target;
      }
    }
    if (!p.need_overflows && blocked && !empty()) {
      const std::size_t start = std::max(p.need_start, used + (p.a - 1));
      std::size_t target = 0;
      if (p.nbytes <= size_max - start && buffer_size(std::max(hwm, start + p.nbytes), &target) &&
          target > capacity) {
        p.may_grow_under_live = true;
        p.under_live_capacity = target;
      }
    }
    return p;
  }

  /// The allocate planned as `p` succeeded and returned `data`; the buffer (after a regrowth)
  /// starts at `base`. Records the temporary; returns where the rules say it must be.
  /// `grow_refused`: the memory for a growth under live temporaries could not be had (the
  /// temporary is then a fallback, as without it).
  Placement allocated(const Plan& p, std::uintptr_t base, unsigned char* data,
                      std::uint32_t seed = 0, bool grow_refused = false) {
    if (p.regrow) {
      if (capacity != 0) ++stats.fences;  // the old buffer is freed after a fence
      capacity = p.new_capacity;
      ++stats.regrows;
      blocked = false;
    }
    if (empty()) shrink = false;  // a pending regrowth was done (or not needed)
    const auto place = [&](std::uintptr_t at) {
      Placement w;
      if (capacity != 0) {
        w.start = static_cast<std::size_t>(align_up(at + used, p.a) - at);
        w.fits = w.start <= capacity && p.nbytes <= capacity - w.start;
      }
      return w;
    };
    // Whether it fits is decided in the buffer as it was: where a growth under live temporaries
    // may replace it, that is the one last seen (a blocked growth follows an allocate, and a
    // buffer changes without one only when empty).
    Placement where = place(p.may_grow_under_live ? this->base : base);
    if (!where.fits && p.may_grow_under_live && !grow_refused) {
      // Known while a replaced buffer was held since this one became the buffer.
      if (capacity != 0) replaced.push_back(replaced.empty() ? 0 : tenure_low);
      for (Temporary& t : live) t.in_replaced = t.in_replaced || !t.fallback;
      tenure_low = depth();
      capacity = p.under_live_capacity;
      blocked = false;
      shrink = false;
      ++stats.regrows;
      ++stats.regrows_under_live;
      where = place(base);
    } else if (!where.fits) {
      where = place(base);  // the same buffer: no growth
    }
    if (capacity != 0) this->base = base;
    if (where.fits) {
      used = where.start + p.nbytes;
      ++stats.temporaries;
      stats.peak_used = std::max(stats.peak_used, used);
    } else {
      ++nfallbacks;
      ++stats.fallbacks;
      stats.fallback_bytes += p.nbytes;
    }
    live.push_back(Temporary{data, p.nbytes, p.a, !where.fits, next_token++, seed});
    stats.peak_live = std::max(stats.peak_live, depth());
    need = p.need_start + p.nbytes;
    hwm = std::max(hwm, need);
    return where;
  }

  /// A zero-sized temporary: a valid empty view that moves nothing.
  void allocated_empty() { ++stats.empty; }

  void sizehint(std::size_t n, bool shrink_too) {
    if (shrink_too) {
      hwm = std::max(n, need);
      shrink = true;
    } else {
      hwm = std::max(hwm, n);
    }
  }

  /// Whether resize(n) is refused with kbuf::logic_error (live temporaries, or a size no
  /// buffer can have); else `target` is the capacity it asks for.
  bool resize_refused(std::size_t n, std::size_t* target) const {
    return !empty() || !buffer_size(n, target);
  }
  /// A resize to `target` (from resize_refused) succeeded.
  void resized(std::size_t target) {
    if (target != capacity) {
      if (capacity != 0) ++stats.fences;
      capacity = target;
      ++stats.regrows;
    }
    if (hwm > capacity) hwm = capacity;
    shrink = false;
    blocked = false;
  }

  void fenced() { ++stats.fences; }
};

}  // namespace kbuf_model

#endif  // KBUF_TEST_MODEL_HPP
