#ifndef KBUF_IMPL_ALLOCATOR_RECORDS_HPP
#define KBUF_IMPL_ALLOCATOR_RECORDS_HPP

// The bookkeeping entries of a BufferAllocator: its live fallbacks, the temporaries that made the
// need differ from the offset, and the points checkpoint() recorded.

#include <cstddef>
#include <cstdint>

namespace kbuf {
namespace Impl {

/// A live fallback: memory of its own, held until a reset to below `depth` releases it.
template <class RawView>
struct FallbackRecord {
  RawView memory;
  std::size_t nbytes;
  std::size_t depth;            ///< live temporaries before it: a reset to a lower depth frees it
  std::size_t owned_alignment;  ///< pass-through in HostSpace: operator new's alignment, else 0
  /// A buffer replaced under live temporaries (no fallback): held, like a fallback, until a
  /// reset to `depth` or below, under every temporary carved from it.
  bool replaced_buffer = false;
};

/// A live temporary that made the need differ more or less from the offset (a fallback, an
/// over-aligned temporary): the depth and the extra need before it, restored by a reset to
/// below it.
struct ExtraRecord {
  std::size_t depth;
  std::size_t extra;
};

/// A recorded checkpoint: the temporary numbered `id` was the newest of `depth` live ones.
struct CheckpointMark {
  std::size_t depth;
  std::uint64_t id;
};

}  // namespace Impl
}  // namespace kbuf

#endif  // KBUF_IMPL_ALLOCATOR_RECORDS_HPP
