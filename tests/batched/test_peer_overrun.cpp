// A peer routine that writes out of bounds, on a kbuf arena. Kokkos Kernels' TeamVectorQR on a
// tall matrix (16 x 10, row-major as a take is by default; tau and the work array of 10) runs
// its loop to m, not min(m, n): it writes 6 doubles past A and 6 past tau. Without check mode
// the first lands in tau, the take after A, and corrupts it; in check mode (pass-through mode
// here) both land in guard zones, tau comes out right, and the workspace reports two overruns,
// the first of them A (take 0) with 48 bytes written past its end.
#include <doctest/doctest.h>

#if defined(KBUF_TEST_FOREIGN_SPACE) && KBUF_TEST_FOREIGN_SPACE
// The foreign space as a device: the kernel reads and writes its takes there, as a CUDA kernel
// does CudaSpace's; host code may not (tau comes back through a mirror).
#include "foreign_kernels.hpp"
#endif

#include <KokkosBatched_QR_Decl.hpp>
#include <KokkosBatched_QR_TeamVector_Impl.hpp>

#include <cstdlib>
#include <string>
#include <vector>

#include "test_support.hpp"

namespace {

using kbuf_test::space;
using Alloc = kbuf::BufferAllocator<space>;
using exec = space::execution_space;
using team_policy = Kokkos::TeamPolicy<exec>;
using member = team_policy::member_type;

constexpr int m = 16, n = 10;

// One team: A (m x n, the take's default LayoutRight; with `slack` > 0, the first m n doubles of
// a take that many doubles longer), tau (`tau` entries) and w (n) from the arena; A filled with
// a fixed well-conditioned matrix; TeamVectorQR; tau's first n entries out.
struct TallQr {
  using matrix = kbuf::Workspace<space>::view<double**>;
  kbuf::Workspace<space> ws;
  int slack, tau;
  Kokkos::View<double*, space> out;
  KOKKOS_INLINE_FUNCTION void operator()(const member& team) const {
    namespace KB = KokkosBatched;
    auto arena = ws.arena(team);
    const matrix A = slack > 0 ? matrix(arena.take<double*>(m * n + slack).data(), m, n)
                               : arena.take<double**>(m, n);
    auto t_all = arena.take<double*>(tau);
    auto w = arena.take<double*>(n);
    if (!arena.ok()) return;
    Kokkos::single(Kokkos::PerTeam(team), [&]() {
      for (int i = 0; i < m; ++i) {
        for (int j = 0; j < n; ++j) A(i, j) = 1.0 / (1 + i + 2 * j) + (i == j ? 1 : 0);
      }
    });
    team.team_barrier();
    const auto t = Kokkos::subview(t_all, Kokkos::make_pair(0, n));
    KB::TeamVectorQR<member, KB::Algo::QR::Unblocked>::invoke(team, A, t, w);
    team.team_barrier();
    Kokkos::single(Kokkos::PerTeam(team), [&]() {
      for (int i = 0; i < n; ++i) out(i) = t_all(i);
    });
  }
};

struct Run {
  kbuf::WorkspaceReport report;
  std::vector<double> tau;
};

// TeamVectorQR on takes of exactly the sizes it asks for, or (`room`) with room for what it
// writes past A and tau.
Run tall_qr(bool room) {
  Alloc alloc(1 << 16);
  const team_policy policy(alloc.execution_space_instance(), 1, 1);
  auto scope = alloc.scope();
  auto ws = alloc.workspace(policy, kbuf::per_team{16 * 1024}, "tall QR");
  Kokkos::View<double*, space> out("tau", n);
  Kokkos::parallel_for("tall QR", policy, TallQr{ws, room ? m : 0, room ? m : n, out});
  Run r;
  r.report = ws.finish();
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), out);
  for (int i = 0; i < n; ++i) r.tau.push_back(h(i));
  return r;
}

}  // namespace

TEST_CASE(
    "a peer's tall QR writes past A into tau without check mode, and check mode reports it and "
    "keeps tau") {
  Run reference, plain, checked;
  {
    kbuf_test::ScopedEnv off("KBUF_PASSTHROUGH", "0");
    reference = tall_qr(true);  // room for the overruns: the right values
    plain = tall_qr(false);     // exact sizes: the overrun of A lands in tau
  }
  {
    kbuf_test::ScopedEnv on("KBUF_PASSTHROUGH", "1");
    checked = tall_qr(false);
  }
  REQUIRE(reference.tau.size() == static_cast<std::size_t>(n));
  if (!kbuf::debug_checks_enabled) {
    CHECK_FALSE(plain.report.checked);
    CHECK(plain.report.overruns == 0);
    int corrupted = 0;
    for (int i = 0; i < n; ++i) corrupted += plain.tau[i] != reference.tau[i] ? 1 : 0;
    CHECK(corrupted == 6);  // A's 6 doubles past its end are tau's first 6 entries
  }
  CHECK(checked.report.checked);
  CHECK(checked.report.overruns == 2);  // A and tau
  CHECK(checked.report.first_overrun_take == 0);
  CHECK(checked.report.first_overrun_bytes == 6 * sizeof(double));
  for (int i = 0; i < n; ++i) CHECK(checked.tau[i] == reference.tau[i]);
  CHECK(checked.report.complete());
}
