// A memory space that host code may not touch, for running the suite without a GPU.
//
// `kbuf_test::foreign_space` is host memory under a memory space type of its own, which neither
// the host nor a host execution space may dereference: a View access from host code aborts with
// "Kokkos::View ERROR: attempt to access inaccessible memory space". Only `Kokkos::deep_copy`
// and mirrors reach its contents, as with device memory. kbuf takes its non-HostSpace paths in
// it: the 256-byte default alignment, fallbacks and pass-through through Kokkos' allocation in
// the space, the debug fill through deep_copy.
//
// Kokkos before 4.3 provides such a space: Kokkos::Experimental::LogicalMemorySpace over
// HostSpace with no shared access (checked with Kokkos 3.4.01; its copies are made to take const
// sources at the end of this file, the one place here that touches Kokkos' internals). Kokkos
// 4.3 removed it; from 4.3 on the foreign space is kbuf_test::EmulatedDeviceSpace
// (emulated_device_space.hpp), which also puts View data 128 bytes past a 256-byte boundary, as
// CudaSpace does, and poisons and checks the memory it frees.
#ifndef KBUF_TEST_FOREIGN_SPACE_HPP
#define KBUF_TEST_FOREIGN_SPACE_HPP

#include <Kokkos_Core.hpp>

// Both foreign spaces run their kernels on Serial: a Kokkos without Serial (OpenMP alone, as
// many a Spack install or cluster module) has none. The emulated space (4.3+) also needs a
// default host execution space other than Serial (OpenMP, Threads): a Serial-only Kokkos 4.3+
// has no foreign space either. tests/CMakeLists.txt says so at configure time and builds no
// foreign executable there.
#if !defined(KOKKOS_ENABLE_SERIAL)
#define KBUF_TEST_HAVE_FOREIGN_SPACE 0
#define KBUF_TEST_EMULATED_FOREIGN_SPACE 0
#elif defined(KOKKOS_VERSION) && KOKKOS_VERSION < 40300
#define KBUF_TEST_HAVE_FOREIGN_SPACE 1
#define KBUF_TEST_EMULATED_FOREIGN_SPACE 0
#elif defined(KOKKOS_ENABLE_OPENMP) || defined(KOKKOS_ENABLE_THREADS)
#define KBUF_TEST_HAVE_FOREIGN_SPACE 1
#define KBUF_TEST_EMULATED_FOREIGN_SPACE 1
#else
#define KBUF_TEST_HAVE_FOREIGN_SPACE 0
#define KBUF_TEST_EMULATED_FOREIGN_SPACE 0
#endif

#if KBUF_TEST_EMULATED_FOREIGN_SPACE
#include "emulated_device_space.hpp"
#elif KBUF_TEST_HAVE_FOREIGN_SPACE
#include <Kokkos_LogicalSpaces.hpp>
#endif

#if KBUF_TEST_HAVE_FOREIGN_SPACE
namespace kbuf_test {

#if KBUF_TEST_EMULATED_FOREIGN_SPACE
/// Host memory the host may not dereference (see the top of this file and
/// emulated_device_space.hpp).
using foreign_space = EmulatedDeviceSpace;
#else
/// The foreign space's name, as Kokkos Tools and kbuf's messages see it.
struct ForeignSpaceNamer {
  static constexpr const char* get_name() { return "KbufForeignSpace"; }
};

/// Host memory the host may not dereference (see the top of this file).
using foreign_space = Kokkos::Experimental::LogicalMemorySpace<
    Kokkos::HostSpace, Kokkos::Serial, ForeignSpaceNamer,
    Kokkos::Experimental::LogicalSpaceSharesAccess::no_shared_access>;
#endif

static_assert(
    !Kokkos::SpaceAccessibility<Kokkos::DefaultHostExecutionSpace, foreign_space>::accessible,
    "the foreign space must not be accessible from the host");

}  // namespace kbuf_test

#if !KBUF_TEST_EMULATED_FOREIGN_SPACE
// Kokkos' copies into and out of a LogicalMemorySpace (Kokkos 3.x to 4.2) take their source as
// `void*`, so a deep_copy from a View of const data (a host tensor into the space, or a rank-0
// fill from a value) does not compile. These, for the foreign space alone, take `const void*`
// as every other space's copies do, and copy as Kokkos' own would: HostSpace to HostSpace. The
// one part of this file that touches Kokkos' internals (checked with Kokkos 3.4.01).
namespace kbuf_test {
namespace foreign_detail {
/// A copy between host memory and the foreign space, or within it: HostSpace's.
template <class ExecutionSpace>
struct CopyAsHost {
  CopyAsHost(void* dst, const void* src, size_t n) {
    Kokkos::Impl::DeepCopy<Kokkos::HostSpace, Kokkos::HostSpace, ExecutionSpace>(dst, src, n);
  }
  CopyAsHost(const ExecutionSpace& exec, void* dst, const void* src, size_t n) {
    Kokkos::Impl::DeepCopy<Kokkos::HostSpace, Kokkos::HostSpace, ExecutionSpace>(exec, dst, src, n);
  }
};
}  // namespace foreign_detail
}  // namespace kbuf_test

namespace Kokkos {
namespace Impl {
template <class ExecutionSpace>
struct DeepCopy<kbuf_test::foreign_space, Kokkos::HostSpace, ExecutionSpace>
    : kbuf_test::foreign_detail::CopyAsHost<ExecutionSpace> {
  using kbuf_test::foreign_detail::CopyAsHost<ExecutionSpace>::CopyAsHost;
};
template <class ExecutionSpace>
struct DeepCopy<Kokkos::HostSpace, kbuf_test::foreign_space, ExecutionSpace>
    : kbuf_test::foreign_detail::CopyAsHost<ExecutionSpace> {
  using kbuf_test::foreign_detail::CopyAsHost<ExecutionSpace>::CopyAsHost;
};
template <class ExecutionSpace>
struct DeepCopy<kbuf_test::foreign_space, kbuf_test::foreign_space, ExecutionSpace>
    : kbuf_test::foreign_detail::CopyAsHost<ExecutionSpace> {
  using kbuf_test::foreign_detail::CopyAsHost<ExecutionSpace>::CopyAsHost;
};
}  // namespace Impl
}  // namespace Kokkos
#endif  // !KBUF_TEST_EMULATED_FOREIGN_SPACE
#endif  // KBUF_TEST_HAVE_FOREIGN_SPACE

#include <kbuf/any_space.hpp>  // a space libkbuf does not hold the allocator for

#endif  // KBUF_TEST_FOREIGN_SPACE_HPP
