// BufferAllocator: carving, alignment, element types, layouts, ranks, fallbacks, growth, resize,
// sizehint, statistics and bad input.
#include <doctest/doctest.h>

#include "test_support.hpp"

#include <limits>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

using namespace kbuf_test;
using namespace kbuf::literals;

namespace {

template <class T>
std::size_t expected_alignment(const Alloc& alloc) {
  return alignof(T) > alloc.alignment() ? alignof(T) : alloc.alignment();
}

/// Fills `v` with `value` on its own space and checks, through a host mirror, that it reads
/// back; used to show that temporaries are real, writable, disjoint memory.
template <class View>
void fill(const View& v, const typename View::value_type& value) {
  Kokkos::deep_copy(v, value);
}

template <class View>
bool holds(const View& v, const typename View::value_type& value) {
  const auto h = kbuf_test::host_copy(v);  // aligned for over-aligned types too
  const auto* p = h.view().data();
  for (std::size_t i = 0; i < v.span(); ++i) {
    if (!(p[i] == value)) return false;
  }
  return true;
}

template <class T>
T make_value(int k);
template <>
float make_value<float>(int k) {
  return 1.5f * static_cast<float>(k);
}
template <>
double make_value<double>(int k) {
  return 0.25 * k;
}
template <>
Kokkos::complex<double> make_value<Kokkos::complex<double>>(int k) {
  return {1.0 * k, -2.0 * k};
}
template <>
Pod12 make_value<Pod12>(int k) {
  return {1.0f * k, 2.0f * k, 3.0f * k};
}
template <>
Pod32 make_value<Pod32>(int k) {
  return {1.0 * k, 2.0 * k, 3.0 * k, 4.0 * k};
}
template <>
Wide make_value<Wide>(int k) {
  return {0.5 * k};
}

}  // namespace

#define KBUF_ELEMENT_TYPES float, double, Kokkos::complex<double>, Pod12, Pod32, Wide

TEST_CASE_TEMPLATE("a temporary that fits is carved from the buffer at an aligned address", T,
                   KBUF_ELEMENT_TYPES) {
  Alloc alloc(1_MiB);
  REQUIRE(alloc.capacity() == 1_MiB);
  std::size_t used = 0;
  const std::uintptr_t base = address(alloc.buffer().data());
  for (int n : {1, 3, 7, 64, 1000}) {
    auto v = alloc.allocate<T*>(n);
    static_assert(std::is_same<decltype(v), Alloc::view<T*>>::value, "unmanaged view type");
    CHECK(v.extent(0) == static_cast<std::size_t>(n));
    CHECK(inside_buffer(alloc, v));
    CHECK(begin_of(v) % expected_alignment<T>(alloc) == 0);
    // used() advances by the padding plus the size, nothing else.
    CHECK(alloc.used() == end_of(v) - base);
    CHECK(begin_of(v) - base >= used);
    CHECK(begin_of(v) - base - used < expected_alignment<T>(alloc));
    used = alloc.used();
  }
  CHECK(alloc.statistics().temporaries == 5);
  CHECK(alloc.statistics().fallbacks == 0);
  CHECK(!alloc.empty());
}

TEST_CASE_TEMPLATE("temporaries hold their own data and never overlap", T, KBUF_ELEMENT_TYPES) {
  Alloc alloc(2_KiB);
  std::vector<Alloc::view<T*>> views;
  for (int k = 0; k < 12; ++k) {
    views.push_back(alloc.allocate<T*>(5 + 13 * k));
    fill(views.back(), make_value<T>(k + 1));
  }
  for (int k = 0; k < 12; ++k) CHECK(holds(views[k], make_value<T>(k + 1)));
  CHECK(alloc.statistics().fallbacks > 0);  // some in the buffer, some not
  for (std::size_t i = 0; i < views.size(); ++i) {
    for (std::size_t j = i + 1; j < views.size(); ++j) {
      CHECK((end_of(views[i]) <= begin_of(views[j]) || end_of(views[j]) <= begin_of(views[i])));
    }
  }
}

