// Many host threads: kbuf::AllocatorPool (one allocator per thread), and the per-instance
// pattern (one allocator bound to each execution space instance, each instance driven from its
// own host thread). The build runs it (example.instances_threads, also under ThreadSanitizer)
// and checks that the README shows the parts between the markers verbatim.
#include <kbuf/kbuf.hpp>

#include <cstdio>
#include <memory>
#include <thread>
#include <type_traits>
#include <vector>

using Exec = Kokkos::DefaultHostExecutionSpace;
using Alloc = kbuf::BufferAllocator<Exec::memory_space>;

struct Fill {
  Alloc::view<double*> v;
  double x;
  KOKKOS_INLINE_FUNCTION void operator()(int i) const { v(i) = x + i; }
};
struct Sum {
  Alloc::view<double*> v;
  KOKKOS_INLINE_FUNCTION void operator()(int i, double& s) const { s += v(i); }
};

// Work of one thread: temporaries from `alloc`, kernels on `exec`. Returns a checksum.
double work(Alloc& alloc, const Exec& exec, int thread) {
  double total = 0;
  for (int round = 0; round < 50; ++round) {
    auto scope = alloc.scope();  // releases the round's temporaries
    auto tmp = alloc.allocate<double*>(1000);
    Kokkos::parallel_for(Kokkos::RangePolicy<Exec>(exec, 0, 1000), Fill{tmp, double(thread)});
    double s = 0;
    Kokkos::parallel_reduce(Kokkos::RangePolicy<Exec>(exec, 0, 1000), Sum{tmp}, s);  // fences exec
    total += s;
  }
  return total;
}

int main(int argc, char** argv) {
  Kokkos::ScopeGuard guard(argc, argv);
  int failures = 0;
  const auto expect = [&](double got, int thread, const char* what) {
    const double want = 50.0 * (1000.0 * thread + 999.0 * 1000.0 / 2);
    if (got != want) {
      std::printf("%s: thread %d got %g, expected %g\n", what, thread, got, want);
      ++failures;
    }
  };
  {
    // [pool]
    // Plain host threads (a task pool, std::thread): each takes its own allocator from one pool.
    // Dispatching kernels from several threads needs Kokkos >= 3.5 (see below); this part only
    // touches host memory directly.
    kbuf::AllocatorPool<Kokkos::HostSpace> pool(1 << 16);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&pool] {
        for (int round = 0; round < 100; ++round) {
          auto& alloc = pool.local();  // this thread's own: no lock after its first call
          auto scope = alloc.scope();
          auto a = alloc.allocate<double**>(16, 16);
          for (int i = 0; i < 16; ++i) a(i, i) = 1.0;
        }
      });
    }
    for (auto& t : threads) t.join();
    const kbuf::Statistics s = pool.statistics();  // any thread, any time; exact after the joins
    std::printf("pool: %zu allocators, %zu temporaries, %zu fallbacks\n", pool.size(),
                s.temporaries, s.fallbacks);
    // [pool]
    if (s.temporaries + s.fallbacks != 400 || pool.size() > 4) ++failures;
  }
  {
    // [instances_threads]
    // One allocator per execution space instance, each instance driven from its own thread.
    // Kokkos >= 4.2 makes distinct host instances (partition_space; Serial since 4.2, OpenMP
    // instances each with their own threads, so only with two OpenMP threads or more), and a
    // kernel dispatched to an instance waits for that instance's earlier kernels. Kokkos 3.4's
    // Serial has one instance, and kernels dispatched from several threads at once may race
    // (fixed in 3.5): one thread there.
    std::vector<Exec> instances{Exec()};
#if KOKKOS_VERSION >= 40200
    bool split = true;  // partition_space aborts where an OpenMP instance would get no thread
#if defined(KOKKOS_ENABLE_OPENMP)
    split = !std::is_same<Exec, Kokkos::OpenMP>::value || Exec().concurrency() >= 2;
#endif
    if (split) instances = Kokkos::Experimental::partition_space(Exec(), std::vector<int>{1, 1});
#endif
    std::vector<std::unique_ptr<Alloc>> allocs;  // allocator i is bound to instance i
    for (const Exec& exec : instances) allocs.push_back(std::make_unique<Alloc>(exec, 1 << 16));
    std::vector<double> sums(instances.size());
    std::vector<std::thread> threads;
    for (std::size_t i = 0; i < instances.size(); ++i) {
      threads.emplace_back([&, i] { sums[i] = work(*allocs[i], instances[i], int(i)); });
    }
    for (auto& t : threads) t.join();
    std::printf("%zu instance(s) of %s, one thread each\n", instances.size(), Exec::name());
    // [instances_threads]
    for (std::size_t i = 0; i < instances.size(); ++i) expect(sums[i], int(i), "instances");
  }
  return failures == 0 ? 0 : 1;
}
