// The foreign space as a device (support/foreign_kernels.hpp): kernels of its execution space
// read and write its Views; host code between kernels, and kernels of other execution spaces,
// may not; a kbuf temporary in it is filled, permuted and read back by kernels.
#include <doctest/doctest.h>

#include "foreign_kernels.hpp"
#include "reliability_support.hpp"
#include "tool_recorder.hpp"

#include <cstdint>
#include <type_traits>

using kbuf_rel::ChildResult;
using kbuf_rel::run_in_child;
using kbuf_test::foreign_space;
using kbuf_test::foreign_kernels::device_execution_space;
using kbuf_test::foreign_kernels::inside_device_kernel;

namespace {

using View = Kokkos::View<double*, foreign_space>;
using Policy = Kokkos::RangePolicy<device_execution_space>;

// Values a kernel writes: v(i) = 3 i + 1.
void fill_in_kernel(const View& v) {
  Kokkos::parallel_for(
      "fill", Policy(std::size_t{0}, v.extent(0)),
      KOKKOS_LAMBDA(const std::size_t i) { v(i) = 3.0 * i + 1; });
}

}  // namespace

static_assert(std::is_same<kbuf_test::space, foreign_space>::value,
              "this test runs over the foreign space");
static_assert(!Kokkos::SpaceAccessibility<Kokkos::HostSpace, foreign_space>::accessible,
              "host code may not reach the foreign space");

TEST_CASE("kernels of the foreign space's execution space read and write its Views") {
  REQUIRE(kbuf_test::foreign_kernels::installed);
  const View v("v", 100);
  fill_in_kernel(v);
  double sum = 0;
  Kokkos::parallel_reduce(
      "sum", Policy(std::size_t{0}, std::size_t{100}),
      KOKKOS_LAMBDA(const std::size_t i, double& s) { s += v(i); }, sum);
  CHECK(sum == 3.0 * 4950 + 100);
  const auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  for (std::size_t i = 0; i < 100; ++i) CHECK(h(i) == 3.0 * i + 1);
}

TEST_CASE("a kbuf temporary in the foreign space: filled, scanned and read back by kernels") {
  kbuf_test::Alloc alloc(4096);
  auto scope = alloc.scope();
  auto a = alloc.allocate<double*>(64);
  auto b = alloc.allocate<double*>(64);
  fill_in_kernel(a);
  Kokkos::parallel_scan(
      "prefix", Policy(std::size_t{0}, std::size_t{64}),
      KOKKOS_LAMBDA(const std::size_t i, double& partial, bool last) {
        partial += a(i);
        if (last) b(i) = partial;
      });
  const auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), b);
  for (std::size_t i = 0; i < 64; ++i) {
    CAPTURE(i);
    CHECK(h(i) == 1.5 * i * (i + 1) + (i + 1));
  }
}

TEST_CASE("the gate is open inside kernels of the device execution space only") {
  CHECK_FALSE(inside_device_kernel());
  int inside = -1;
  int* const out = &inside;
  Kokkos::parallel_for("probe", Policy(std::size_t{0}, std::size_t{1}),
                       [out](std::size_t) { *out = inside_device_kernel() ? 1 : 0; });
  Kokkos::fence();
  CHECK(inside == 1);
  CHECK_FALSE(inside_device_kernel());  // closed again after the kernel
  if (!std::is_same<Kokkos::DefaultHostExecutionSpace, device_execution_space>::value) {
    // A kernel of the host execution space (OpenMP) is host code for the foreign space.
    inside = -1;
    Kokkos::parallel_for(
        "host probe",
        Kokkos::RangePolicy<Kokkos::DefaultHostExecutionSpace>(std::size_t{0}, std::size_t{1}),
        [out](std::size_t) { *out = inside_device_kernel() ? 1 : 0; });
    Kokkos::fence();
    CHECK(inside == 0);
  }
}

TEST_CASE("host code between kernels may not dereference a View of the foreign space") {
  const View v("v", 4);
  fill_in_kernel(v);  // the gate opened and closed
  const ChildResult r = run_in_child([&v] {
    const double x = v(2);
    (void)x;
  });
  CHECK(r.aborted());
  CHECK(r.says("attempt to access inaccessible memory space"));

  // A subview is a View of the foreign space as well.
  const ChildResult s = run_in_child([&v] {
    const auto sub = Kokkos::subview(v, std::make_pair(1, 3));
    sub(0) = 5;
  });
  CHECK(s.aborted());
  CHECK(s.says("attempt to access inaccessible memory space"));
}

TEST_CASE("a Kokkos Tools recorder keeps the gate working, and puts its callbacks back") {
  const View v("v", 8);
  {
    kbuf_test::ToolRecorder rec;
    fill_in_kernel(v);  // through the recorder's callback, chained to the gate's
    CHECK(rec.count(kbuf_test::ToolEvent::kernel) >= 1);
  }
  fill_in_kernel(v);  // the gate's callbacks are back
  const auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  CHECK(h(7) == 22.0);
  CHECK_FALSE(inside_device_kernel());
}
