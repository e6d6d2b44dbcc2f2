#ifndef KBUF_STATISTICS_HPP
#define KBUF_STATISTICS_HPP

/// @file
/// `kbuf::Statistics`: the counters of an allocator (or, summed, of a pool), and their one-line
/// text form.

#include <cstddef>
#include <ostream>

namespace kbuf {

/// Counters of one allocator, counted since its construction or since its last
/// `reset_peaks()` (a measurement region).
struct Statistics {
  /// Temporaries served from the buffer: those that hold memory, as Kokkos Tools' records and
  /// kbuf-advisor count them (zero-sized ones are `empty`).
  std::size_t temporaries = 0;
  std::size_t fallbacks = 0;       ///< temporaries served by a fallback allocation
  std::size_t fallback_bytes = 0;  ///< bytes requested by those fallbacks
  std::size_t regrows = 0;         ///< times the buffer was replaced (growth, resize, shrink)
  std::size_t resets = 0;          ///< successful `reset` calls, scopes' included
  std::size_t fences = 0;          ///< fences the allocator issued on its execution space instance
  std::size_t peak_used = 0;       ///< the largest `used()` seen
  std::size_t peak_live = 0;       ///< the most temporaries live at once
  std::size_t limit_refusals = 0;  ///< requests refused with `out_of_memory` because of a limit
  /// Growth in place (`BufferAllocator::grows_in_place()`): times the buffer grew at its end
  /// without moving, committing memory in its reservation (a temporary that did not fit, or a
  /// growth to the high-water mark). 0 without growth in place.
  std::size_t grown_in_place = 0;
  /// Addresses reserved for the buffer to grow in place (0: the allocator grows by regrowth:
  /// growth in place is off, or its memory space has no virtual memory API). Not a counter:
  /// what the allocator holds now.
  std::size_t reserved_bytes = 0;
  /// Memory committed in that reservation (the buffer's capacity). Not a counter either.
  std::size_t committed_bytes = 0;
  /// Of the fallbacks, those served while a growth of the buffer was due and waited for the
  /// allocator to be empty: something live at the bottom (a caller's temporary held across
  /// calls) keeps every later need above the buffer a fallback. Not 0 after a warm-up: release
  /// what is held, or take it elsewhere, or give the allocator its size at once (`sizehint`,
  /// a sizes file), or grow it in place (`KBUF_GROW_IN_PLACE=1`), which does not wait.
  std::size_t fallbacks_awaiting_growth = 0;
  /// Hand-offs: times an execution space instance was ordered after another instance's work
  /// on memory before a temporary used it (`allocate(exec, ...)`): on CUDA and HIP a stream's
  /// wait for an event, no host block.
  std::size_t handoffs = 0;
  /// Of the hand-offs, those that blocked the host (instances of different types: the host
  /// waited for the event).
  std::size_t host_waits = 0;
  /// Zero-sized temporaries (a zero extent): empty Views that hold no memory, served without
  /// touching the buffer. Not in `temporaries`.
  std::size_t empty = 0;
  /// Of the regrowths, those made under live temporaries: a growth was due when a reset left
  /// temporaries live (a caller's temporary held across calls), so the next temporary that did
  /// not fit took a larger buffer at once; the temporaries live then keep the buffer replaced
  /// until they are released.
  std::size_t regrows_under_live = 0;
};

/// One readable line, for logs: `temporaries 120, fallbacks 2 (4096 bytes), regrows 1,
/// resets 60, fences 3, peak used 65536 bytes, peak live 4, limit refusals 0`; with a
/// reservation for growth in place it goes on `, grown in place 3, reserved 68719476736 bytes,
/// committed 6291456 bytes`; with fallbacks served while a growth waited for an empty allocator,
/// `, fallbacks awaiting growth 61`; with hand-offs between instances, `, hand-offs 8 (host
/// waits 0)`; with regrowths under live temporaries, `, regrows under live temporaries 1`; with
/// zero-sized temporaries, `, empty 4`.
inline std::ostream& operator<<(std::ostream& os, const Statistics& s) {
  os << "temporaries " << s.temporaries << ", fallbacks " << s.fallbacks << " (" << s.fallback_bytes
     << " bytes), regrows " << s.regrows << ", resets " << s.resets << ", fences " << s.fences
     << ", peak used " << s.peak_used << " bytes, peak live " << s.peak_live << ", limit refusals "
     << s.limit_refusals;
  if (s.reserved_bytes != 0) {
    os << ", grown in place " << s.grown_in_place << ", reserved " << s.reserved_bytes
       << " bytes, committed " << s.committed_bytes << " bytes";
  }
  if (s.fallbacks_awaiting_growth != 0) {
    os << ", fallbacks awaiting growth " << s.fallbacks_awaiting_growth;
  }
  if (s.handoffs != 0 || s.host_waits != 0) {
    os << ", hand-offs " << s.handoffs << " (host waits " << s.host_waits << ")";
  }
  if (s.regrows_under_live != 0) os << ", regrows under live temporaries " << s.regrows_under_live;
  if (s.empty != 0) os << ", empty " << s.empty;
  return os;
}

}  // namespace kbuf

#endif  // KBUF_STATISTICS_HPP
