// The README's first lines, compiled and run: kbuf for one's own temporaries, and in a library
// that allocates inside its calls, with the application's one line. CTest runs it and checks
// that the README shows the parts between the markers verbatim. Exit status 0 when every
// temporary came from kbuf after the first round and the sums are right.
#include <kbuf/kbuf.hpp>

#include <cstddef>
#include <cstdio>

namespace {

using Space = kbuf::default_memory_space;
using Exec = kbuf::default_execution_space;

// The library's owner, once (docs/dropin.md).
constexpr kbuf::owner halo_owner{"halo"};

// The sum of a matrix's entries.
struct Sum {
  Kokkos::View<double**, Kokkos::LayoutRight, Space> v;
  KOKKOS_INLINE_FUNCTION void operator()(const std::size_t i, double& s) const {
    for (std::size_t j = 0; j < v.extent(1); ++j) s += v(i, j);
  }
};

// One call of a library: a send buffer for the call, filled and summed.
double library_call(std::size_t n, std::size_t m) {
  // [glance_library]
  auto scope = kbuf::scope<Space>(halo_owner);  // the library's own scope: released at '}'
  auto send =
      kbuf::temporary<double**, Kokkos::LayoutRight, Space>(halo_owner, "send_buffer", n, m);
  // [glance_library]
  Kokkos::deep_copy(send, 1.0);
  double sum = 0;
  Kokkos::parallel_reduce("sum", Kokkos::RangePolicy<Exec>(0, n), Sum{send}, sum);
  return sum;
}

// One's own temporaries: true when only the first round needed an allocation.
bool own_temporaries(std::size_t n, std::size_t m) {
  // [glance]
  kbuf::BufferAllocator<> alloc;  // one per thread (kbuf::AllocatorPool for many)
  for (int round = 0; round < 3; ++round) {
    auto scope = alloc.scope();               // every temporary below is released at '}'
    auto t = alloc.allocate<double**>(n, m);  // uninitialised; no allocation after round 0
    Kokkos::deep_copy(t, 2.0);
  }
  // [glance]
  return alloc.statistics().fallbacks == 1 && alloc.statistics().temporaries == 2;
}

}  // namespace

int main(int argc, char* argv[]) {
  Kokkos::ScopeGuard kokkos(argc, argv);
  const std::size_t n = 100, m = 3;
  bool ok = own_temporaries(n, m);
  // [glance_application]
  kbuf::use_process_allocators guard;  // in main, once: every memory space's process allocator
  // [glance_application]
  for (int round = 0; round < 3; ++round) ok = ok && library_call(n, m) == double(n * m);
  const kbuf::Statistics s = kbuf::process_allocator<Space>().statistics();
  std::printf("library: %zu buffers from kbuf, %zu fallbacks (the first round's)\n", s.temporaries,
              s.fallbacks);
  ok = ok && s.fallbacks == 1 && s.temporaries == 2;
  return ok ? 0 : 1;
}
