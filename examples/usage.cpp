// The README's usage example; the build compiles and runs it, so the README cannot drift.
#include <kbuf/kbuf.hpp>

#include <cstdio>

// [usage]
// Device code lives in a functor (or a KOKKOS_LAMBDA outside test bodies) so nvcc accepts it.
struct Scale {
  kbuf::BufferAllocator<>::view<double**> out;
  kbuf::BufferAllocator<>::view<double**> in;
  KOKKOS_FUNCTION void operator()(int i, int j) const { out(i, j) = 2.0 * in(i, j); }
};

struct SumFlat {
  kbuf::BufferAllocator<>::view<double**> v;
  int n;
  KOKKOS_FUNCTION void operator()(int k, double& sum) const { sum += v(k / n, k % n); }
};

double sum_of_doubled(kbuf::BufferAllocator<>& alloc, int n) {
  auto scope = alloc.scope();                     // everything below is released at '}'
  auto a = alloc.allocate<double**>(n, n);        // uninitialised, aligned, no cudaMalloc
  auto b = alloc.allocate<double**>(n, n);
  Kokkos::deep_copy(a, 1.0);
  Kokkos::parallel_for("scale",
                       Kokkos::MDRangePolicy<kbuf::default_execution_space, Kokkos::Rank<2>>(
                           {0, 0}, {n, n}),
                       Scale{b, a});
  double sum = 0;
  Kokkos::parallel_reduce(
      "sum", Kokkos::RangePolicy<kbuf::default_execution_space>(0, n * n),
      SumFlat{b, n}, sum);
  return sum;
}
// [usage]

int main(int argc, char* argv[]) {
  Kokkos::ScopeGuard guard(argc, argv);
  int status = 0;
  {
    kbuf::BufferAllocator<> alloc;  // empty; grows to the high-water mark between rounds
    for (int round = 0; round < 3; ++round) {
      const double sum = sum_of_doubled(alloc, 100);
      const auto s = alloc.statistics();
      std::printf("round %d: sum %.0f, capacity %zu B, high-water mark %zu B, fallbacks %zu\n",
                  round, sum, alloc.capacity(), alloc.high_water_mark(), s.fallbacks);
      if (sum != 2.0 * 100 * 100 || !alloc.empty()) status = 1;
    }
    if (alloc.statistics().fallbacks != 2) status = 1;  // both in round 0, none after
  }
  return status;
}
