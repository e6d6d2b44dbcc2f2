// Pass-through mode: every temporary its own allocation, so that AddressSanitizer (and valgrind,
// compute-sanitizer) see its bounds; the same API and results as the buffer. The death test at
// the end is meaningful under KBUF_SANITIZE=address (scripts/ci-reliability.sh asan).
#include <doctest/doctest.h>

#include "reliability_support.hpp"

#include <cstdlib>
#include <string>

using namespace kbuf_rel;
using namespace kbuf::literals;

namespace {

std::uintptr_t addr(const void* p) {
  return reinterpret_cast<std::uintptr_t>(p);
}

// A small workload: nested scopes, checkpoints, several types and layouts; returns a checksum
// of what it computed through its temporaries. Their contents travel through deep_copy and host
// mirrors, so it runs in a space the host may not touch too.
template <class A>
double workload(A& alloc) {
  double total = 0;
  for (int round = 0; round < 3; ++round) {
    auto s = alloc.scope();
    auto a = alloc.template allocate<double**>(17, 9);
    auto ha = Kokkos::create_mirror_view(a);
    for (int i = 0; i < 17; ++i) {
      for (int j = 0; j < 9; ++j) ha(i, j) = 0.5 * i - j + round;
    }
    Kokkos::deep_copy(a, ha);
    auto b = alloc.template allocate<float*, Kokkos::LayoutLeft>(33);
    auto hb = Kokkos::create_mirror_view(b);
    for (int i = 0; i < 33; ++i) hb(i) = static_cast<float>(i) * 0.25f;
    Kokkos::deep_copy(b, hb);
    const auto cp = alloc.checkpoint();
    auto c = alloc.template allocate<kbuf_test::Wide*>(3);  // over-aligned
    {
      const auto ra = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a);
      const auto rb = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), b);
      // Wide is over-aligned: its host copies need memory aligned for it (HostCopy).
      kbuf_test::HostCopy<decltype(c)> hc(c, false);
      for (int i = 0; i < 3; ++i) hc(i).v = ra(i, i) * rb(i);
      hc.copy_back();
    }
    const auto rc = kbuf_test::host_copy(c);
    double sum = rc(0).v + rc(1).v + rc(2).v;
    alloc.reset(cp);
    {
      auto inner = alloc.scope();
      auto d = alloc.template allocate<int* [3]>(11);
      auto hd = Kokkos::create_mirror_view(d);
      for (int i = 0; i < 11; ++i) {
        for (int k = 0; k < 3; ++k) hd(i, k) = i * k - round;
      }
      Kokkos::deep_copy(d, hd);
      const auto rd = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), d);
      const auto ra = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a);
      for (int i = 0; i < 11; ++i) sum += rd(i, 2) + ra(i % 17, i % 9);
    }
    total += sum;
  }
  return total;
}

}  // namespace

TEST_CASE("KBUF_PASSTHROUGH, read when an allocator is made, turns pass-through mode on and off") {
  {
    kbuf_test::ScopedEnv on("KBUF_PASSTHROUGH", "1");
    kbuf_test::Alloc alloc(4_KiB);
    CHECK(alloc.passthrough());
    CHECK(alloc.capacity() == 0);  // no buffer, whatever the size hint
    kbuf_test::ScopedEnv off("KBUF_PASSTHROUGH", "0");
    CHECK(alloc.passthrough());  // read once, when the allocator was made
    kbuf_test::Alloc other(4_KiB);
    CHECK(!other.passthrough());
    CHECK(other.capacity() == 4_KiB);
  }
  kbuf_test::ScopedEnv unset("KBUF_PASSTHROUGH", nullptr);
  kbuf_test::Alloc plain;
  CHECK(plain.passthrough() == (KBUF_PASSTHROUGH != 0));  // unset: the configured default
}

TEST_CASE("in pass-through mode every temporary is its own allocation, freed by its reset") {
  kbuf_test::ScopedEnv on("KBUF_PASSTHROUGH", "1");
  kbuf_test::Alloc alloc(64_KiB);
  auto a = alloc.allocate<double*>(8);
  auto b = alloc.allocate<double*>(8);
  CHECK(alloc.live_fallbacks() == 2);
  const std::size_t align = kbuf_test::Alloc::default_alignment;  // 64 on the host, else 256
  CHECK(alloc.alignment() == align);
  CHECK(addr(a.data()) % align == 0);
  CHECK(addr(b.data()) % align == 0);
  CHECK(addr(b.data()) != addr(a.data()) + align);  // not neighbours in one buffer
  CHECK(alloc.is_live(a));
  const auto cp = alloc.checkpoint();
  auto c = alloc.allocate<kbuf_test::Wide*>(2);  // over-aligned: 128
  CHECK(addr(c.data()) % 128 == 0);
  CHECK(addr(c.data()) % align == 0);
  CHECK(alloc.live_fallbacks() == 3);
  alloc.reset(cp);
  CHECK(alloc.live_fallbacks() == 2);
  CHECK(!alloc.is_live(c));
  auto z = alloc.allocate<double*>(0);  // zero-sized: no allocation
  CHECK(z.size() == 0);
  CHECK(alloc.live_fallbacks() == 2);
  alloc.reset();
  CHECK(alloc.empty());
  CHECK(alloc.live_fallbacks() == 0);
  CHECK(alloc.capacity() == 0);  // no regrowth, ever
  (void)alloc.allocate<double*>(8);
  CHECK(alloc.capacity() == 0);
  CHECK(alloc.statistics().regrows == 0);
  CHECK(alloc.statistics().fallbacks == 4);
  CHECK(alloc.high_water_mark() >= 64 + 64 + 256);
  alloc.reset();
  alloc.resize(1_MiB);  // keeps no buffer either
  CHECK(alloc.capacity() == 0);
}

