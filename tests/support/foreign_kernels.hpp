// The foreign space as a device: its own execution space's kernels may touch it, host code may
// not. Included by the applications' foreign build (kbuf_tensor, kbuf-demo, kbuf-tebd and their
// tests over kbuf_test::foreign_space, through KBUF_TENSOR_MEMORY_SPACE_HEADER), by the foreign
// build of kbuf-test-fits (the batched fits' kernels) and by the test of this file; nothing
// else includes it.
//
// On its own the foreign space (foreign_space.hpp) refuses every View access from host threads,
// kernels included: Kokkos' access check cannot tell a kernel from host code when both run on
// the host. The applications' contractions, however, are kernels (permutes, GEMM, fills) that
// must read and write their tensors, as CUDA kernels read CudaSpace. Here a View access to the
// foreign space is allowed while a kernel of the space's execution space (Kokkos::Serial) runs
// on the calling thread, and refused, with Kokkos' own message, anywhere else: in host code
// between kernels, and in kernels of another execution space (OpenMP, the default host space of
// the Kokkos 4 builds that have the emulated space). Kernels are seen through Kokkos Tools: the
// begin and end callbacks of parallel_for, parallel_reduce and parallel_scan, installed before
// main() and chained to by kbuf_test::ToolRecorder. A host dereference of a tensor or a
// temporary in the applications' host code (say, reading a result without copying it to a host
// mirror first) aborts with "attempt to access inaccessible memory space", as on a GPU it would
// read device memory from the host. What LAPACK needs on the host goes through host mirrors, as
// in CUDA and HIP builds.
//
// What touches Kokkos' internals here: the explicit specialisations of Kokkos' run-time access
// checks for the foreign space, which call kbuf_test::foreign_kernels::check():
// - Kokkos 3.4 to 3.6: Kokkos::Impl::verify_space<HostSpace, foreign_space, false>;
// - Kokkos 3.7 and later: Kokkos::Impl::RuntimeCheckMemoryAccessViolation and
//   RuntimeCheckViewMemoryAccessViolation for <foreign_space, DefaultHostExecutionSpace, false>,
//   and, where it exists (the mdspan-based View), RuntimeCheckBasicViewMemoryAccessViolation.
// Checked with Kokkos 3.4.01 (Serial), 4.6.01 (Serial and OpenMP) and develop of June 2025.
#ifndef KBUF_TEST_FOREIGN_KERNELS_HPP
#define KBUF_TEST_FOREIGN_KERNELS_HPP

#include <Kokkos_Core.hpp>

#include "foreign_space.hpp"

#include <cstdint>

#if !KBUF_TEST_HAVE_FOREIGN_SPACE
#error "foreign_kernels.hpp needs a Kokkos that provides the foreign space (foreign_space.hpp)"
#endif

namespace kbuf_test {
namespace foreign_kernels {

/// The execution space whose kernels may touch the foreign space.
using device_execution_space = foreign_space::execution_space;

/// The mark a kernel of the device execution space gets as its Kokkos Tools kernel id.
inline constexpr std::uint64_t device_kernel_mark = 0x6b62756664657669;  // "kbufdevi"

/// Kernels of the device execution space running on this thread (nested ones count too).
inline thread_local int running = 0;

/// Whether Kokkos' device id names the device execution space: its top 8 bits are the device
/// type in every Kokkos version this supports.
inline bool is_device_kernel(std::uint32_t device_id) {
  return (device_id >> 24) ==
         static_cast<std::uint32_t>(
             Kokkos::Tools::Experimental::DeviceTypeTraits<device_execution_space>::id);
}

inline void on_begin(const char*, const std::uint32_t device_id, std::uint64_t* kernel_id) {
  if (is_device_kernel(device_id)) {
    ++running;
    *kernel_id = device_kernel_mark;
  } else {
    *kernel_id = 0;
  }
}

inline void on_end(const std::uint64_t kernel_id) {
  if (kernel_id == device_kernel_mark) --running;
}

/// True while a kernel of the device execution space runs on this thread.
inline bool inside_device_kernel() {
  return running > 0;
}

/// Installs the kernel callbacks (before main(): see `installed`).
inline bool install() {
  using namespace Kokkos::Tools::Experimental;
  set_begin_parallel_for_callback(&on_begin);
  set_begin_parallel_reduce_callback(&on_begin);
  set_begin_parallel_scan_callback(&on_begin);
  set_end_parallel_for_callback(&on_end);
  set_end_parallel_reduce_callback(&on_end);
  set_end_parallel_scan_callback(&on_end);
  return true;
}

/// Initialised before main() in every program that includes this file.
inline const bool installed = install();

/// Kokkos' access check for the foreign space: passes inside a device kernel, else aborts with
/// Kokkos' message (`message`, when Kokkos passes one, else its usual words).
inline void check(const char* message = nullptr) {
  if (inside_device_kernel()) return;
  Kokkos::abort(message != nullptr && message[0] != '\0'
                    ? message
                    : "Kokkos::View ERROR: attempt to access inaccessible memory space "
                      "(kbuf_test::foreign_space outside a kernel of its execution space)");
}

}  // namespace foreign_kernels
}  // namespace kbuf_test

namespace Kokkos {
namespace Impl {

#if KOKKOS_VERSION < 30700
template <>
struct verify_space<Kokkos::HostSpace, kbuf_test::foreign_space, false> {
  static void check() { kbuf_test::foreign_kernels::check(); }
};
#else
template <>
struct RuntimeCheckMemoryAccessViolation<kbuf_test::foreign_space,
                                         Kokkos::DefaultHostExecutionSpace, false> {
  RuntimeCheckMemoryAccessViolation(char const* const msg) {
    kbuf_test::foreign_kernels::check(msg);
  }
};
template <>
struct RuntimeCheckViewMemoryAccessViolation<kbuf_test::foreign_space,
                                             Kokkos::DefaultHostExecutionSpace, false> {
  template <class Track, class Map>
  RuntimeCheckViewMemoryAccessViolation(char const* const msg, Track const&, Map const&) {
    kbuf_test::foreign_kernels::check(msg);
  }
};
#if KOKKOS_VERSION >= 40600
template <>
struct RuntimeCheckBasicViewMemoryAccessViolation<kbuf_test::foreign_space,
                                                  Kokkos::DefaultHostExecutionSpace, false> {
  RuntimeCheckBasicViewMemoryAccessViolation(SharedAllocationTracker const&) {
    kbuf_test::foreign_kernels::check();
  }
};
#endif
#endif

}  // namespace Impl
}  // namespace Kokkos

#endif  // KBUF_TEST_FOREIGN_KERNELS_HPP
