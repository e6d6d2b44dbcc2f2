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

#include <kbuf/impl/asan.hpp>

namespace kbuf {

/// The byte released memory is filled with when `KBUF_ENABLE_DEBUG` is 1 (all bits set: NaN
/// for every IEEE floating-point type).
inline constexpr unsigned char debug_fill_byte = 0xFF;

/// True when kbuf's headers were compiled with debug checks.
inline constexpr bool debug_checks_enabled = KBUF_ENABLE_DEBUG != 0;

/// True when kbuf's headers poison released host memory for AddressSanitizer.
inline constexpr bool asan_poisoning_enabled = KBUF_IMPL_ASAN != 0;

}  // namespace kbuf

#include <kbuf/impl/poison_and_fill.hpp>  // the poisoning, fill and abort helpers

#endif  // KBUF_DEBUG_HPP
