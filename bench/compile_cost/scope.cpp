// The same temporary as a library takes it: kbuf::temporary under a kbuf::scope of its owner.
#include <kbuf/current.hpp>

inline constexpr kbuf::owner library_owner{"library"};

double run(int n) {
  auto scope = kbuf::scope<Kokkos::HostSpace>(library_owner);
  auto t = kbuf::temporary<double*, Kokkos::LayoutRight, Kokkos::HostSpace>(library_owner, "t", n);
  Kokkos::deep_copy(t, 2.0);
  double sum = 0;
  Kokkos::parallel_reduce(
      "sum", n, KOKKOS_LAMBDA(int i, double& s) { s += t(i); }, sum);
  return sum;
}