TEST_CASE_TEMPLATE("LayoutLeft and LayoutRight temporaries have the requested extents and strides",
                   T, KBUF_ELEMENT_TYPES) {
  Alloc alloc(1_MiB);
  auto r = alloc.allocate<T***, Kokkos::LayoutRight>(2, 3, 4);
  auto l = alloc.allocate<T***, Kokkos::LayoutLeft>(2, 3, 4);
  static_assert(std::is_same<typename decltype(l)::array_layout, Kokkos::LayoutLeft>::value, "");
  static_assert(std::is_same<typename decltype(r)::array_layout, Kokkos::LayoutRight>::value, "");
  CHECK(r.extent(0) == 2);
  CHECK(r.extent(1) == 3);
  CHECK(r.extent(2) == 4);
  CHECK(r.stride(2) == 1);
  CHECK(r.stride(1) == 4);
  CHECK(r.stride(0) == 12);
  CHECK(l.stride(0) == 1);
  CHECK(l.stride(1) == 2);
  CHECK(l.stride(2) == 6);
  CHECK(r.span() == 24);
  CHECK(l.span() == 24);
  CHECK(end_of(r) <= begin_of(l));
}

TEST_CASE("every rank up to 8 and static extents are carved with the right size") {
  Alloc alloc(1_MiB);
  auto v1 = alloc.allocate<double*>(3);
  auto v2 = alloc.allocate<double**>(3, 2);
  auto v4 = alloc.allocate<double****>(1, 2, 3, 4);
  auto v6 = alloc.allocate<double******>(2, 1, 2, 1, 2, 1);
  auto v8 = alloc.allocate<double********>(2, 2, 2, 2, 2, 2, 2, 2);
  CHECK(v1.span() == 3);
  CHECK(v2.span() == 6);
  CHECK(v4.span() == 24);
  CHECK(v6.span() == 8);
  CHECK(v8.span() == 256);
  CHECK(static_cast<std::size_t>(decltype(v8)::rank) == 8);

  const std::size_t before = alloc.used();
  auto s = alloc.allocate<double* [3][4]>(5);  // one runtime extent, two static ones
  CHECK(s.extent(0) == 5);
  CHECK(s.extent(1) == 3);
  CHECK(s.extent(2) == 4);
  CHECK(s.span() == 60);
  CHECK(alloc.used() - before >= 60 * sizeof(double));
  CHECK(alloc.used() - before < 60 * sizeof(double) + alloc.alignment());

  auto f = alloc.allocate<Pod12[2][3]>();  // fully static
  CHECK(f.span() == 6);
  CHECK(inside_buffer(alloc, f));
  auto scalar = alloc.allocate<double>();  // rank 0
  CHECK(scalar.span() == 1);
  CHECK(inside_buffer(alloc, scalar));
  CHECK(alloc.statistics().temporaries == 8);
}

TEST_CASE("a zero-sized temporary is a valid empty view and moves nothing") {
  Alloc alloc(4_KiB);
  auto first = alloc.allocate<double*>(10);
  const auto used = alloc.used();
  const auto hwm = alloc.high_water_mark();
  auto z1 = alloc.allocate<double*>(0);
  auto z2 = alloc.allocate<Pod32**, Kokkos::LayoutLeft>(7, 0);
  auto z3 = alloc.allocate<double* [3]>(0);
  CHECK(z1.size() == 0);
  CHECK(z2.size() == 0);
  CHECK(z2.extent(0) == 7);
  CHECK(z3.size() == 0);
  CHECK(alloc.used() == used);
  CHECK(alloc.high_water_mark() == hwm);
  CHECK(alloc.checkpoint().depth() == 1);
  // Counted apart from the temporaries that hold memory (as Kokkos Tools' records count them).
  CHECK(alloc.statistics().temporaries == 1);
  CHECK(alloc.statistics().empty == 3);
  // Even on an allocator with no buffer at all, zero-sized temporaries need no fallback.
  Alloc none;
  auto z4 = none.allocate<double**>(0, 0);
  CHECK(z4.size() == 0);
  CHECK(none.statistics().fallbacks == 0);
  CHECK(none.statistics().temporaries == 0);
  CHECK(none.statistics().empty == 1);
  CHECK(none.empty());
  (void)first;
}

