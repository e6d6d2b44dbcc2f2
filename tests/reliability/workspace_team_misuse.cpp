// A team whose threads make different takes, with debug checks: the arena's next collective step
// aborts and says why, and never hangs. Modes (the first argument):
//   (none)            a take inside Kokkos::single that fits the slot; the frame's end checks
//   --spill-in-single a take inside Kokkos::single that spills: the one thread in the single
//                     reaches the spill alone, so the check there cannot be a barrier of the team;
//                     the others meet it at the frame's end
//   --spill-in-broadcast the same inside a Kokkos::single that broadcasts a value: the others
//                     wait in the single's broadcast and never come; the check gives up after
//                     KBUF_WORKSPACE_CHECK_MS
//   --spill-in-range  takes inside TeamThreadRange over three items: one thread makes two (the
//                     second spills), the other one
//   --correct         the first kernel with the take outside the single: ends normally and
//                     says in how many milliseconds its kernel ran (a check that waited on a
//                     lane of its own wavefront would wait KBUF_WORKSPACE_CHECK_MS, then abort)
// Needs teams of two threads or more (a host backend with threads: OpenMP, or a GPU); CTest runs
// it with OMP_NUM_THREADS=2 and a short KBUF_WORKSPACE_CHECK_MS.
#include <kbuf/kbuf.hpp>

#include <cstdio>
#include <cstring>

static_assert(KBUF_ENABLE_DEBUG == 1, "compiled with KBUF_ENABLE_DEBUG=1");

namespace {

using Alloc = kbuf::BufferAllocator<>;
using exec = Alloc::execution_space;
using WS = kbuf::Workspace<Alloc::memory_space>;
using member = Kokkos::TeamPolicy<exec>::member_type;

enum class Mode { fits_in_single, spill_in_single, spill_in_broadcast, spill_in_range, correct };

// The slot holds 4096 bytes: a take of 8 doubles fits, one of 1024 spills.
struct Body {
  WS ws;
  Mode mode;
  KOKKOS_INLINE_FUNCTION void operator()(const member& team) const {
    auto arena = ws.arena(team);
    switch (mode) {
      case Mode::fits_in_single:
        Kokkos::single(Kokkos::PerTeam(team), [&]() { (void)arena.take<double*>(8); });
        break;
      case Mode::spill_in_single:
        Kokkos::single(Kokkos::PerTeam(team), [&]() { (void)arena.take<double*>(1024); });
        break;
      case Mode::spill_in_broadcast: {
        int seen = 0;
        Kokkos::single(
            Kokkos::PerTeam(team),
            [&](int& v) {
              auto w = arena.take<double*>(1024);
              v = w.data() != nullptr ? 1 : 0;
            },
            seen);
        (void)seen;
        break;
      }
      case Mode::spill_in_range:
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, 3),
                             [&](const int i) { (void)arena.take<double*>(i < 2 ? 8 : 1024); });
        break;
      case Mode::correct:
        (void)arena.take<double*>(8);
        break;
    }
    auto frame = arena.frame();  // its end is the next collective step
    (void)arena.take<double*>(8);
  }
};

}  // namespace

int main(int argc, char* argv[]) {
  Mode mode = Mode::fits_in_single;
  if (argc > 1 && std::strcmp(argv[1], "--correct") == 0) mode = Mode::correct;
  if (argc > 1 && std::strcmp(argv[1], "--spill-in-single") == 0) mode = Mode::spill_in_single;
  if (argc > 1 && std::strcmp(argv[1], "--spill-in-range") == 0) mode = Mode::spill_in_range;
  if (argc > 1 && std::strcmp(argv[1], "--spill-in-broadcast") == 0) {
    mode = Mode::spill_in_broadcast;
  }
  Kokkos::ScopeGuard guard(argc, argv);
  {
    Alloc alloc(1 << 20);
    const Kokkos::TeamPolicy<exec> probe(alloc.execution_space_instance(), 4, 1);
    if (probe.team_size_max(Body{WS(), Mode::correct}, Kokkos::ParallelForTag()) < 2) {
      std::printf("teams of one thread only: nothing to check\n");
      return 1;
    }
    const Kokkos::TeamPolicy<exec> policy(alloc.execution_space_instance(), 4, 2);
    auto scope = alloc.scope();
    auto ws = alloc.workspace(policy, kbuf::per_team{4096}, "misuse");
    Kokkos::Timer timer;
    Kokkos::parallel_for("misuse", policy, Body{ws, mode});
    Kokkos::fence();
    const double ms = timer.seconds() * 1e3;
    (void)ws.finish();
    std::printf("ended normally; the kernel ran %.1f ms\n", ms);
  }
  return 0;
}
