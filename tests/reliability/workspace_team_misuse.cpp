// A team whose threads make different takes (one inside Kokkos::single), with debug checks: the
// next collective step of the arena aborts and says why. `--correct` runs the same kernel with
// the take outside the single, which must end normally. Needs teams of two threads or more
// (a host backend with threads: OpenMP); CTest runs it with OMP_NUM_THREADS=2.
#include <kbuf/kbuf.hpp>

#include <cstdio>
#include <cstring>

static_assert(KBUF_ENABLE_DEBUG == 1, "compiled with KBUF_ENABLE_DEBUG=1");

namespace {

using Alloc = kbuf::BufferAllocator<>;
using exec = Alloc::execution_space;
using WS = kbuf::Workspace<Alloc::memory_space>;
using member = Kokkos::TeamPolicy<exec>::member_type;

struct Body {
  WS ws;
  bool misuse;
  KOKKOS_INLINE_FUNCTION void operator()(const member& team) const {
    auto arena = ws.arena(team);
    if (misuse) {
      Kokkos::single(Kokkos::PerTeam(team), [&]() { (void)arena.take<double*>(8); });
    } else {
      (void)arena.take<double*>(8);
    }
    auto frame = arena.frame();  // its end is the next collective step
    (void)arena.take<double*>(8);
  }
};

}  // namespace

int main(int argc, char* argv[]) {
  const bool correct = argc > 1 && std::strcmp(argv[1], "--correct") == 0;
  Kokkos::ScopeGuard guard(argc, argv);
  {
    Alloc alloc(1 << 16);
    const Kokkos::TeamPolicy<exec> probe(alloc.execution_space_instance(), 4, 1);
    if (probe.team_size_max(Body{WS(), false}, Kokkos::ParallelForTag()) < 2) {
      std::printf("teams of one thread only: nothing to check\n");
      return 1;
    }
    const Kokkos::TeamPolicy<exec> policy(alloc.execution_space_instance(), 4, 2);
    auto scope = alloc.scope();
    auto ws = alloc.workspace(policy, kbuf::per_team{4096}, "misuse");
    Kokkos::parallel_for("misuse", policy, Body{ws, !correct});
    (void)ws.finish();
    std::printf("ended normally\n");
  }
  return 0;
}
