// The README's example for temporaries used on another execution space instance; the build
// compiles and runs it, so the README cannot drift.
//
// An allocator orders reuse only for its own instance (the one it was constructed with): a
// temporary released by a reset is handed out again at once, and only work on that instance is
// sure to have finished with it (stream order). Work on any other instance is the caller's to
// order, both ways: the other instance must not read before the data is written, and the memory
// must not be handed out again before the other instance is done with it.
#include <kbuf/kbuf.hpp>

#include <cstdio>
#include <type_traits>
#include <vector>

using exec_space = kbuf::default_execution_space;
using Alloc = kbuf::BufferAllocator<>;

struct Iota {
  Alloc::view<double*> v;
  KOKKOS_FUNCTION void operator()(const int i) const { v(i) = static_cast<double>(i); }
};

struct Scale {
  Kokkos::View<double*, kbuf::default_memory_space> out;
  Alloc::view<double*> in;
  double factor;
  KOKKOS_FUNCTION void operator()(const int i) const { out(i) = factor * in(i); }
};

// [other_instance]
// `alloc` is bound to one instance, `other` is a second one (another stream on a GPU).
void scale_on_other(Alloc& alloc, const exec_space& other,
                    const Kokkos::View<double*, kbuf::default_memory_space>& out, double factor) {
  const int n = static_cast<int>(out.extent(0));
  const exec_space& own = alloc.execution_space_instance();
  const auto cp = alloc.checkpoint();
  auto tmp = alloc.allocate<double*>(n);  // uninitialised; no allocation, no fence
  Kokkos::parallel_for("iota", Kokkos::RangePolicy<exec_space>(own, 0, n), Iota{tmp});
  own.fence();  // 1. `other` must not read `tmp` before `own` has written it
  Kokkos::parallel_for("scale", Kokkos::RangePolicy<exec_space>(other, 0, n),
                       Scale{out, tmp, factor});
  // 2. Release with reset(cp, other): it fences `other` before `tmp`'s bytes are handed out
  //    again. A plain reset(cp), or a Scope ending here, would let the next temporary (written
  //    on `own`) overwrite memory that `other` may still be reading.
  alloc.reset(cp, other);
}
// [other_instance]

int main(int argc, char* argv[]) {
  Kokkos::ScopeGuard guard(argc, argv);
  int status = 0;
  {
#if KOKKOS_VERSION >= 40000
    // An OpenMP instance needs an OpenMP thread of its own: partition_space aborts otherwise.
    bool split = true;
#if defined(KOKKOS_ENABLE_OPENMP)
    split = !std::is_same<exec_space, Kokkos::OpenMP>::value || exec_space().concurrency() >= 2;
#endif
    if (!split) std::printf("one OpenMP thread: `own` and `other` are the default instance\n");
    std::vector<exec_space> instances{exec_space(), exec_space()};
    if (split) {
      const auto parts = Kokkos::Experimental::partition_space(exec_space(), 1, 1);
      instances.assign(parts.begin(), parts.end());  // a std::array on newer Kokkos
    }
    const exec_space own = instances[0];
    const exec_space other = instances[1];
#else
    const exec_space own;    // Kokkos 3.x cannot make a second instance of every backend:
    const exec_space other;  // the example runs with one, and stays correct with two
#endif
    Alloc alloc(own, 0, Alloc::default_alignment, "kbuf-example");
    const int n = 1000;
    Kokkos::View<double*, kbuf::default_memory_space> out("out", n);
    for (int round = 0; round < 3; ++round) {
      scale_on_other(alloc, other, out, round + 1.0);
      auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), out);
      for (int i = 0; i < n; ++i) {
        if (host(i) != (round + 1.0) * i) status = 1;
      }
      std::printf("round %d: out(%d) = %.0f, fallbacks %zu, fences of the own instance %zu\n",
                  round, n - 1, host(n - 1), alloc.statistics().fallbacks,
                  alloc.statistics().fences);
    }
    if (!alloc.empty() || alloc.statistics().fallbacks != 1) status = 1;
  }
  return status;
}
