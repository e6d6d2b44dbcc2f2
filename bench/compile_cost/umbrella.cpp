// The allocator's translation unit through the umbrella header, as the README includes it:
// every feature's declarations (workspaces, pools, saved sizes, the drop-in) parsed too.
#include <kbuf/kbuf.hpp>

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
