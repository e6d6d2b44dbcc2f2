// The README's usage example. The build compiles it and CTest runs it; a test checks that the
// README shows the part between the [usage] markers verbatim, so the two cannot drift apart.
#include <kbuf/kbuf.hpp>

#include <cstdio>

using Alloc = kbuf::BufferAllocator<>;  // in kbuf::default_memory_space
using Exec = kbuf::default_execution_space;

// Device code lives in functors (or KOKKOS_LAMBDAs outside class and test bodies).
struct Axpy {
  Alloc::view<double*> y, x;
  double a;
  KOKKOS_FUNCTION void operator()(int i) const { y(i) += a * x(i); }
};
struct Sum {
  Alloc::view<double*> y;
  KOKKOS_FUNCTION void operator()(int i, double& s) const { s += y(i); }
};

// [usage]
double step(Alloc& alloc, int n) {
  auto scope = alloc.scope();           // every temporary below is released at '}'
  auto x = alloc.allocate<double*>(n);  // uninitialised, aligned, no cudaMalloc
  auto y = alloc.allocate<double*>(n);  // a Kokkos::View<double*, LayoutRight, Space, Unmanaged>
  Kokkos::deep_copy(x, 1.0);
  Kokkos::deep_copy(y, 2.0);
  Kokkos::parallel_for("axpy", Kokkos::RangePolicy<Exec>(0, n), Axpy{y, x, 3.0});
  double sum = 0;
  Kokkos::parallel_reduce("sum", Kokkos::RangePolicy<Exec>(0, n), Sum{y}, sum);
  return sum;
}

int main(int argc, char* argv[]) {
  Kokkos::ScopeGuard guard(argc, argv);
  bool ok = true;
  {
    Alloc alloc;  // empty: the first round falls back, then it grows to what that round needed
    for (int round = 0; round < 3; ++round) {
      const double sum = step(alloc, 1000);
      std::printf("round %d: sum %g, capacity %zu B, fallbacks so far %zu\n", round, sum,
                  alloc.capacity(), alloc.statistics().fallbacks);
      ok = ok && sum == 5000.0 && alloc.empty();
    }
    ok = ok && alloc.statistics().fallbacks == 2;  // both in round 0, none after
    // allocators must end before Kokkos::finalize, hence this block
  }
  return ok ? 0 : 1;
}
// [usage]