TEST_CASE_TEMPLATE(
    "a temporary that does not fit is a fallback of the same view type, held until reset", T,
    KBUF_ELEMENT_TYPES) {
  Alloc alloc(256);
  auto small = alloc.allocate<T*>(1);
  fill(small, make_value<T>(3));
  auto big = alloc.allocate<T**, Kokkos::LayoutLeft>(100, 7);
  static_assert(std::is_same<decltype(big), Alloc::view<T**, Kokkos::LayoutLeft>>::value, "");
  CHECK(!inside_buffer(alloc, big));
  CHECK(begin_of(big) % expected_alignment<T>(alloc) == 0);
  CHECK(big.extent(0) == 100);
  CHECK(big.extent(1) == 7);
  fill(big, make_value<T>(9));
  CHECK(holds(big, make_value<T>(9)));
  CHECK(holds(small, make_value<T>(3)));
  const auto s = alloc.statistics();
  CHECK(s.fallbacks == 1);
  CHECK(s.fallback_bytes == 700 * sizeof(T));
  CHECK(alloc.live_fallbacks() == 1);
  alloc.reset();
  CHECK(alloc.live_fallbacks() == 0);
  CHECK(alloc.empty());
  CHECK(alloc.used() == 0);
}

namespace {
// A workload of nested scopes with mixed types and sizes, some larger than any buffer so far.
void workload(Alloc& alloc, int scale) {
  auto outer = alloc.scope();
  auto a = alloc.allocate<double**>(10 * scale, 7);
  for (int i = 0; i < 3; ++i) {
    auto inner = alloc.scope();
    auto b = alloc.allocate<Pod12*>(33 * scale + i);
    auto c = alloc.allocate<Wide*>(5 * scale);
    auto d = alloc.allocate<Kokkos::complex<double>***, Kokkos::LayoutLeft>(scale, 3, 4 + i);
    (void)b, (void)c, (void)d;
  }
  auto e = alloc.allocate<float*>(1000 * scale);
  (void)a, (void)e;
}
}  // namespace

TEST_CASE("the high-water mark counts fallbacks, so a second identical run needs no fallback") {
  for (std::size_t initial : {std::size_t{0}, std::size_t{100}, std::size_t{4096}}) {
    for (std::size_t alignment :
         {std::size_t{1}, std::size_t{16}, Alloc::default_alignment, std::size_t{4096}}) {
      CAPTURE(initial);
      CAPTURE(alignment);
      Alloc alloc(initial, alignment);
      workload(alloc, 20);
      const auto first = alloc.statistics();
      CHECK(first.fallbacks > 0);
      // The first inner scope ends with `a` live and a growth due: the next need past the
      // buffer grows it under `a` at once (the rest of the round falls back less).
      CHECK(first.regrows_under_live > 0);
      CHECK(alloc.empty());
      const bool due = alloc.high_water_mark() > alloc.capacity();
      workload(alloc, 20);
      const auto second = alloc.statistics();
      CHECK(second.fallbacks == first.fallbacks);  // convergence in one round
      CHECK(second.regrows == first.regrows + (due ? 1 : 0));
      CHECK(alloc.capacity() >= alloc.high_water_mark());
      const auto hwm = alloc.high_water_mark();
      workload(alloc, 20);
      CHECK(alloc.statistics().fallbacks == first.fallbacks);
      CHECK(alloc.statistics().regrows == second.regrows);
      CHECK(alloc.high_water_mark() == hwm);
    }
  }
}

TEST_CASE("the high-water mark is the peak of used() when nothing falls back") {
  Alloc alloc(1_MiB);
  workload(alloc, 3);
  CHECK(alloc.statistics().fallbacks == 0);
  CHECK(alloc.high_water_mark() == alloc.statistics().peak_used);
  CHECK(alloc.high_water_mark() > 0);
}