TEST_CASE("pass-through mode computes the same results as the buffer") {
  kbuf_test::Alloc normal(1_KiB);  // small: fallbacks first, then a regrown buffer
  const double expected = workload(normal) + workload(normal);
  kbuf_test::ScopedEnv on("KBUF_PASSTHROUGH", "1");
  kbuf_test::Alloc pass(1_KiB);
  REQUIRE(pass.passthrough());
  const double got = workload(pass) + workload(pass);
  CHECK(got == expected);
  CHECK(pass.empty());
  CHECK(pass.statistics().temporaries == normal.statistics().temporaries +
                                             normal.statistics().fallbacks -
                                             pass.statistics().fallbacks);
  CHECK(pass.high_water_mark() == normal.high_water_mark());
}

TEST_CASE("pass-through mode respects the limit") {
  kbuf_test::ScopedEnv on("KBUF_PASSTHROUGH", "1");
  kbuf_test::Alloc alloc;
  alloc.limit(1_KiB);
  auto a = alloc.allocate<double*>(64);  // 512 bytes
  CHECK(alloc.held() == 512);
  CHECK_THROWS_AS((void)alloc.allocate<double*>(65), kbuf::out_of_memory);
  CHECK(alloc.live_fallbacks() == 1);
  (void)a;
}

#if KBUF_IMPL_ASAN

TEST_CASE("ASan: a one-element overflow into the next temporary is caught in pass-through mode") {
  // Two temporaries of 8 doubles: in the buffer the second starts where the first ends, so a
  // write one past the first lands in live memory and nothing can see it. In pass-through mode
  // each is its own allocation and ASan reports the write.
  const auto overflow = [](const char* mode, int index) {
    kbuf_test::ScopedEnv env("KBUF_PASSTHROUGH", mode);
    HostAlloc alloc(4_KiB);
    auto first = alloc.allocate<double*>(8);
    auto second = alloc.allocate<double*>(8);
    volatile double* p = first.data();
    p[index] = 1.0;
    std::printf("second(0) = %g\n", static_cast<double>(second(0)));
  };
  CHECK(run_in_child([&] { overflow("1", 7); }).survived());  // the last element: fine
  const ChildResult invisible = run_in_child([&] { overflow("0", 8); });
  CHECK(invisible.survived());  // the buffer hides it: the write hit the second temporary
  CHECK(invisible.says("second(0) = 1"));
  const ChildResult caught = run_in_child([&] { overflow("1", 8); });
  INFO(caught.output);
  CHECK(!caught.survived());
  CHECK(caught.says("ERROR: AddressSanitizer: heap-buffer-overflow"));
}

TEST_CASE(
    "ASan: in pass-through mode a temporary kept past the scope that served it is a reported "
    "use after free") {
  // A library object built in a scope (here the caller's, with a library that names no owner)
  // and kept. In the buffer its memory is handed out again; under ASan kbuf poisons what a
  // scope releases, so the later write is reported as use-after-poison. In pass-through mode the
  // temporary is freed when the scope ends, and ASan reports a heap-use-after-free.
  const auto keep = [](const char* mode) {
    kbuf_test::ScopedEnv env("KBUF_PASSTHROUGH", mode);
    HostAlloc alloc(4_KiB);
    kbuf::use<Kokkos::HostSpace> current(alloc);
    Kokkos::View<double*, Kokkos::HostSpace> kept;
    {
      auto scope = kbuf::scope<Kokkos::HostSpace>();
      kept = kbuf::temporary<double*, Kokkos::LayoutRight, Kokkos::HostSpace>("kept", 8);
    }
    volatile double* p = kept.data();
    p[0] = 1.0;
    std::printf("written after the scope\n");
  };
  const ChildResult poisoned = run_in_child([&] { keep("0"); });
  INFO(poisoned.output);
  CHECK(!poisoned.survived());
  CHECK(poisoned.says("ERROR: AddressSanitizer: use-after-poison"));
  const ChildResult caught = run_in_child([&] { keep("1"); });
  INFO(caught.output);
  CHECK(!caught.survived());
  CHECK(caught.says("ERROR: AddressSanitizer: heap-use-after-free"));
}

TEST_CASE("ASan: pass-through poisons the alignment slack of an over-aligned temporary") {
  kbuf_test::ScopedEnv on("KBUF_PASSTHROUGH", "1");
  HostAlloc alloc(0, 8);
  auto t = alloc.allocate<kbuf_test::Wide*>(1);  // 128-aligned from 64-aligned memory
  CHECK(__asan_region_is_poisoned(t.data(), sizeof(kbuf_test::Wide)) == nullptr);
  const unsigned char* end = reinterpret_cast<const unsigned char*>(t.data() + 1);
  CHECK(__asan_address_is_poisoned(end) != 0);
}

#endif
