// The baseline: one temporary as a managed View, filled and summed.
#include <Kokkos_Core.hpp>

double run(int n) {
  Kokkos::View<double*> t(Kokkos::view_alloc("t", Kokkos::WithoutInitializing), n);
  Kokkos::deep_copy(t, 2.0);
  double sum = 0;
  Kokkos::parallel_reduce(
      "sum", n, KOKKOS_LAMBDA(int i, double& s) { s += t(i); }, sum);
  return sum;
}
