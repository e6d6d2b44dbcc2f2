// Regression tests for what kbuf-fuzz-allocator found; each failed before its fix. Built for the
// foreign space too (contents through host copies).
#include <doctest/doctest.h>

#include "reliability_support.hpp"

#include <cstdint>
#include <limits>
#include <string>

using namespace kbuf_rel;
using namespace kbuf::literals;
using kbuf_test::Alloc;

TEST_CASE(
    "an extent of 2^32 or more in a View of three runtime extents: refused exactly where "
    "the View cannot hold it") {
  // The legacy View stores such extents in 32 bits; kbuf used to hand out a view whose
  // extent(0) was the request modulo 2^32. The mdspan View stores them in size_t: kbuf must not
  // refuse them there. Which branch runs depends on the View implementation this build has.
  Alloc alloc(4_KiB);
  const std::int64_t wide = (std::int64_t{1} << 32) + 5;
  const auto before = alloc.statistics();
  constexpr bool narrow = kbuf::Impl::view_extents_are_32bit<Alloc::view<double***>>;
  static_assert(
      narrow == kbuf::Impl::view_extents_are_32bit<Alloc::view<float****, Kokkos::LayoutLeft>>, "");
  static_assert(narrow != kbuf::Impl::view_is_mdspan_based<Alloc::view<double***>>::value,
                "Kokkos' mdspan View holds 64-bit extents, its legacy View 32-bit ones");
  const std::string implementation =
      narrow ? "legacy (32-bit extents for rank_dynamic >= 3)" : "mdspan (size_t extents)";
  MESSAGE("View implementation: " << implementation);
  if constexpr (narrow) {
    try {
      (void)alloc.allocate<double***>(wide, 0, 1);
      FAIL("no exception");
    } catch (const kbuf::logic_error& e) {
      const std::string what = e.what();
      CHECK(what.find("kbuf::BufferAllocator::allocate") != std::string::npos);
      CHECK(what.find(std::to_string(wide)) != std::string::npos);
    }
    CHECK_THROWS_AS((alloc.allocate<float****, Kokkos::LayoutLeft>(0, 1, 2, wide)),
                    kbuf::logic_error);
    CHECK(alloc.statistics().temporaries == before.temporaries);
  } else {
    auto a = alloc.allocate<double***>(wide, 0, 1);
    CHECK(a.extent(0) == static_cast<std::size_t>(wide));
    auto b = alloc.allocate<float****, Kokkos::LayoutLeft>(0, 1, 2, wide);
    CHECK(b.extent(3) == static_cast<std::size_t>(wide));
    CHECK(alloc.statistics().temporaries == before.temporaries + 2);
    alloc.reset();
  }
  CHECK(alloc.empty());
  // Two runtime extents are stored in 64 bits by both: fine, and zero-sized here.
  auto v = alloc.allocate<double**>(wide, 0);
  CHECK(v.extent(0) == static_cast<std::size_t>(wide));
  CHECK(v.extent(1) == 0);
  // Below 2^32 stays fine for three.
  auto w = alloc.allocate<char***>(std::int64_t{0xFFFFFFFF}, 0, 2);
  CHECK(w.extent(0) == 0xFFFFFFFFu);
}

TEST_CASE("a zero extent makes a zero-sized temporary even when the other extents overflow") {
  // The byte count is 0; kbuf used to multiply the other extents first and report an overflow.
  Alloc alloc(4_KiB);
  const std::int64_t huge = std::int64_t{1} << 62;
  auto a = alloc.allocate<kbuf_test::Pod12**>(huge, 0);
  CHECK(a.extent(0) == static_cast<std::size_t>(huge));
  CHECK(a.extent(1) == 0);
  CHECK(a.span() == 0);
  auto b = alloc.allocate<double**, Kokkos::LayoutLeft>(0, huge);
  CHECK(b.extent(1) == static_cast<std::size_t>(huge));
  auto c = alloc.allocate<double*>(std::size_t{0});
  CHECK(c.size() == 0);
  CHECK(alloc.empty());
  CHECK(alloc.used() == 0);
  // Without a zero, the same extents still overflow.
  CHECK_THROWS_AS((alloc.allocate<kbuf_test::Pod12**>(huge, 4)), kbuf::logic_error);
  // And a product that wraps to exactly 0 is an overflow, not an empty view.
  CHECK_THROWS_AS((alloc.allocate<char**>(std::int64_t{1} << 32, std::int64_t{1} << 32)),
                  kbuf::logic_error);
}

TEST_CASE("a refused allocate with a regrowth pending changes nothing") {
  // The regrowth used to happen first; when the request then failed as a fallback, the call
  // threw out_of_memory with the buffer already replaced.
  Alloc alloc(1_KiB);
  (void)alloc.allocate<double*>(1000);  // a fallback: the high-water mark passes the capacity
  alloc.reset();
  REQUIRE(alloc.high_water_mark() > alloc.capacity());
  const auto capacity = alloc.capacity();
  const auto regrows = alloc.statistics().regrows;
  const auto hwm = alloc.high_water_mark();
  CHECK_THROWS_AS(alloc.allocate<char*>(std::size_t{1} << 50), kbuf::out_of_memory);
  CHECK(alloc.capacity() == capacity);
  CHECK(alloc.statistics().regrows == regrows);
  CHECK(alloc.high_water_mark() == hwm);
  CHECK(alloc.empty());
  // The regrowth is still pending and happens at the next allocate.
  auto t = alloc.allocate<double*>(10);
  CHECK(alloc.statistics().regrows == regrows + 1);
  CHECK(alloc.capacity() == kbuf::buffer_size(hwm));
  CHECK(kbuf_test::inside_buffer(alloc, t));
}