TEST_CASE("the buffer regrows only when the allocator is empty") {
  Alloc alloc(1_KiB);
  auto a = alloc.allocate<double*>(100);   // 800 B, fits
  auto b = alloc.allocate<double*>(1000);  // falls back
  CHECK(alloc.statistics().fallbacks == 1);
  auto cp = alloc.checkpoint();
  auto c = alloc.allocate<double*>(1000);  // falls back again: never regrow with live temporaries
  CHECK(alloc.statistics().fallbacks == 2);
  CHECK(alloc.capacity() == 1_KiB);
  alloc.reset(cp);  // a partial reset never resizes
  CHECK(alloc.capacity() == 1_KiB);
  alloc.reset();  // neither does a full one: growth waits for the next allocate
  CHECK(alloc.capacity() == 1_KiB);
  CHECK(alloc.statistics().regrows == 0);
  auto d = alloc.allocate<double*>(1);
  CHECK(alloc.statistics().regrows == 1);
  CHECK(alloc.capacity() == kbuf::buffer_size(alloc.high_water_mark()));
  CHECK(alloc.capacity() >= 800 + 8000 + 8000);
  CHECK(inside_buffer(alloc, d));
  (void)a, (void)b, (void)c;
}

TEST_CASE("the buffer never shrinks on its own") {
  Alloc alloc;
  workload(alloc, 50);
  workload(alloc, 50);
  const auto capacity = alloc.capacity();
  CHECK(capacity > 0);
  for (int i = 0; i < 3; ++i) workload(alloc, 1);
  CHECK(alloc.capacity() == capacity);
}

TEST_CASE("resize replaces the buffer only when empty") {
  Alloc alloc(4_KiB);
  auto a = alloc.allocate<double*>(10);
  const auto used = alloc.used();
  CHECK_THROWS_AS(alloc.resize(1_MiB), kbuf::logic_error);
  CHECK(alloc.capacity() == 4_KiB);
  CHECK(alloc.used() == used);
  try {
    alloc.resize(12345);
  } catch (const kbuf::logic_error& e) {
    CHECK(std::string(e.what()).find("kbuf::BufferAllocator::resize(12345)") != std::string::npos);
  }
  (void)a;
  alloc.reset();
  alloc.resize(10000);
  CHECK(alloc.capacity() == kbuf::buffer_size(10000));
  CHECK(alloc.statistics().regrows == 1);
  CHECK(address(alloc.buffer().data()) % alloc.alignment() == 0);
  alloc.resize(0);
  CHECK(alloc.capacity() == 0);
  CHECK(alloc.buffer().size() == 0);
  auto b = alloc.allocate<double*>(4);  // now a fallback: nothing left to carve from
  CHECK(alloc.statistics().fallbacks == 1);
  (void)b;
}

TEST_CASE("resize below the high-water mark is not undone by the next allocate") {
  Alloc alloc;
  workload(alloc, 10);
  workload(alloc, 10);
  const auto regrows = alloc.statistics().regrows;
  alloc.resize(1_KiB);
  CHECK(alloc.high_water_mark() <= 1_KiB);
  auto a = alloc.allocate<double*>(8);
  CHECK(alloc.capacity() == 1_KiB);
  CHECK(alloc.statistics().regrows == regrows + 1);
  (void)a;
}

TEST_CASE("sizehint raises the growth target, and with shrink it sets it") {
  Alloc alloc(1_KiB);
  alloc.sizehint(100_KiB);
  CHECK(alloc.high_water_mark() == 100_KiB);
  CHECK(alloc.capacity() == 1_KiB);  // nothing happens until the next allocate on empty
  alloc.sizehint(10);                // never lowers without shrink
  CHECK(alloc.high_water_mark() == 100_KiB);
  auto a = alloc.allocate<char*>(1);
  CHECK(alloc.capacity() == 100_KiB);
  (void)a;
  alloc.reset();
  alloc.sizehint(5000, true);
  CHECK(alloc.high_water_mark() == 5000);
  CHECK(alloc.capacity() == 100_KiB);
  auto b = alloc.allocate<char*>(1);
  CHECK(alloc.capacity() == kbuf::buffer_size(5000));
  (void)b;
  // With live temporaries, shrink stops at what is live.
  auto c = alloc.allocate<double*>(300);
  alloc.sizehint(0, true);
  CHECK(alloc.high_water_mark() >= alloc.used());
  (void)c;
}

