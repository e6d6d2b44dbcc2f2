// The hot path — allocate of a temporary that fits, and reset — does no heap allocation and no
// Kokkos allocation, fence or deallocation: it only constructs unmanaged Views. This executable
// replaces the global operator new to count heap allocations (counting_new.cpp), and uses Kokkos
// Tools callbacks to count Kokkos allocations and fences.
#include <doctest/doctest.h>

#include "counting_new.hpp"
#include "test_support.hpp"

#include <atomic>
#include <cstring>

namespace {
std::atomic<long> kokkos_allocations{0};
std::atomic<long> kokkos_deallocations{0};
std::atomic<long> kokkos_fences{0};
}  // namespace

namespace {
// Kokkos allocations only: with a tool loaded, kbuf also reports its temporaries, in spaces of
// their own ("kbuf:<label>"), which allocate nothing.
void on_allocate(Kokkos::Tools::SpaceHandle space, const char*, const void*, std::uint64_t) {
  if (std::strncmp(space.name, "kbuf:", 5) == 0) return;
  ++kokkos_allocations;
}
void on_deallocate(Kokkos::Tools::SpaceHandle space, const char*, const void*, std::uint64_t) {
  if (std::strncmp(space.name, "kbuf:", 5) == 0) return;
  ++kokkos_deallocations;
}
void on_fence(const char*, std::uint32_t, std::uint64_t*) {
  ++kokkos_fences;
}

struct Counts {
  long heap, alloc, dealloc, fences;
};
Counts counts() {
  return {kbuf_test::heap_allocations.load(), kokkos_allocations.load(),
          kokkos_deallocations.load(), kokkos_fences.load()};
}

using namespace kbuf_test;

// A round of a realistic workload: a scope, temporaries of mixed type, rank and layout.
void round(Alloc& alloc, int n) {
  auto s = alloc.scope();
  auto a = alloc.allocate<double**>(n, n);
  auto b = alloc.allocate<Kokkos::complex<double>***, Kokkos::LayoutLeft>(n, 2, 3);
  {
    auto inner = alloc.scope();
    for (int i = 0; i < 20; ++i) (void)alloc.allocate<float*>(n + i);
    const auto cp = alloc.checkpoint();
    (void)alloc.allocate<Pod12* [3]>(n);
    alloc.reset(cp);
  }
  (void)alloc.allocate<Wide*>(n);
  (void)a, (void)b;
}
}  // namespace

TEST_CASE("after warm-up, allocate and reset do no heap or Kokkos allocation and no fence") {
  Kokkos::Tools::Experimental::set_allocate_data_callback(on_allocate);
  Kokkos::Tools::Experimental::set_deallocate_data_callback(on_deallocate);
  Kokkos::Tools::Experimental::set_begin_fence_callback(on_fence);
  {
    Alloc alloc;
    round(alloc, 40);  // warm-up: fallbacks, then the buffer grows at the next round's start
    round(alloc, 40);
    const Counts before = counts();
    const auto stats_before = alloc.statistics();
    for (int i = 0; i < 1000; ++i) round(alloc, 40);
    const Counts after = counts();
    CHECK(alloc.statistics().temporaries - stats_before.temporaries == 1000 * 24);
    CHECK(alloc.statistics().fallbacks == stats_before.fallbacks);
    CHECK(after.heap == before.heap);
    CHECK(after.alloc == before.alloc);
    CHECK(after.dealloc == before.dealloc);
    CHECK(after.fences == before.fences);
  }
  Kokkos::Tools::Experimental::set_allocate_data_callback(nullptr);
  Kokkos::Tools::Experimental::set_deallocate_data_callback(nullptr);
  Kokkos::Tools::Experimental::set_begin_fence_callback(nullptr);
}

TEST_CASE("the counters above do see allocations, so the hot-path test can fail") {
  Kokkos::Tools::Experimental::set_allocate_data_callback(on_allocate);
  const Counts before = counts();
  {
    Alloc alloc;
    (void)alloc.allocate<double*>(100);  // a fallback: one Kokkos allocation, one heap record
  }
  const Counts after = counts();
  CHECK(after.alloc == before.alloc + 1);
  CHECK(after.heap > before.heap);
  Kokkos::Tools::Experimental::set_allocate_data_callback(nullptr);
}