TEST_CASE("with a regrowth pending, a request too big for the new buffer regrows and falls back") {
  Alloc alloc(1_KiB);
  alloc.sizehint(4_KiB);
  auto big = alloc.allocate<double*>(2000);  // 16000 bytes: more than buffer_size(4 KiB)
  CHECK(alloc.capacity() == 4_KiB);
  CHECK(alloc.statistics().regrows == 1);
  CHECK(alloc.live_fallbacks() == 1);
  CHECK(!kbuf_test::inside_buffer(alloc, big));
  Kokkos::deep_copy(big, 1.0);  // the whole fallback is there to be written
  CHECK(kbuf_test::host_copy(big)(1999) == 1.0);
  auto small = alloc.allocate<double*>(8);
  CHECK(kbuf_test::inside_buffer(alloc, small));
}

TEST_CASE("a high-water mark no buffer can hold makes allocate throw out_of_memory") {
  // sizehint(SIZE_MAX) used to make the next allocate throw buffer_size's logic_error.
  Alloc alloc(1_KiB);
  alloc.sizehint(std::numeric_limits<std::size_t>::max());
  CHECK_THROWS_AS(alloc.allocate<double*>(4), kbuf::out_of_memory);
  CHECK(alloc.capacity() == 1_KiB);
  alloc.sizehint(1_KiB, true);
  auto t = alloc.allocate<double*>(4);
  CHECK(kbuf_test::inside_buffer(alloc, t));
}

TEST_CASE("a request of nearly SIZE_MAX bytes throws out_of_memory instead of aborting in Kokkos") {
  // A fallback of SIZE_MAX bytes made Kokkos take the extent for "none given" and abort the
  // program; sizes near it overflow Kokkos' header arithmetic. Run in a child: before the fix
  // it died.
  const auto body = [](std::size_t n, std::size_t alignment, bool hold) {
    Alloc alloc(256, alignment);
    Alloc::view<double*> keep;
    if (hold) {
      keep = alloc.allocate<double*>(4);
      // Written through a host copy: a fill would be a kernel, and an OpenMP kernel in a forked
      // child waits forever for the parent's threads.
      const kbuf_test::HostCopy<Alloc::view<double*>> h(keep, false);
      for (std::size_t i = 0; i < 4; ++i) h(i) = 5.0;
      h.copy_back();
    }
    const std::size_t used = alloc.used();
    try {
      (void)alloc.allocate<unsigned char*>(n);
      std::printf("no exception\n");
    } catch (const kbuf::out_of_memory& e) {
      std::printf("out_of_memory: %s\n", e.what());
      if (alloc.used() == used && alloc.live_fallbacks() == 0 &&
          (!hold || kbuf_test::host_copy(keep)(3) == 5.0)) {
        std::printf("unchanged\n");
      }
    }
  };
  constexpr std::size_t max = std::numeric_limits<std::size_t>::max();
  for (const std::size_t n :
       {max, max - 63, max / 2 + 1, max / 2 - 100, (max >> 2) + 1, (max >> 2) - 4096}) {
    CAPTURE(n);
    const ChildResult r = run_in_child([&] { body(n, 64, true); });
    CHECK(r.survived());
    CHECK(r.says("out_of_memory"));
    CHECK(r.says("unchanged"));
    INFO(r.output);
  }
  for (const std::size_t n : {max, max - 1}) {  // an empty allocator aligned to 1: no padding
    CAPTURE(n);
    const ChildResult r = run_in_child([&] { body(n, 1, false); });
    CHECK(r.survived());
    CHECK(r.says("unchanged"));
    INFO(r.output);
  }
}

TEST_CASE("a request no address space holds changes nothing, the high-water mark included") {
  // An empty allocator holding a buffer, no limit set: a fallback of SIZE_MAX bytes was refused
  // as passing the limit (SIZE_MAX: held + request overflows it) and recorded its need in the
  // high-water mark, as a refusal by a real limit does, so the next regrowth would have asked
  // for it. Also with a temporary live.
  constexpr std::size_t max = std::numeric_limits<std::size_t>::max();
  for (const bool hold : {false, true})
    for (const std::size_t n : {max, max - 63, (max >> 2) + 1}) {
      CAPTURE(n);
      CAPTURE(hold);
      Alloc alloc(64_KiB);
      auto scope = alloc.scope();
      auto keep = hold ? alloc.allocate<double*>(4) : Alloc::view<double*>();
      const std::size_t want = hold ? 4 : 0;
      const std::size_t hwm = alloc.high_water_mark();
      const auto before = alloc.statistics();
      std::string what;
      try {
        (void)alloc.allocate<unsigned char*>(n);
      } catch (const kbuf::out_of_memory& e) {
        what = e.what();
      }
      CHECK(what.find("more than any address space holds") != std::string::npos);
      CHECK(alloc.high_water_mark() == hwm);
      CHECK(alloc.statistics().limit_refusals == before.limit_refusals);
      CHECK(alloc.statistics().fallbacks == before.fallbacks);
      CHECK(alloc.live_fallbacks() == 0);
      CHECK(keep.extent(0) == want);
    }
}