TEST_CASE("the alignment argument is honoured and must be a power of two") {
  for (std::size_t a : {std::size_t{1}, std::size_t{8}, std::size_t{128}, std::size_t{1024}}) {
    Alloc alloc(8_KiB, a);
    CHECK(alloc.alignment() == a);
    for (int n : {1, 3, 5}) {
      auto v = alloc.allocate<char*>(n);
      CHECK(begin_of(v) % a == 0);
      CHECK(inside_buffer(alloc, v));
    }
    auto w = alloc.allocate<Wide*>(2);  // alignof(Wide) wins when larger
    CHECK(begin_of(w) % (a > 128 ? a : 128) == 0);
  }
  for (std::size_t bad : {std::size_t{0}, std::size_t{3}, std::size_t{96}}) {
    CAPTURE(bad);
    try {
      Alloc alloc(0, bad);
      FAIL("no exception");
    } catch (const kbuf::logic_error& e) {
      const std::string what = e.what();
      CHECK(what.find("alignment = " + std::to_string(bad)) != std::string::npos);
      CHECK(what.find("power of two") != std::string::npos);
    }
  }
  CHECK(Alloc::default_alignment ==
        (std::is_same<Alloc::memory_space, Kokkos::HostSpace>::value ? 64u : 256u));
}

TEST_CASE("over-aligned value types are honoured in the buffer and in fallbacks") {
  Alloc alloc(4_KiB, 8);
  for (int i = 0; i < 5; ++i) {
    auto c = alloc.allocate<char*>(1 + i);
    auto w = alloc.allocate<Wide*>(1 + i);
    CHECK(begin_of(w) % 128 == 0);
    CHECK(inside_buffer(alloc, w));
    (void)c;
  }
  auto big = alloc.allocate<Wide*>(1000);
  CHECK(!inside_buffer(alloc, big));
  CHECK(begin_of(big) % 128 == 0);
}

namespace {
struct Observed {
  std::size_t capacity, used, hwm, depth, fallbacks, live_fallbacks, temporaries;
  bool empty;
  bool operator==(const Observed& o) const {
    return capacity == o.capacity && used == o.used && hwm == o.hwm && depth == o.depth &&
           fallbacks == o.fallbacks && live_fallbacks == o.live_fallbacks &&
           temporaries == o.temporaries && empty == o.empty;
  }
};
Observed observe(const Alloc& a) {
  const auto s = a.statistics();
  return {a.capacity(), a.used(),           a.high_water_mark(), a.checkpoint().depth(),
          s.fallbacks,  a.live_fallbacks(), s.temporaries,       a.empty()};
}
}  // namespace

TEST_CASE("a negative extent throws, names the call and the value, and changes nothing") {
  Alloc alloc(4_KiB);
  auto a = alloc.allocate<double*>(10);
  const Observed before = observe(alloc);
  try {
    (void)alloc.allocate<double***>(2, -7, 3);
    FAIL("no exception");
  } catch (const kbuf::logic_error& e) {
    const std::string what = e.what();
    CHECK(what.find("kbuf::BufferAllocator::allocate") != std::string::npos);
    CHECK(what.find("extent 1 is -7") != std::string::npos);
  }
  CHECK_THROWS_AS((void)alloc.allocate<float*>(-1), kbuf::logic_error);
  CHECK_THROWS_AS((void)alloc.allocate<float*>(std::numeric_limits<long long>::min()),
                  kbuf::logic_error);
  CHECK(observe(alloc) == before);
  (void)a;
}

TEST_CASE("extents whose byte count overflows size_t throw logic_error and change nothing") {
  Alloc alloc(4_KiB);
  const Observed before = observe(alloc);
  const std::size_t big = std::numeric_limits<std::size_t>::max() / 4;
  try {
    (void)alloc.allocate<double**>(big, std::size_t{2});
    FAIL("no exception");
  } catch (const kbuf::logic_error& e) {
    const std::string what = e.what();
    CHECK(what.find("kbuf::BufferAllocator::allocate(" + std::to_string(big) + ", 2)") !=
          std::string::npos);
    CHECK(what.find("overflows") != std::string::npos);
  }
  CHECK_THROWS_AS((void)alloc.allocate<double*>(std::numeric_limits<std::size_t>::max() / 8 + 1),
                  kbuf::logic_error);
  CHECK_THROWS_AS((void)alloc.allocate<Pod32* [4]>(std::numeric_limits<std::size_t>::max() / 64),
                  kbuf::logic_error);
  CHECK(observe(alloc) == before);
}

