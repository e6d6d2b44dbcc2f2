// Failure injection: a regrowth, a fallback and a resize that cannot get memory throw
// kbuf::out_of_memory, leave every observable of the allocator unchanged, keep the contents of
// every earlier temporary, and the allocator keeps working afterwards. Memory is refused by
// asking for more than any machine has (2^50 bytes); sanitizer builds run with
// allocator_may_return_null=1 so that the refusal reaches Kokkos as a failed allocation.
// Built for the foreign space too (contents through host copies): the refusal then comes from
// Kokkos' allocation in a space that is not HostSpace, as on a device.
#include <doctest/doctest.h>

#include "reliability_support.hpp"

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

using namespace kbuf_rel;
using namespace kbuf::literals;
using kbuf_test::Alloc;

namespace {

constexpr std::size_t impossible = std::size_t{1} << 50;  // 1 PiB

/// Everything the allocator lets one observe.
struct Observed {
  std::size_t capacity, used, hwm, alignment, live_fallbacks;
  bool empty;
  kbuf::Statistics stats;
  bool operator==(const Observed& o) const {
    return capacity == o.capacity && used == o.used && hwm == o.hwm && alignment == o.alignment &&
           live_fallbacks == o.live_fallbacks && empty == o.empty &&
           stats.temporaries == o.stats.temporaries && stats.fallbacks == o.stats.fallbacks &&
           stats.fallback_bytes == o.stats.fallback_bytes && stats.regrows == o.stats.regrows &&
           stats.resets == o.stats.resets && stats.peak_used == o.stats.peak_used &&
           stats.peak_live == o.stats.peak_live;
  }
};

template <class A>
Observed observe(const A& a) {
  return {a.capacity(),       a.used(),  a.high_water_mark(), a.alignment(),
          a.live_fallbacks(), a.empty(), a.statistics()};
}

/// A temporary with a pattern that names it, written and read through host copies.
struct Patterned {
  Alloc::view<std::uint32_t*> view;
  std::uint32_t seed;
  void write() const {
    const kbuf_test::HostCopy<Alloc::view<std::uint32_t*>> h(view, false);
    for (std::size_t i = 0; i < view.extent(0); ++i)
      h(i) = seed * 2654435761u + static_cast<std::uint32_t>(i);
    h.copy_back();
  }
  bool intact() const {
    const auto h = kbuf_test::host_copy(view);
    for (std::size_t i = 0; i < view.extent(0); ++i) {
      if (h(i) != seed * 2654435761u + static_cast<std::uint32_t>(i)) return false;
    }
    return true;
  }
};

}  // namespace

TEST_CASE("a fallback that cannot be had throws out_of_memory and changes nothing") {
  Alloc alloc(1_KiB);
  std::vector<Patterned> live;
  for (std::uint32_t k = 0; k < 4; ++k) {  // carved ones, then fallbacks
    live.push_back({alloc.allocate<std::uint32_t*>(40 + 30 * k), k + 1});
    live.back().write();
  }
  REQUIRE(alloc.live_fallbacks() > 0);
  const Observed before = observe(alloc);

  CHECK_THROWS_AS(alloc.allocate<unsigned char*>(impossible), kbuf::out_of_memory);
  CHECK(observe(alloc) == before);
  CHECK_THROWS_AS((alloc.allocate<double**>(impossible / 64, 8)), kbuf::out_of_memory);
  CHECK(observe(alloc) == before);
  for (const auto& t : live) CHECK(t.intact());

  // It keeps working: carving, falling back, resetting in LIFO order.
  const auto cp = alloc.checkpoint();
  live.push_back({alloc.allocate<std::uint32_t*>(4), 77});
  live.back().write();
  live.push_back({alloc.allocate<std::uint32_t*>(5000), 78});
  live.back().write();
  for (const auto& t : live) CHECK(t.intact());
  alloc.reset(cp);
  live.resize(4);
  for (const auto& t : live) CHECK(t.intact());
  CHECK(observe(alloc).used == before.used);
}

TEST_CASE("the out_of_memory message names the size and the memory space") {
  Alloc alloc(1_KiB);
  try {
    (void)alloc.allocate<unsigned char*>(impossible);
    FAIL("no exception");
  } catch (const kbuf::out_of_memory& e) {
    const std::string what = e.what();
    CHECK(what.find(std::to_string(impossible)) != std::string::npos);
    CHECK(what.find(kbuf_test::space::name()) != std::string::npos);
  }
}

TEST_CASE("a regrowth that cannot be had throws out_of_memory and keeps the old buffer") {
  Alloc alloc(1_KiB);
  auto t = alloc.allocate<double*>(8);
  (void)t;
  alloc.reset();
  alloc.sizehint(impossible);  // the next allocate on the empty allocator regrows to it
  const Observed before = observe(alloc);
  CHECK_THROWS_AS(alloc.allocate<double*>(8), kbuf::out_of_memory);
  CHECK(observe(alloc) == before);
  CHECK(alloc.buffer().extent(0) == before.capacity);
  // Lowering the target makes it work again, in the buffer it kept.
  alloc.sizehint(1_KiB, true);
  Patterned p{alloc.allocate<std::uint32_t*>(16), 9};
  p.write();
  CHECK(p.intact());
  CHECK(alloc.statistics().fallbacks == 0);
}

TEST_CASE("a resize that cannot be had throws out_of_memory and keeps the old capacity") {
  Alloc alloc(2_KiB);
  const Observed before = observe(alloc);
  CHECK_THROWS_AS(alloc.resize(impossible), kbuf::out_of_memory);
  CHECK(observe(alloc) == before);
  Patterned p{alloc.allocate<std::uint32_t*>(100), 3};
  p.write();
  CHECK(p.intact());
  CHECK(kbuf_test::inside_buffer(alloc, p.view));
}

TEST_CASE("a failed fallback inside a scope unwinds cleanly and the scope still releases") {
  Alloc alloc(512);
  Patterned outer{alloc.allocate<std::uint32_t*>(8), 1};
  outer.write();
  const Observed before = observe(alloc);
  try {
    auto s = alloc.scope();
    Patterned inner{alloc.allocate<std::uint32_t*>(1000), 2};  // a fallback
    inner.write();
    (void)alloc.allocate<double*>(impossible);
    FAIL("no exception");
  } catch (const kbuf::out_of_memory&) {
  }
  CHECK(outer.intact());
  CHECK(alloc.used() == before.used);
  CHECK(alloc.live_fallbacks() == 0);
  CHECK(alloc.high_water_mark() > before.hwm);  // the inner fallback was needed once
}
