// The ArborX-shaped query library (query/) run as its caller would: ten calls on the caller's
// instance, under kbuf::use with a long-lived temporary of the caller's held across them, each
// call's neighbours checked against a naive reference computed here. Built three times: the
// library with kbuf, with kbuf's debug checks, and without kbuf (plain Views): the same answers.
#include <doctest/doctest.h>

#include <kbuf/kbuf.hpp>

#include "query.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace {

/// 200 points in the unit square from a fixed linear congruential sequence.
Kokkos::View<double* [2], Kokkos::HostSpace> make_points(int n) {
  Kokkos::View<double* [2], Kokkos::HostSpace> p("points", n);
  std::uint64_t x = 12345;
  for (int i = 0; i < n; ++i) {
    for (int d = 0; d < 2; ++d) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      p(i, d) = static_cast<double>(x >> 11) / static_cast<double>(1ull << 53);
    }
  }
  return p;
}

/// The neighbours of each point, by the definition: every j within r of i, in increasing order.
std::vector<std::vector<int>> naive(const Kokkos::View<double* [2], Kokkos::HostSpace>& p,
                                    double r) {
  const int n = static_cast<int>(p.extent(0));
  std::vector<std::vector<int>> rows(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      const double dx = p(i, 0) - p(j, 0), dy = p(i, 1) - p(j, 1);
      if (dx * dx + dy * dy <= r * r) rows[static_cast<std::size_t>(i)].push_back(j);
    }
  }
  return rows;
}

/// Rows of `offsets`/`indices` that differ from `reference`.
int differing_rows(const qlib::offsets_type& offsets, const qlib::offsets_type& indices,
                   const std::vector<std::vector<int>>& reference) {
  int wrong = 0;
  for (std::size_t i = 0; i < reference.size(); ++i) {
    const std::vector<int> row(indices.data() + offsets(i), indices.data() + offsets(i + 1));
    wrong += row == reference[i] ? 0 : 1;
  }
  return wrong;
}

}  // namespace

TEST_CASE(
    "ten queries on the caller's instance with a caller's temporary held across them: "
    "every answer the naive one") {
  constexpr int n = 200;
  constexpr double radius = 0.1;
  const auto points = make_points(n);
  const auto reference = naive(points, radius);
  const qlib::execution_space space;
  // A buffer too small for the library: the first call falls back, and the growth it leaves
  // due is blocked by the caller's temporary, so the second call grows the buffer under it.
  kbuf::BufferAllocator<Kokkos::HostSpace> alloc(8192);
  kbuf::use current(alloc);
  auto held = alloc.allocate<double*>(512);  // the caller's, live across every call
  const std::size_t held_bytes = alloc.used();
  std::size_t fallbacks_after_first = 0;
  for (int step = 0; step < 10; ++step) {
    CAPTURE(step);
    qlib::offsets_type offsets, indices;
    qlib::neighbors(space, points, radius, offsets, indices);
    REQUIRE(offsets.extent(0) == static_cast<std::size_t>(n + 1));
    CHECK(differing_rows(offsets, indices, reference) == 0);
    CHECK(offsets.label() == "qlib::offsets");
    CHECK(alloc.used() == held_bytes);  // the call released everything it took
    if (step == 0) fallbacks_after_first = alloc.statistics().fallbacks;
  }
  CHECK(alloc.statistics().fallbacks == fallbacks_after_first);
#if QLIB_USES_KBUF
  CHECK(alloc.statistics().temporaries > 10);  // the library's buffers came from the allocator
  CHECK(fallbacks_after_first > 0);
  // Every growth was made under the caller's temporary (the allocator was never empty).
  CHECK(alloc.statistics().regrows_under_live >= 1);
  CHECK(alloc.statistics().regrows == alloc.statistics().regrows_under_live);
  CHECK(alloc.statistics().fallbacks_awaiting_growth < fallbacks_after_first);
#else
  CHECK(alloc.statistics().temporaries == 1);  // only the caller's: the library made plain Views
#endif
  (void)held;
}

namespace {
const kbuf::owner label_check{"label_check"};
}  // namespace

TEST_CASE(
    "a served temporary's label() is empty in release and debug builds alike, a plain View's is "
    "its label") {
  // A library that derives an allocation's label from label() gets the same one in every build.
  kbuf::BufferAllocator<Kokkos::HostSpace> alloc(1 << 16);
  const auto plain = kbuf::temporary<int*, Kokkos::LayoutRight, Kokkos::HostSpace>(
      label_check, "check::plain", 8);  // no scope: a plain View
  CHECK(plain.label() == "check::plain");
  kbuf::use current(alloc);
  auto scope = kbuf::scope<Kokkos::HostSpace>(label_check);
  const auto served = kbuf::temporary<int*, Kokkos::LayoutRight, Kokkos::HostSpace>(
      label_check, "check::served", 8);
  const auto on_instance = kbuf::temporary<qlib::offsets_type>(qlib::execution_space(), label_check,
                                                               "check::on_instance", 8);
  CHECK(alloc.statistics().temporaries == 2);
  CHECK(served.label().empty());
  CHECK(on_instance.label().empty());
#if KBUF_ENABLE_DEBUG
  CHECK(served.use_count() == 2);  // counted: the scope's reference and this one
#else
  CHECK(served.use_count() == 0);              // unmanaged
#endif
}
