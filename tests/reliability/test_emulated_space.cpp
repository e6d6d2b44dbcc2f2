// The emulated device space (support/emulated_device_space.hpp), the foreign space from Kokkos
// 4.3 on: it places View data as CudaSpace does, 128 bytes past a 256-byte boundary, and kbuf
// still hands out a buffer and temporaries on 256-byte boundaries, each buffer in one allocation
// with its slack; memory it frees holds a pattern, is poisoned under ASan, and a deep_copy
// that reaches it, or a host read under ASan, kills the process.
#include <doctest/doctest.h>

#include "reliability_support.hpp"

#include <cstddef>
#include <cstdint>
#include <type_traits>

using namespace kbuf_rel;
using namespace kbuf::literals;
using kbuf_test::address;
using kbuf_test::Alloc;
using kbuf_test::space;

static_assert(std::is_same<space, kbuf_test::EmulatedDeviceSpace>::value,
              "these tests run over the emulated device space");

TEST_CASE("the emulated space allocates on 256-byte boundaries, so View data sits 128 past one") {
  const space s;
  void* raw = s.allocate("raw", 1000);
  CHECK(address(raw) % 256 == 0);
  s.deallocate("raw", raw, 1000);

  for (std::size_t n : {1, 100, 1000, 4096, 100000}) {
    CAPTURE(n);
    const Kokkos::View<unsigned char*, space> v(
        Kokkos::view_alloc(Kokkos::WithoutInitializing, "v"), n);
    CHECK(address(v.data()) % 256 == 128);
    void* m = Kokkos::kokkos_malloc<space>("m", n);
    CHECK(address(m) % 256 == 128);
    Kokkos::kokkos_free<space>(m);
  }
}

TEST_CASE("kbuf's buffer and temporaries in the emulated space start on 256-byte boundaries") {
  for (std::size_t capacity : {std::size_t{512}, std::size_t{3000}, std::size_t{64_KiB}}) {
    CAPTURE(capacity);
    Alloc alloc(capacity);
    REQUIRE(alloc.alignment() == 256);
    CHECK(address(alloc.buffer().data()) % 256 == 0);
    // The space puts the data 128 bytes off: the slack kbuf takes with every buffer keeps the
    // aligned buffer inside what the space allocated.
    CHECK(kbuf_test::emulated_space_live(alloc.buffer().data(), alloc.capacity()));
    auto a = alloc.allocate<double*>(3);
    auto b = alloc.allocate<float*>(5);
    CHECK(address(a.data()) % 256 == 0);
    CHECK(address(b.data()) % 256 == 0);
    CHECK(kbuf_test::inside_buffer(alloc, a));
    CHECK(kbuf_test::inside_buffer(alloc, b));
    alloc.reset();
    alloc.resize(2 * capacity);  // a second buffer, its slack taken the same way
    CHECK(address(alloc.buffer().data()) % 256 == 0);
    CHECK(kbuf_test::emulated_space_live(alloc.buffer().data(), alloc.capacity()));
  }
}

TEST_CASE("memory the emulated space frees holds the pattern, and is poisoned under ASan") {
  const unsigned char* p = nullptr;
  {
    Kokkos::View<unsigned char*, space> v("v", 1000);
    Kokkos::deep_copy(v, 7);
    p = v.data();
    CHECK_FALSE(kbuf_test::emulated_space_freed(p, 1000));
  }
  CHECK(kbuf_test::emulated_space_freed(p, 1000));
  CHECK(all_bytes_are(p, 1000, kbuf_test::emulated_freed_byte));  // read behind ASan's back
#if KBUF_TEST_EMULATED_ASAN
  CHECK(__asan_address_is_poisoned(p));
  CHECK(__asan_address_is_poisoned(p + 999));
  const ChildResult r = run_in_child([p] {
    const volatile unsigned char byte = *p;  // a late host read: ASan reports it
    (void)byte;
  });
  CHECK_FALSE(r.survived());
  CHECK(r.says("use-after-poison"));
#endif
}

TEST_CASE("a deep_copy out of a kbuf temporary whose buffer was freed kills the process") {
  Kokkos::View<double*, space, Kokkos::MemoryUnmanaged> stale;
  {
    Alloc alloc(1_KiB);
    auto t = alloc.allocate<double*>(16);
    Kokkos::deep_copy(t, 1.5);
    stale = Kokkos::View<double*, space, Kokkos::MemoryUnmanaged>(t.data(), 16);
    const auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), stale);
    CHECK(h(15) == 1.5);  // live: the copy works
    alloc.reset();
  }  // the allocator and its buffer are gone; `stale` still points into the buffer

  const ChildResult r = run_in_child([&stale] {
    const auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), stale);
    (void)h;
  });
  CHECK(r.aborted());
  CHECK(r.says("deep_copy reads freed memory"));

#if KBUF_TEST_EMULATED_ASAN
  // A fill runs in Kokkos' own kernels, past the space's check: ASan catches it.
  const ChildResult w = run_in_child([&stale] { Kokkos::deep_copy(stale, 2.5); });
  CAPTURE(w.output);
  CHECK_FALSE(w.survived());
  CHECK(w.says("use-after-poison"));
#endif
}

TEST_CASE("a host dereference of a View of the emulated space aborts") {
  const Kokkos::View<double*, space> v("v", 4);
  const ChildResult r = run_in_child([&v] {
    const double x = v(0);
    (void)x;
  });
  CHECK(r.aborted());
  CHECK(r.says("attempt to access inaccessible memory space"));
}