TEST_CASE(
    "a temporary that cannot be had throws out_of_memory naming the size and changes nothing") {
  Alloc alloc(4_KiB);
  auto a = alloc.allocate<double*>(10);
  Kokkos::deep_copy(a, 4.0);
  const Observed before = observe(alloc);
  const std::size_t n = std::numeric_limits<std::size_t>::max() / 16;  // ~1 EiB of doubles
  try {
    (void)alloc.allocate<double*>(n);
    FAIL("no exception");
  } catch (const kbuf::out_of_memory& e) {
    const std::string what = e.what();
    CHECK(what.find(std::to_string(n * sizeof(double))) != std::string::npos);
    CHECK(what.find(Alloc::memory_space::name()) != std::string::npos);
  }
  CHECK(observe(alloc) == before);
  auto b = alloc.allocate<double*>(10);  // still works
  CHECK(inside_buffer(alloc, b));
  CHECK(holds(a, 4.0));
}

TEST_CASE("statistics count temporaries, fallbacks, fallback bytes, regrows and resets") {
  Alloc alloc;
  CHECK(alloc.statistics().temporaries == 0);
  {
    auto s = alloc.scope();
    auto a = alloc.allocate<double*>(16);  // no buffer yet: fallback
    auto b = alloc.allocate<char*>(3);     // fallback
    (void)a, (void)b;
  }
  auto st = alloc.statistics();
  CHECK(st.temporaries == 0);
  CHECK(st.fallbacks == 2);
  CHECK(st.fallback_bytes == 16 * 8 + 3);
  CHECK(st.resets == 1);
  CHECK(st.peak_live == 2);
  {
    auto s = alloc.scope();
    auto a = alloc.allocate<double*>(16);
    auto b = alloc.allocate<char*>(3);
    (void)a, (void)b;
  }
  st = alloc.statistics();
  CHECK(st.temporaries == 2);
  CHECK(st.fallbacks == 2);
  CHECK(st.regrows == 1);
  CHECK(st.resets == 2);
}

TEST_CASE("buffer() is a managed view of capacity() bytes aligned to alignment()") {
  Alloc alloc(3000, 256);
  CHECK(alloc.buffer().extent(0) == alloc.capacity());
  CHECK(alloc.capacity() == 4096);
  CHECK(address(alloc.buffer().data()) % 256 == 0);
  CHECK(alloc.buffer().use_count() >= 1);
  CHECK(alloc.buffer().label().find("kbuf") != std::string::npos);
}

TEST_CASE("an allocator bound to an instance reports it and its label") {
  Alloc::execution_space exec;
  Alloc alloc(exec, 1_KiB, 128, "solver-temps");
  CHECK(alloc.label() == "solver-temps");
  CHECK(alloc.alignment() == 128);
  CHECK(alloc.capacity() == 1_KiB);
  CHECK(alloc.buffer().label().find("solver-temps") != std::string::npos);
  (void)alloc.execution_space_instance();
}

TEST_CASE("the tests' space is the foreign one exactly in the foreign build") {
  constexpr bool host_accessible =
      Kokkos::SpaceAccessibility<Kokkos::DefaultHostExecutionSpace, space>::accessible;
  CHECK(host_accessible == !kbuf_test::foreign);
  if (kbuf_test::foreign) {
    Alloc alloc(1_KiB);
    CHECK(alloc.alignment() == 256);
    CHECK(address(alloc.buffer().data()) % 256 == 0);
  }
}

namespace {
// Ten rounds of two 8000-byte temporaries, each round reset to its start.
void ten_rounds_of_two(kbuf_test::Alloc& alloc) {
  for (int step = 0; step < 10; ++step) {
    const auto cp = alloc.checkpoint();
    (void)alloc.allocate<double*>(1000);  // 8000 bytes: more than a 1 KiB buffer
    (void)alloc.allocate<double*>(1000);
    alloc.reset(cp);
  }
}
}  // namespace

