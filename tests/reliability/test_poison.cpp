// AddressSanitizer poisoning of released buffer memory (host-accessible spaces, ASan builds):
// what is not handed out is poisoned, what is handed out is not, the buffer is unpoisoned
// before Kokkos frees it, and a read through a temporary after its release is reported.
#include <doctest/doctest.h>

#include "reliability_support.hpp"

#include <string>

using namespace kbuf_rel;
using namespace kbuf::literals;

#if KBUF_IMPL_ASAN

namespace {

bool poisoned(const void* p) {
  return __asan_address_is_poisoned(p) != 0;
}
bool addressable(const void* p, std::size_t n) {
  return __asan_region_is_poisoned(const_cast<void*>(p), n) == nullptr;
}
const unsigned char* base_of(const HostAlloc& alloc) {
  return alloc.buffer().data();
}

// Reads one element through a view; volatile so the read is not optimised away.
template <class View>
double read_first(const View& v) {
  const volatile double* p = v.data();
  return p[0];
}

}  // namespace

TEST_CASE("poisoning is compiled in under AddressSanitizer") {
  CHECK(kbuf::asan_poisoning_enabled);
}

TEST_CASE("a new buffer is poisoned until temporaries are handed out") {
  HostAlloc alloc(4_KiB);
  REQUIRE(alloc.capacity() == 4_KiB);
  CHECK(poisoned(base_of(alloc)));
  CHECK(poisoned(base_of(alloc) + alloc.capacity() - 1));
  CHECK(__asan_region_is_poisoned(const_cast<unsigned char*>(base_of(alloc)), alloc.capacity()) ==
        base_of(alloc));
}

TEST_CASE("a temporary is addressable, and its padding and the unused tail stay poisoned") {
  HostAlloc alloc(4_KiB);
  auto a = alloc.allocate<double*>(3);  // 24 bytes, then padding to the next 64
  auto b = alloc.allocate<double*>(5);
  CHECK(addressable(a.data(), 24));
  CHECK(addressable(b.data(), 40));
  CHECK(poisoned(base_of(alloc) + 24));  // padding after a
  CHECK(poisoned(base_of(alloc) + 63));
  CHECK(poisoned(base_of(alloc) + 64 + 40));  // the tail after b
  CHECK(poisoned(base_of(alloc) + alloc.capacity() - 1));
}

TEST_CASE("reset to a checkpoint poisons exactly what it releases") {
  HostAlloc alloc(4_KiB);
  auto a = alloc.allocate<double*>(8);
  const auto cp = alloc.checkpoint();
  auto b = alloc.allocate<double*>(8);
  auto c = alloc.allocate<double*>(8);
  alloc.reset(cp);
  CHECK(addressable(a.data(), 64));
  CHECK(poisoned(b.data()));
  CHECK(poisoned(b.data() + 7));
  CHECK(poisoned(c.data()));
  CHECK(poisoned(c.data() + 7));
}

TEST_CASE("reset() poisons everything and memory handed out again is addressable") {
  HostAlloc alloc(4_KiB);
  auto a = alloc.allocate<double*>(100);
  alloc.reset();
  CHECK(poisoned(a.data()));
  CHECK(poisoned(a.data() + 99));
  auto again = alloc.allocate<double*>(100);
  REQUIRE(again.data() == a.data());
  CHECK(addressable(again.data(), 800));
  for (int i = 0; i < 100; ++i) again(i) = i;  // no report
  CHECK(again(99) == 99.0);
}

TEST_CASE("a scope's end poisons its temporaries") {
  HostAlloc alloc(4_KiB);
  HostAlloc::view<double*> escaped;
  {
    auto s = alloc.scope();
    escaped = alloc.allocate<double*>(16);
    CHECK(addressable(escaped.data(), 128));
  }
  CHECK(poisoned(escaped.data()));
}

TEST_CASE("regrowth and resize poison the new buffer except what is handed out") {
  HostAlloc alloc(256);
  auto small = alloc.allocate<double*>(8);
  auto fallback = alloc.allocate<double*>(100);  // does not fit: a fallback, addressable
  CHECK(addressable(fallback.data(), 800));
  CHECK(poisoned(base_of(alloc) + 64));
  (void)small;
  alloc.reset();
  auto grown = alloc.allocate<double*>(10);  // regrows to the high-water mark first
  CHECK(alloc.statistics().regrows == 1);
  CHECK(addressable(grown.data(), 80));
  CHECK(poisoned(base_of(alloc) + 80));
  CHECK(poisoned(base_of(alloc) + alloc.capacity() - 1));
  alloc.reset();
  alloc.resize(64_KiB);
  CHECK(poisoned(base_of(alloc)));
  CHECK(poisoned(base_of(alloc) + alloc.capacity() - 1));
  auto after = alloc.allocate<float*>(3);
  CHECK(addressable(after.data(), 12));
}

