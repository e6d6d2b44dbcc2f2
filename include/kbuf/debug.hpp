#ifndef KBUF_DEBUG_HPP
#define KBUF_DEBUG_HPP

/// @file
/// kbuf's checking aids: AddressSanitizer poisoning of released memory, the debug fill pattern
/// and the debug-mode abort. All of them compile to nothing unless the program is built with
/// AddressSanitizer or with `KBUF_ENABLE_DEBUG` set to 1.
///
/// **AddressSanitizer** (detected from the compiler: `__SANITIZE_ADDRESS__` or
/// `__has_feature(address_sanitizer)`), in memory spaces the host can access: the part of the
/// buffer that no live temporary holds — its unused tail and every range a `reset` releases —
/// is poisoned, and unpoisoned when it is handed out again; the buffer is unpoisoned before it
/// is freed. A host read or write through a temporary after its release is then reported by
/// ASan as `use-after-poison`; through a released fallback, as `heap-use-after-free`.
///
/// **KBUF_ENABLE_DEBUG** (CMake option of the same name, or Kokkos' own `Kokkos_ENABLE_DEBUG`;
/// an explicit `-DKBUF_ENABLE_DEBUG=0/1` wins):
/// - every byte a reset releases, and every byte of a new buffer, is set to
///   `kbuf::debug_fill_byte` (0xFF): a stale or uninitialised `float`/`double` reads as NaN, a
///   signed integer as -1, an unsigned one as its maximum, a pointer as an invalid address.
///   Released fallbacks are filled too before they are freed. Host execution spaces fill with
///   `memset`; others with `Kokkos::deep_copy` on the allocator's execution space instance, so
///   the fill is stream-ordered after the work that used the memory.
/// - a `Scope` destroyed out of LIFO order, and an allocator destroyed while scopes are live,
///   stop the program through `Kokkos::abort` with a message naming the allocator (destructors
///   never throw). Without debug checks the former is undefined order of release and the
///   latter a dangling scope.
/// The class layouts do not depend on `KBUF_ENABLE_DEBUG`; its cost is in the release paths
/// (the fill) only: allocation is unchanged.

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>

#include <Kokkos_Core.hpp>

#include <kbuf/config.hpp>

#if defined(__SANITIZE_ADDRESS__)
#define KBUF_IMPL_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KBUF_IMPL_ASAN 1
#endif
#endif
#ifndef KBUF_IMPL_ASAN
#define KBUF_IMPL_ASAN 0
#endif

#if KBUF_IMPL_ASAN
#include <sanitizer/asan_interface.h>
#endif

namespace kbuf {

/// The byte released memory is filled with when `KBUF_ENABLE_DEBUG` is 1 (all bits set: NaN
/// for every IEEE floating-point type).
inline constexpr unsigned char debug_fill_byte = 0xFF;

/// True when kbuf's headers were compiled with debug checks.
inline constexpr bool debug_checks_enabled = KBUF_ENABLE_DEBUG != 0;

/// True when kbuf's headers poison released host memory for AddressSanitizer.
inline constexpr bool asan_poisoning_enabled = KBUF_IMPL_ASAN != 0;

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

#endif  // KBUF_DEBUG_HPP