TEST_CASE(
    "a growth blocked by a temporary held at the bottom is made under it at the next need: the "
    "buffer replaced is held until that temporary is released") {
  for (const bool held : {false, true}) {
    CAPTURE(held);
    kbuf_test::Alloc alloc(1024);
    auto bottom = held ? alloc.allocate<char*>(64) : kbuf_test::Alloc::view<char*>();
    const std::size_t first_capacity = alloc.capacity();
    ten_rounds_of_two(alloc);
    const kbuf::Statistics s = alloc.statistics();
    // The first round falls back twice (its second fallback awaits a growth), whatever is held.
    CHECK(s.fallbacks == 2);
    CHECK(s.fallbacks_awaiting_growth == 1);
    CHECK(s.regrows == 1);
    if (held) {
      // The round's end left the bottom live with a growth due: the next round's first need
      // took the larger buffer at once, above the bottom, which stays where it was.
      CHECK(s.regrows_under_live == 1);
      CHECK(alloc.is_live(bottom));
      CHECK(alloc.checkpoint().depth() == 1);
      CHECK(alloc.used() == 64);           // its offset, in the new buffer too
      CHECK(alloc.live_fallbacks() == 0);  // the old buffer is none
      CHECK(alloc.held() == alloc.capacity() + first_capacity);  // but it is held
      std::ostringstream line;
      line << s;
      CHECK(line.str().find("regrows under live temporaries 1") != std::string::npos);
    } else {
      CHECK(s.regrows_under_live == 0);  // the round's end emptied the allocator: a regrowth
    }
    alloc.reset();  // releases the bottom, and with it the buffer it kept
    CHECK(alloc.held() == alloc.capacity());
    CHECK(alloc.capacity() >= 16000);
    (void)bottom;
  }
}

TEST_CASE(
    "under a temporary held at the bottom, a need that grows every round keeps two buffers, not "
    "one per round") {
  kbuf_test::Alloc alloc(1024);
  auto bottom = alloc.allocate<char*>(64);
  const std::size_t first_capacity = alloc.capacity();
  std::size_t most_held = 0;
  for (int step = 0; step < 12; ++step) {
    const auto cp = alloc.checkpoint();
    (void)alloc.allocate<double*>(1000 + 500 * step);  // more than last round's high-water mark
    (void)alloc.allocate<double*>(1000 + 500 * step);
    most_held = std::max(most_held, alloc.held());
    alloc.reset(cp);
    // The buffer of this round's growth is freed with the round: held are the first buffer
    // (the bottom lives in it) and the one in use.
    CAPTURE(step);
    CHECK(alloc.held() == alloc.capacity() + (step == 0 ? 0 : first_capacity));
    CHECK(alloc.is_live(bottom));
  }
  const kbuf::Statistics s = alloc.statistics();
  // Every growth was made under the bottom, each where a round's need passed the buffer (the
  // page rounding of the buffer leaves some rounds room).
  CHECK(s.regrows_under_live >= 5);
  CHECK(s.regrows == s.regrows_under_live);
  CHECK(s.fallbacks <= 2 + s.regrows_under_live);  // the first round's two, one per growth
  // In a round: the buffer in use, the one it replaced and the first one, and a fallback.
  CHECK(most_held < 4 * alloc.capacity() + first_capacity);
  alloc.reset();
  CHECK(alloc.held() == alloc.capacity());
  (void)bottom;
}

TEST_CASE("under a limit that leaves no room for a second buffer, a blocked growth waits") {
  // 1 KiB buffer + the 16 KiB one would pass 17100 bytes; 1 KiB + two 8000-byte fallbacks fit.
  kbuf_test::Alloc alloc(1024);
  alloc.limit(17100);
  auto bottom = alloc.allocate<char*>(64);
  ten_rounds_of_two(alloc);
  const kbuf::Statistics s = alloc.statistics();
  // Every need past the buffer falls back, and all but the very first awaited the growth.
  CHECK(s.fallbacks == 20);
  CHECK(s.fallbacks_awaiting_growth == 19);
  CHECK(s.regrows == 0);
  CHECK(s.regrows_under_live == 0);
  CHECK(s.limit_refusals == 0);  // the fallbacks fit; the growth was not asked of the limit
  std::ostringstream line;
  line << s;
  CHECK(line.str().find("fallbacks awaiting growth 19") != std::string::npos);
  CHECK(alloc.held() == alloc.capacity());
  (void)bottom;
  alloc.reset();
}