TEST_CASE("an over-aligned temporary leaves its leading padding poisoned") {
  HostAlloc alloc(4_KiB, 8);
  auto a = alloc.allocate<char*>(8);
  auto w = alloc.allocate<kbuf_test::Wide*>(2);  // aligned to 128
  CHECK(addressable(a.data(), 8));
  CHECK(addressable(w.data(), 2 * sizeof(kbuf_test::Wide)));
  CHECK(poisoned(base_of(alloc) + 8));
  CHECK(poisoned(reinterpret_cast<const unsigned char*>(w.data()) - 1));
}

TEST_CASE("the buffer is unpoisoned before Kokkos frees it (regrowth, resize, destruction)") {
  // Memory the allocator returns poisoned would make the next user of the same addresses see
  // false reports (and a device-host allocator that recycles memory itself never clears it).
  struct Seen {
    const unsigned char* base = nullptr;
    std::size_t capacity = 0;
    int frees = 0;
    int poisoned_frees = 0;
  } seen;
  DeallocationWatcher watcher([&](const std::string& label, const void*, std::uint64_t) {
    if (label.find("kbuf") == std::string::npos || seen.base == nullptr) return;
    ++seen.frees;
    if (__asan_region_is_poisoned(const_cast<unsigned char*>(seen.base), seen.capacity) !=
        nullptr) {
      ++seen.poisoned_frees;
    }
  });
  {
    HostAlloc alloc(Kokkos::DefaultHostExecutionSpace(), 1_KiB, 64, "kbuf-poison-test");
    auto keep = alloc.allocate<double*>(4);  // live when the allocator dies
    (void)keep;
    alloc.reset();
    seen.base = base_of(alloc);
    seen.capacity = alloc.capacity();
    alloc.resize(8_KiB);  // frees the 1 KiB buffer
    seen.base = base_of(alloc);
    seen.capacity = alloc.capacity();
    alloc.sizehint(64_KiB);
    auto t = alloc.allocate<double*>(2);  // regrowth frees the 8 KiB buffer
    seen.base = base_of(alloc);
    seen.capacity = alloc.capacity();
    (void)t;
  }  // destruction frees the 64 KiB buffer with a live temporary and a poisoned tail
  CHECK(seen.frees >= 3);
  CHECK(seen.poisoned_frees == 0);
}

TEST_CASE("reading a temporary after its scope ended is reported as use-after-poison") {
  const auto stale_read = [](bool after_scope) {
    HostAlloc alloc(4_KiB);
    HostAlloc::view<double*> escaped;
    double sum = 0;
    {
      auto s = alloc.scope();
      escaped = alloc.allocate<double*>(16);
      for (int i = 0; i < 16; ++i) escaped(i) = i;
      if (!after_scope) sum += read_first(escaped);
    }
    if (after_scope) sum += read_first(escaped);
    std::printf("read %g\n", sum);
  };
  const ChildResult control = run_in_child([&] { stale_read(false); });
  CHECK(control.survived());
  const ChildResult dead = run_in_child([&] { stale_read(true); });
  CHECK(!dead.survived());
  CHECK(dead.says("ERROR: AddressSanitizer: use-after-poison"));
  INFO(dead.output);
}

TEST_CASE("writing past the end of the newest temporary is reported as use-after-poison") {
  const auto overflow = [](int n) {
    HostAlloc alloc(4_KiB);
    auto t = alloc.allocate<double*>(16);
    volatile double* p = t.data();
    p[n] = 1.0;
  };
  CHECK(run_in_child([&] { overflow(15); }).survived());
  const ChildResult dead = run_in_child([&] { overflow(16); });
  CHECK(!dead.survived());
  CHECK(dead.says("use-after-poison"));
}

TEST_CASE("reading a released fallback is reported as heap-use-after-free") {
  const auto stale_fallback = [](bool after_reset) {
    HostAlloc alloc(256);
    const auto cp = alloc.checkpoint();
    auto big = alloc.allocate<double*>(1000);  // a fallback
    big(0) = 1.0;
    if (after_reset) alloc.reset(cp);
    std::printf("read %g\n", read_first(big));
  };
  CHECK(run_in_child([&] { stale_fallback(false); }).survived());
  const ChildResult dead = run_in_child([&] { stale_fallback(true); });
  CHECK(!dead.survived());
  CHECK(dead.says("heap-use-after-free"));
}

#else  // !KBUF_IMPL_ASAN

#include <cstring>

TEST_CASE("without AddressSanitizer released memory is neither poisoned nor, in release, touched") {
  CHECK(!kbuf::asan_poisoning_enabled);
  HostAlloc alloc(4_KiB);
  const auto cp = alloc.checkpoint();
  auto t = alloc.allocate<double*>(4);
  t(0) = 2.0;
  alloc.reset(cp);
  double v = 0;
  std::memcpy(&v, t.data(), sizeof v);  // released, still inside the buffer
  if (kbuf::debug_checks_enabled) {
    CHECK(v != v);  // the debug fill: NaN
  } else {
    CHECK(v == 2.0);
  }
}

#endif
