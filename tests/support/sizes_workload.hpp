// The workspace kernel of the saved-sizes tests (tests/unit/test_sizes_file.cpp, the KBUF_SIZES
// programs tests/unit/sizes_env.cpp and tests/mpi/sizes_env_mpi.cpp): its first round from a
// guess of 0 bytes falls back, a round from learned or saved sizes does not.
#ifndef KBUF_TEST_SIZES_WORKLOAD_HPP
#define KBUF_TEST_SIZES_WORKLOAD_HPP

#include <kbuf/kbuf.hpp>

namespace kbuf_test {

/// Per team of a per_team workspace in the default memory space: `n` doubles, `big` for every
/// 64th team, written by the team's threads and read back by one of them; `wrong[0]` counts the
/// entries that did not read back.
struct SizesTakes {
  using space = kbuf::default_memory_space;
  using member = Kokkos::TeamPolicy<space::execution_space>::member_type;
  kbuf::Workspace<space> ws;
  int n, big;
  Kokkos::View<long long*, space> wrong;
  KOKKOS_INLINE_FUNCTION void operator()(const member& team) const {
    auto arena = ws.arena(team);
    const int me = team.league_rank();
    const int m = me % 64 == 0 ? big : n;
    auto a = arena.take<double*>(m);
    double* p = a.data();
    if (p == nullptr) return;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, m), [&](const int i) { p[i] = me + i; });
    team.team_barrier();
    Kokkos::single(Kokkos::PerTeam(team), [&]() {
      for (int i = 0; i < m; ++i)
        if (p[i] != me + i) Kokkos::atomic_add(&wrong.data()[0], 1ll);
    });
  }
};

}  // namespace kbuf_test

#endif  // KBUF_TEST_SIZES_WORKLOAD_HPP
