// The same temporary from a kbuf::BufferAllocator (an application's own allocator).
#include <kbuf/buffer_allocator.hpp>

double run(int n) {
  kbuf::BufferAllocator<Kokkos::HostSpace> alloc;
  auto scope = alloc.scope();
  auto t = alloc.allocate<double*>(n);
  Kokkos::deep_copy(t, 2.0);
  double sum = 0;
  Kokkos::parallel_reduce(
      "sum", n, KOKKOS_LAMBDA(int i, double& s) { s += t(i); }, sum);
  return sum;
}
