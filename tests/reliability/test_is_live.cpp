// is_live(view): true while the view's memory belongs to a live temporary (carved or
// fallback), false once a reset released it. Compiled with and without debug checks.
#include <doctest/doctest.h>

#include "reliability_support.hpp"

using namespace kbuf_rel;
using namespace kbuf::literals;
using kbuf_test::Alloc;  // the default space, or the foreign one (test_support.hpp)

TEST_CASE("is_live: a carved temporary and its subviews are live until a reset releases them") {
  Alloc alloc(4_KiB);
  auto a = alloc.allocate<double**>(4, 5);
  const auto cp = alloc.checkpoint();
  auto b = alloc.allocate<float*>(10);
  auto row = Kokkos::subview(a, 2, Kokkos::ALL());
  auto tail = Kokkos::subview(b, std::make_pair(5, 10));
  CHECK(alloc.is_live(a));
  CHECK(alloc.is_live(b));
  CHECK(alloc.is_live(row));
  CHECK(alloc.is_live(tail));
  alloc.reset(cp);
  CHECK(alloc.is_live(a));
  CHECK(alloc.is_live(row));
  CHECK(!alloc.is_live(b));
  CHECK(!alloc.is_live(tail));
  alloc.reset();
  CHECK(!alloc.is_live(a));
  CHECK(!alloc.is_live(row));
}

TEST_CASE("is_live: a scope's temporaries stop being live when it ends") {
  Alloc alloc(4_KiB);
  Alloc::view<int*> escaped;
  {
    auto s = alloc.scope();
    escaped = alloc.allocate<int*>(16);
    CHECK(alloc.is_live(escaped));
  }
  CHECK(!alloc.is_live(escaped));
}

TEST_CASE("is_live: fallbacks are live until the reset that frees them") {
  Alloc alloc(256);
  auto carved = alloc.allocate<double*>(4);
  const auto cp = alloc.checkpoint();
  auto fallback = alloc.allocate<double*>(1000);
  REQUIRE(alloc.live_fallbacks() == 1);
  CHECK(alloc.is_live(fallback));
  CHECK(alloc.is_live(Kokkos::subview(fallback, std::make_pair(990, 1000))));
  alloc.reset(cp);
  CHECK(!alloc.is_live(fallback));
  CHECK(alloc.is_live(carved));
}

TEST_CASE("is_live: memory the allocator does not hold is never live") {
  Alloc alloc(4_KiB);
  Alloc other(4_KiB);
  auto mine = alloc.allocate<double*>(8);
  auto theirs = other.allocate<double*>(8);
  Kokkos::View<double*, kbuf_test::space> managed("managed", 8);
  CHECK(alloc.is_live(mine));
  CHECK(!alloc.is_live(theirs));
  CHECK(!other.is_live(mine));
  CHECK(!alloc.is_live(managed));
  // A view reaching past the used part of the buffer is not inside a live temporary.
  Alloc::view<double*> beyond(mine.data(), 9);
  CHECK(!alloc.is_live(beyond));
}

TEST_CASE("is_live: a view that holds no memory cannot dangle") {
  Alloc alloc(4_KiB);
  auto empty = alloc.allocate<double*>(0);
  CHECK(alloc.is_live(empty));
  alloc.reset();
  CHECK(alloc.is_live(empty));
  CHECK(alloc.is_live(Alloc::view<double*>()));
}

TEST_CASE("is_live: regrowth and resize make every earlier temporary stale") {
  Alloc alloc(256);
  auto a = alloc.allocate<double*>(8);
  auto fb = alloc.allocate<double*>(100);
  alloc.reset();
  auto b = alloc.allocate<double*>(8);  // regrows first
  REQUIRE(alloc.statistics().regrows == 1);
  CHECK(alloc.is_live(b));
  CHECK(!alloc.is_live(fb));
  CHECK((a.data() == b.data() || !alloc.is_live(a)));
  alloc.reset();
  alloc.resize(16_KiB);
  CHECK(!alloc.is_live(b));
}

TEST_CASE("is_live: memory handed out again reads live through a stale view (documented limit)") {
  Alloc alloc(4_KiB);
  auto first = alloc.allocate<double*>(8);
  alloc.reset();
  CHECK(!alloc.is_live(first));
  auto second = alloc.allocate<double*>(8);
  REQUIRE(second.data() == first.data());
  CHECK(alloc.is_live(first));  // same bytes, live again: is_live decides by address
}

TEST_CASE("is_live: strided subviews cover the bytes their extents and strides reach") {
  // A column of a 4x5 LayoutRight temporary touches elements c, c+5, c+10, c+15: 16 elements
  // from its first. View::span() says 20 on the legacy View and 16 on the mdspan View; is_live
  // must answer the same on both, so the last column of the newest temporary is live.
  Alloc alloc(4_KiB);
  auto a = alloc.allocate<double**>(4, 5);
  REQUIRE(reinterpret_cast<unsigned char*>(a.data() + 20) ==
          alloc.buffer().data() + alloc.used());  // `a` ends where the used part ends
  for (int c = 0; c < 5; ++c) {
    auto column = Kokkos::subview(a, Kokkos::ALL(), c);
    CHECK(kbuf::Impl::view_bytes_touched(column) == 16 * sizeof(double));
    CHECK(alloc.is_live(column));
  }
  auto row = Kokkos::subview(a, 3, Kokkos::ALL());
  CHECK(kbuf::Impl::view_bytes_touched(row) == 5 * sizeof(double));
  CHECK(alloc.is_live(row));
  auto block = Kokkos::subview(a, std::make_pair(1, 4), std::make_pair(2, 5));
  CHECK(kbuf::Impl::view_bytes_touched(block) == (2 * 5 + 2 + 1) * sizeof(double));
  CHECK(alloc.is_live(block));

  // LayoutLeft and rank 3: the last "row" of a 3x4x2 LayoutLeft temporary.
  auto b = alloc.allocate<float***, Kokkos::LayoutLeft>(3, 4, 2);
  auto plane = Kokkos::subview(b, 2, Kokkos::ALL(), Kokkos::ALL());
  CHECK(kbuf::Impl::view_bytes_touched(plane) == (3 * 3 + 1 * 12 + 1) * sizeof(float));
  CHECK(alloc.is_live(plane));
  CHECK(alloc.is_live(Kokkos::subview(b, Kokkos::ALL(), 3, 1)));

  alloc.reset();
  for (int c = 0; c < 5; ++c) CHECK(!alloc.is_live(Kokkos::subview(a, Kokkos::ALL(), c)));
}

TEST_CASE("is_live: a strided view reaching one element past the temporary is not live") {
  Alloc alloc(4_KiB);
  auto a = alloc.allocate<double**>(4, 5);
  using strided =
      Kokkos::View<double*, Kokkos::LayoutStride, kbuf_test::space, Kokkos::MemoryUnmanaged>;
  const strided last_column(a.data() + 4, Kokkos::LayoutStride(4, 5));
  const strided one_more(a.data() + 4, Kokkos::LayoutStride(5, 5));  // element 24 of 20
  CHECK(kbuf::Impl::view_bytes_touched(last_column) == 16 * sizeof(double));
  CHECK(kbuf::Impl::view_bytes_touched(one_more) == 21 * sizeof(double));
  CHECK(alloc.is_live(last_column));
  CHECK(!alloc.is_live(one_more));
  const strided empty(a.data(), Kokkos::LayoutStride(0, 5));
  CHECK(kbuf::Impl::view_bytes_touched(empty) == 0);
  CHECK(alloc.is_live(empty));
}
