#ifndef KBUF_IMPL_POISON_AND_FILL_HPP
#define KBUF_IMPL_POISON_AND_FILL_HPP

// What kbuf/debug.hpp describes, as the allocator calls it: AddressSanitizer poisoning and
// unpoisoning of host-accessible memory, the debug fill of released memory (memset on the host,
// deep_copy on the allocator's instance elsewhere) and the debug-mode abort.

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>

#include <Kokkos_Core.hpp>

#include <kbuf/config.hpp>
#include <kbuf/debug.hpp>

namespace kbuf {
namespace Impl {

/// Whether the host can touch memory of `MemorySpace` (only such memory is poisoned).
template <class MemorySpace>
constexpr bool host_accessible =
    Kokkos::SpaceAccessibility<Kokkos::DefaultHostExecutionSpace, MemorySpace>::accessible;

/// Marks [p, p + n) unaddressable for ASan (host-accessible spaces, ASan builds only). ASan
/// works in 8-byte granules: a range that does not start on one may stay partly addressable.
template <class MemorySpace>
inline void poison(const void* p, std::size_t n) noexcept {
#if KBUF_IMPL_ASAN
  if constexpr (host_accessible<MemorySpace>) {
    if (p != nullptr && n != 0) ASAN_POISON_MEMORY_REGION(p, n);
  }
#else
  (void)p;
  (void)n;
#endif
}

/// Marks [p, p + n) addressable again (may unpoison the bytes before p in the same granule).
template <class MemorySpace>
inline void unpoison(const void* p, std::size_t n) noexcept {
#if KBUF_IMPL_ASAN
  if constexpr (host_accessible<MemorySpace>) {
    if (p != nullptr && n != 0) ASAN_UNPOISON_MEMORY_REGION(p, n);
  }
#else
  (void)p;
  (void)n;
#endif
}

/// Debug builds: sets [p, p + n) to `debug_fill_byte`, stream-ordered on `exec`. Must run
/// while the range is addressable (before `poison`). A failure to launch the fill is ignored:
/// it is a diagnostic aid, called from paths that must not throw.
template <class MemorySpace, class ExecutionSpace>
inline void debug_fill(const ExecutionSpace& exec, void* p, std::size_t n) noexcept {
#if KBUF_ENABLE_DEBUG
  if (p == nullptr || n == 0) return;
  if constexpr (Kokkos::SpaceAccessibility<ExecutionSpace, Kokkos::HostSpace>::accessible &&
                host_accessible<MemorySpace>) {
    (void)exec;  // host execution spaces run their work synchronously
    std::memset(p, debug_fill_byte, n);
  } else {
    try {
      Kokkos::View<unsigned char*, MemorySpace, Kokkos::MemoryUnmanaged> bytes(
          static_cast<unsigned char*>(p), n);
      Kokkos::deep_copy(exec, bytes, debug_fill_byte);
    } catch (...) {
    }
  }
#else
  (void)exec;
  (void)p;
  (void)n;
#endif
}

/// Memory that stops being handed out (a new buffer, or what a reset releases): filled in
/// debug builds, then poisoned. The range may hold poisoned padding, so it is unpoisoned first.
template <class MemorySpace, class ExecutionSpace>
inline void release_bytes(const ExecutionSpace& exec, void* p, std::size_t n) noexcept {
#if KBUF_ENABLE_DEBUG
  unpoison<MemorySpace>(p, n);
  debug_fill<MemorySpace>(exec, p, n);
#else
  (void)exec;
#endif
  poison<MemorySpace>(p, n);
}

/// Stops the program with `message` (debug checks found a broken contract in a destructor).
[[noreturn]] inline void debug_abort(const std::string& message) noexcept {
  Kokkos::abort(message.c_str());
  std::abort();  // Kokkos::abort does not return; this keeps [[noreturn]] honest everywhere
}

}  // namespace Impl
}  // namespace kbuf

#endif  // KBUF_IMPL_POISON_AND_FILL_HPP
