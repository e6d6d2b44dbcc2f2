#ifndef KBUF_TENSOR_INSTANCES_HPP
#define KBUF_TENSOR_INSTANCES_HPP

/// @file
/// Execution space instances for workloads that run on several host threads at once (kbuf-demo
/// and kbuf-tebd with `--threads`): which instance each thread submits to, and whether kernels
/// may be dispatched from several threads at all.

#include <cstddef>
#include <type_traits>
#include <vector>

#include <Kokkos_Core.hpp>

namespace kbuf_tensor {

/// True where kernels dispatched from several host threads at once race: Kokkos before 3.5
/// keeps one scratch buffer for every Serial kernel (reductions and team kernels among them),
/// used without a lock. Such programs run one thread.
template <class ExecSpace>
constexpr bool serial_kernels_race =
#if KOKKOS_VERSION < 30500 && defined(KOKKOS_ENABLE_SERIAL)
    std::is_same<ExecSpace, Kokkos::Serial>::value;
#else
    false;
#endif

/// The instances of `nthreads` threads: thread t submits to element t. Distinct ones from
/// `partition_space` on Kokkos >= 4.2 (`partitioned` is then true), except where an OpenMP
/// instance would get no OpenMP thread of its own (partition_space aborts there); otherwise
/// the default instance for every thread.
template <class ExecSpace>
std::vector<ExecSpace> thread_instances(std::size_t nthreads, bool& partitioned) {
  partitioned = false;
#if KOKKOS_VERSION >= 40200
  bool can = nthreads > 1;
#if defined(KOKKOS_ENABLE_OPENMP)
  if (std::is_same<ExecSpace, Kokkos::OpenMP>::value &&
      static_cast<std::size_t>(ExecSpace().concurrency()) < nthreads) {
    can = false;
  }
#endif
  if (can) {
    partitioned = true;
    return Kokkos::Experimental::partition_space(ExecSpace(), std::vector<int>(nthreads, 1));
  }
#endif
  return std::vector<ExecSpace>(nthreads, ExecSpace());
}

}  // namespace kbuf_tensor

#endif  // KBUF_TENSOR_INSTANCES_HPP
