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
  std::size_t temporaries = 0;     ///< temporaries served from the buffer (zero-sized included)
  std::size_t fallbacks = 0;       ///< temporaries served by a fallback allocation
  std::size_t fallback_bytes = 0;  ///< bytes requested by those fallbacks
  std::size_t regrows = 0;         ///< times the buffer was replaced (growth, resize, shrink)
  std::size_t resets = 0;          ///< successful `reset` calls, scopes' included
  std::size_t fences = 0;          ///< fences the allocator issued on its execution space instance
  std::size_t peak_used = 0;       ///< the largest `used()` seen
  std::size_t peak_live = 0;       ///< the most temporaries live at once
  std::size_t limit_refusals = 0;  ///< requests refused with `out_of_memory` because of a limit
};

/// One readable line, for logs: `temporaries 120, fallbacks 2 (4096 bytes), regrows 1,
/// resets 60, fences 3, peak used 65536 bytes, peak live 4, limit refusals 0`.
inline std::ostream& operator<<(std::ostream& os, const Statistics& s) {
  return os << "temporaries " << s.temporaries << ", fallbacks " << s.fallbacks << " ("
            << s.fallback_bytes << " bytes), regrows " << s.regrows << ", resets " << s.resets
            << ", fences " << s.fences << ", peak used " << s.peak_used << " bytes, peak live "
            << s.peak_live << ", limit refusals " << s.limit_refusals;
}

}  // namespace kbuf

#endif  // KBUF_STATISTICS_HPP
