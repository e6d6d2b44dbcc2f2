#ifndef KBUF_ANY_SPACE_HPP
#define KBUF_ANY_SPACE_HPP

/// @file
/// `kbuf::BufferAllocator` in any Kokkos memory space. libkbuf holds the allocator's compiled
/// members for `Kokkos::HostSpace` and for the configured backend's device space
/// (`kbuf::default_memory_space`), so a translation unit that includes <kbuf/kbuf.hpp> parses
/// declarations and the hot path only. A translation unit that makes an allocator (or a pool, a
/// scope or a temporary through kbuf/current.hpp) in another memory space — a user's own, a
/// `Kokkos::Experimental::LogicalMemorySpace`, `Kokkos::CudaUVMSpace` — includes this header too:
/// it makes the definitions reachable, and the compiler instantiates them there. Without it,
/// such an allocator stops the compile with a `static_assert` that names this header.

#include <type_traits>

#include <kbuf/buffer_allocator.hpp>
#include <kbuf/impl/allocator_definitions.hpp>

namespace kbuf {
namespace Impl {
template <class MemorySpace>
struct definitions_reachable<MemorySpace, void> : std::true_type {};
}  // namespace Impl
}  // namespace kbuf

#endif  // KBUF_ANY_SPACE_HPP
