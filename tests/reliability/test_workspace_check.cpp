// kbuf::Workspace's check mode: in pass-through mode (KBUF_PASSTHROUGH=1 when the allocator is
// made) every take is followed by a guard zone, checked when its frame or arena ends; a write
// past a take is counted in WorkspaceReport::overruns with the take's index and the bytes
// written past it, wherever the take was served (slot, lane, fallback). Without check mode the
// same write lands silently in the next take: the test pins that too.
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "test_support.hpp"

using kbuf_test::Alloc;
using kbuf_test::space;

namespace {

using namespace kbuf_test::workspace_types;
using counts = Kokkos::View<double*, space>;

// Team 0 takes `a` (n doubles: a multiple of the alignment, so b follows at once) and `b`
// (n doubles), fills b with 1, then writes `past` doubles
// of 7 beyond the end of a (a routine that overruns its work array), in a frame; the other teams
// take and fill within bounds. seen[i]: b[i] after the overrun, i < past.
struct Overrun {
  WS ws;
  int n, past;
  counts seen;
  KOKKOS_INLINE_FUNCTION void operator()(const member& team) const {
    auto arena = ws.arena(team);
    auto frame = arena.frame();
    auto a = arena.take<double*>(n);
    auto b = arena.take<double*>(n);
    double* pa = a.data();
    double* pb = b.data();
    if (pa == nullptr || pb == nullptr) return;
    Kokkos::single(Kokkos::PerTeam(team), [&]() {
      for (int i = 0; i < n; ++i) pb[i] = 1.0;
      for (int i = 0; i < n; ++i) pa[i] = 2.0;
      if (team.league_rank() == 0) {
        for (int i = 0; i < past; ++i) pa[n + i] = 7.0;  // out of bounds by design
        for (int i = 0; i < past; ++i) seen.data()[i] = pb[i];
      }
    });
  }
};

kbuf::WorkspaceReport run(Alloc& alloc, kbuf::per_team size, int n, int past,
                          std::vector<double>* seen) {
  const team_policy policy(alloc.execution_space_instance(), 4, 1);
  auto scope = alloc.scope();
  auto ws = alloc.workspace(policy, size, "overrun");
  counts s("seen", past > 0 ? past : 1);
  Kokkos::parallel_for("overrun", policy, Overrun{ws, n, past, s});
  const kbuf::WorkspaceReport r = ws.finish();
  if (seen != nullptr) *seen = kbuf_test::host_vector(s);
  return r;
}

}  // namespace

TEST_CASE("workspace check: without check mode a write past a take lands in the next one") {
  kbuf_test::ScopedEnv off("KBUF_PASSTHROUGH", "0");
  Alloc alloc(1 << 16);
  if (alloc.passthrough() || kbuf::debug_checks_enabled) return;  // check mode by build
  std::vector<double> seen;
  const kbuf::WorkspaceReport r = run(alloc, kbuf::per_team{4096}, 64, 6, &seen);
  CHECK_FALSE(r.checked);
  CHECK(r.overruns == 0);
  for (const double v : seen) CHECK(v == 7.0);  // b's first six entries overwritten
}

TEST_CASE(
    "workspace check: in pass-through mode a write past a take is counted, with its index and "
    "bytes") {
  kbuf_test::ScopedEnv on("KBUF_PASSTHROUGH", "1");
  Alloc alloc(1 << 16);
  REQUIRE(alloc.passthrough());
  SUBCASE("in the slot") {
    std::vector<double> seen;
    const kbuf::WorkspaceReport r = run(alloc, kbuf::per_team{4096}, 64, 6, &seen);
    CHECK(r.checked);
    CHECK(r.overruns == 1);
    CHECK(r.first_overrun_take == 0);
    CHECK(r.first_overrun_bytes == 6 * sizeof(double));
    for (const double v : seen) CHECK(v == 1.0);  // the guard zone took the write, not b
    CHECK(r.complete());
  }
  SUBCASE("in a lane and in a fallback") {
    // A slot too small for either take, one lane for the first: the second falls back.
    const kbuf::WorkspaceReport r =
        run(alloc, kbuf::per_team{64, 2048}, 100, 3, static_cast<std::vector<double>*>(nullptr));
    CHECK(r.checked);
    CHECK(r.spills >= 1);
    CHECK(r.fallbacks >= 1);
    CHECK(r.overruns == 1);
    CHECK(r.first_overrun_bytes == 3 * sizeof(double));
  }
  SUBCASE("a write within bounds is no overrun") {
    const kbuf::WorkspaceReport r =
        run(alloc, kbuf::per_team{4096}, 64, 0, static_cast<std::vector<double>*>(nullptr));
    CHECK(r.checked);
    CHECK(r.overruns == 0);
  }
  SUBCASE("the need counts the guard zones, so a rerun in check mode fits") {
    const kbuf::WorkspaceReport first =
        run(alloc, kbuf::per_team{64}, 40, 0, static_cast<std::vector<double>*>(nullptr));
    CHECK(first.fallbacks > 0);
    const kbuf::WorkspaceReport second =
        run(alloc, kbuf::per_team{64}, 40, 0, static_cast<std::vector<double>*>(nullptr));
    CHECK(second.fallbacks == 0);
    CHECK(second.overruns == 0);
  }
}
