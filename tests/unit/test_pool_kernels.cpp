// A reduced threaded contraction without Kokkos Kernels: host threads take their allocators from
// one kbuf::AllocatorPool and run, on kbuf temporaries of sizes that change every round, the
// kernels a pairwise contraction is made of (fill, permute, matrix product: RangePolicy
// parallel_for, as kbuf_tensor's permutes; the product stands in for Kokkos Kernels' GEMM,
// which cannot be dispatched from several threads on Kokkos 3.4's Serial), each round in a scope.
// ThreadSanitizer runs it (label threads), so the pool's and the allocators' paths meet real
// kernels from several threads at once; the results are checked against closed forms.
#include <doctest/doctest.h>

#include <kbuf/kbuf.hpp>

#include <atomic>
#include <cstddef>
#include <string>
#include <thread>
#include <vector>

namespace {

using Space = Kokkos::HostSpace;
using Exec = Space::execution_space;
using Pool = kbuf::AllocatorPool<Space>;
using Alloc = Pool::allocator_type;
using Matrix = Alloc::view<double**>;

// a(i, j) = i + 2 j + t (t: the thread), b(i, j) = i - j + 1.
struct FillA {
  Matrix a;
  double t;
  KOKKOS_INLINE_FUNCTION void operator()(const int i) const {
    for (int j = 0; j < int(a.extent(1)); ++j) a(i, j) = i + 2.0 * j + t;
  }
};
struct FillB {
  Matrix b;
  KOKKOS_INLINE_FUNCTION void operator()(const int i) const {
    for (int j = 0; j < int(b.extent(1)); ++j) b(i, j) = i - j + 1.0;
  }
};
// at(j, i) = a(i, j): the permute before a GEMM.
struct Transpose {
  Matrix a, at;
  KOKKOS_INLINE_FUNCTION void operator()(const int i) const {
    for (int j = 0; j < int(a.extent(1)); ++j) at(j, i) = a(i, j);
  }
};
// c(i, l) = sum_j at(j, i) b(j, l).
struct Product {
  Matrix at, b, c;
  KOKKOS_INLINE_FUNCTION void operator()(const int i) const {
    for (int l = 0; l < int(b.extent(1)); ++l) {
      double s = 0;
      for (int j = 0; j < int(b.extent(0)); ++j) s += at(j, i) * b(j, l);
      c(i, l) = s;
    }
  }
};

// sum_j (i + 2 j + t)(j - l + 1), j = 0..k-1, in closed form.
double expected(int i, int l, int k, double t) {
  const double s0 = k, s1 = k * (k - 1) / 2.0, s2 = (k - 1.0) * k * (2.0 * k - 1) / 6.0;
  const double u = i + t, w = 1.0 - l;
  return u * w * s0 + (u + 2.0 * w) * s1 + 2.0 * s2;
}

// One thread's rounds: how many products were wrong.
int run_thread(Pool& pool, const Exec& exec, int thread, int rounds) {
  int wrong = 0;
  for (int r = 0; r < rounds; ++r) {
    Alloc& alloc = pool.local();
    auto scope = alloc.scope();
    const int m = 3 + (r * 7 + thread) % 17, k = 2 + (r * 5) % 13, n = 1 + (r * 3 + thread) % 11;
    Matrix a = alloc.allocate<double**>(m, k);
    Matrix b = alloc.allocate<double**>(k, n);
    Matrix at = alloc.allocate<double**>(k, m);
    Matrix c = alloc.allocate<double**>(m, n);
    Kokkos::parallel_for("fill a", Kokkos::RangePolicy<Exec>(exec, 0, m), FillA{a, double(thread)});
    Kokkos::parallel_for("fill b", Kokkos::RangePolicy<Exec>(exec, 0, k), FillB{b});
    Kokkos::parallel_for("permute", Kokkos::RangePolicy<Exec>(exec, 0, m), Transpose{a, at});
    Kokkos::parallel_for("product", Kokkos::RangePolicy<Exec>(exec, 0, m), Product{at, b, c});
    exec.fence();
    for (int i = 0; i < m; ++i) {
      for (int l = 0; l < n; ++l) wrong += c(i, l) == expected(i, l, k, thread) ? 0 : 1;
    }
  }
  return wrong;
}

}  // namespace

TEST_CASE("threads contract on kbuf temporaries from one pool: every product is right") {
  // Only RangePolicy parallel_for: Kokkos 3.4's Serial backend shares its reduction and team
  // scratch between dispatches (so reductions, scans and team kernels such as Kokkos Kernels'
  // GEMM race when dispatched from several threads), but its range parallel_for touches no
  // shared state, so this runs on every version.
  const int nthreads = 4;
  Pool pool(0);  // empty: the first rounds fall back and regrow, later ones fit
  std::vector<int> wrong(nthreads, -1);
  std::atomic<int> started{0}, finished{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < nthreads; ++t) {
    threads.emplace_back([&, t] {
      // All threads live at once, from before the first local() to after the last kernel, so
      // that each has its own allocator and their kernels overlap.
      ++started;
      while (started.load() < nthreads) std::this_thread::yield();
      wrong[t] = run_thread(pool, Exec(), t, 60);
      ++finished;
      while (finished.load() < nthreads) std::this_thread::yield();
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < nthreads; ++t) {
    INFO("thread ", t);
    CHECK(wrong[t] == 0);
  }
  const kbuf::Statistics s = pool.statistics();
  CHECK(s.temporaries + s.fallbacks == std::size_t(nthreads) * 60 * 4);
  CHECK(pool.size() == std::size_t(nthreads));
}
