#ifndef KBUF_INSTANCE_ORDER_HPP
#define KBUF_INSTANCE_ORDER_HPP

/// @file
/// How kbuf orders a temporary's memory between the execution space instances that use it.
///
/// A temporary is used on one instance: the allocator's own unless `allocate(exec, ...)` or
/// `kbuf::temporary(exec, ...)` names another. When its memory is handed out again to a
/// temporary of another instance, the new instance's work must come after the old instance's
/// work submitted before the release. `kbuf::instance_order<ExecSpace>` says how, per type:
/// - `event`: what `record` returns: the point in the instance's order reached by the work
///   submitted to it so far;
/// - `key(exec)`: equal for two instances that execute in one order (one stream);
/// - `record(exec)`: an event of `exec` now (a CUDA/HIP event recorded on its stream; on a
///   backend without events, a fence of that one instance);
/// - `wait(exec, event)`: `exec`'s work submitted from now on comes after `event` (CUDA/HIP:
///   `cudaStreamWaitEvent`/`hipStreamWaitEvent`, no host block);
/// - `host_wait(event)`: the host waits for `event` (before memory is freed);
/// - `release(event)`: the event is no longer needed;
/// - `describe(exec)`: the instance in words, for messages;
/// - `fill(exec, p, n, byte)` and `count_other(exec, p, n, byte)`: the debug checks' fill of
///   released memory in `exec`'s order, and the count of bytes of [p, p + n) that are not
///   `byte` after `exec`'s work so far (debug builds only; these may block the host).
/// kbuf specializes it for `Kokkos::Cuda` and `Kokkos::HIP` (events) and gives every other
/// Kokkos execution space the default below: Serial, OpenMP and Threads run a kernel before its
/// call returns, so their instances are one order and need nothing; any other (HPX, SYCL,
/// OpenMPTarget) is fenced, that instance only, when a temporary used on it is released. A
/// program (or a test's model of an instance) may specialize it for a type of its own.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

#include <Kokkos_Core.hpp>

namespace kbuf {

namespace Impl {

/// Host execution spaces whose kernels end before their call returns.
template <class ExecSpace>
constexpr bool runs_synchronously() {
#if defined(KOKKOS_ENABLE_SERIAL)
  if (std::is_same<ExecSpace, Kokkos::Serial>::value) return true;
#endif
#if defined(KOKKOS_ENABLE_OPENMP)
  if (std::is_same<ExecSpace, Kokkos::OpenMP>::value) return true;
#endif
#if defined(KOKKOS_ENABLE_THREADS)
  if (std::is_same<ExecSpace, Kokkos::Threads>::value) return true;
#endif
  return false;
}

}  // namespace Impl

/// Whether `T` is an execution space instance a temporary can be given: a Kokkos execution
/// space, or a type of the program's that specializes this and `kbuf::instance_order`.
template <class T>
struct is_instance : std::integral_constant<bool, Kokkos::is_execution_space<T>::value> {};

/// The default: Kokkos execution spaces without events (see the file's description).
template <class ExecSpace, class = void>
struct instance_order {
  /// Nothing to keep: `record` fenced the instance.
  struct event {};
  /// Synchronous host spaces: one order (0). Others: the instance's id, with 1 added so that it
  /// is never 0.
  static std::uintptr_t key(const ExecSpace& exec) noexcept {
    if constexpr (Impl::runs_synchronously<ExecSpace>()) {
      (void)exec;
      return 0;
    } else {
      return static_cast<std::uintptr_t>(exec.impl_instance_id()) + 1;
    }
  }
  /// An event of `exec` now: fences `exec` unless it runs synchronously.
  static event record(const ExecSpace& exec) {
    if constexpr (!Impl::runs_synchronously<ExecSpace>()) {
#if KOKKOS_VERSION >= 30500
      exec.fence("kbuf: fence of the instance that used a released temporary");
#else
      exec.fence();
#endif
    } else {
      (void)exec;
    }
    return {};
  }
  /// Nothing: a recorded event is reached.
  static void wait(const ExecSpace&, const event&) noexcept {}
  /// Nothing: a recorded event is reached.
  static void host_wait(const event&) noexcept {}
  /// Nothing to release.
  static void release(event&) noexcept {}
  /// The space's name and the key.
  static std::string describe(const ExecSpace& exec) {
    return std::string(ExecSpace::name()) + " instance " + std::to_string(key(exec));
  }
  /// Sets [p, p + n) to `byte` in `exec`'s order.
  template <class MemorySpace>
  static void fill(const ExecSpace& exec, void* p, std::size_t n, unsigned char byte) {
    if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace, MemorySpace>::accessible &&
                  Impl::runs_synchronously<ExecSpace>()) {
      (void)exec;
      std::memset(p, byte, n);
    } else {
      Kokkos::View<unsigned char*, MemorySpace, Kokkos::MemoryUnmanaged> bytes(
          static_cast<unsigned char*>(p), n);
      Kokkos::deep_copy(exec, bytes, byte);
    }
  }
  /// The bytes of [p, p + n) that are not `byte`, after `exec`'s work so far (fences `exec`).
  template <class MemorySpace>
  static std::size_t count_other(const ExecSpace& exec, const void* p, std::size_t n,
                                 unsigned char byte) {
    if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace, MemorySpace>::accessible &&
                  Impl::runs_synchronously<ExecSpace>()) {
      (void)exec;
      const auto* b = static_cast<const unsigned char*>(p);
      std::size_t other = 0;
      for (std::size_t i = 0; i < n; ++i) other += b[i] != byte ? 1 : 0;
      return other;
    } else {
      Kokkos::View<const unsigned char*, MemorySpace, Kokkos::MemoryUnmanaged> bytes(
          static_cast<const unsigned char*>(p), n);
      std::size_t other = 0;
      Kokkos::parallel_reduce(
          "kbuf::instance_order::count_other",
          Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::size_t>>(exec, 0, n),
          KOKKOS_LAMBDA(std::size_t i, std::size_t & o) { o += bytes(i) != byte ? 1 : 0; }, other);
      exec.fence();
      return other;
    }
  }
};

}  // namespace kbuf

#if defined(KOKKOS_ENABLE_CUDA) || defined(KOKKOS_ENABLE_HIP)
#include <kbuf/impl/instance_order_device.hpp>
#endif

#endif  // KBUF_INSTANCE_ORDER_HPP
