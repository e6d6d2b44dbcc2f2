// With debug checks, a kbuf::mpi::RequestGuard left with requests pending stops the program
// with a message naming the allocator and the pending count (CTest expects that message:
// mpi.request_guard_debug_abort). Without debug checks it waits instead (test_request_guard.cpp).
#include <kbuf/kbuf.hpp>
#include <kbuf/mpi.hpp>

#include <cstdio>

#if !KBUF_ENABLE_DEBUG
#error "guard_abort.cpp tests the debug-mode guard: build it with KBUF_ENABLE_DEBUG=1"
#endif

namespace {

using Space = Kokkos::HostSpace;

// Posts two receives that nothing will match and returns without waiting: a path that skips
// the wait (in an application, an early return or an exception).
void exchange_with_an_early_return(kbuf::BufferAllocator<Space>& alloc) {
  kbuf::mpi::RequestGuard<Space> guard(alloc);
  auto left = guard.allocate<double*>(16);
  auto right = guard.allocate<double*>(16);
  guard.irecv(left, 0, 1, MPI_COMM_SELF);
  guard.irecv(right, 0, 2, MPI_COMM_SELF);
  std::printf("returning with %zu requests pending\n", guard.pending());
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  {
    Kokkos::ScopeGuard kokkos(argc, argv);
    kbuf::BufferAllocator<Space> alloc(Space::execution_space(), 1 << 12,
                                       kbuf::BufferAllocator<Space>::default_alignment, "halo");
    exchange_with_an_early_return(alloc);
    std::printf("not reached: the guard should have stopped the program\n");
  }
  MPI_Finalize();
  return 0;
}
