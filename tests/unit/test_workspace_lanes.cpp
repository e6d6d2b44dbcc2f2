// Whole arenas of kbuf::Workspace on a model of a GPU's team in which every thread of the team
// and every vector lane of each thread is a host thread (tests/support/vector_lanes.hpp), as a
// GPU runs them: a per_thread arena(team) is shared by one thread's vector lanes, a per_team
// arena by the whole team, and an arena for each lane (kbuf 0.6.0's per_thread arenas in a team
// kernel) parts them. Built twice: as the build is, and with KBUF_ENABLE_DEBUG (check mode: every
// take guarded, the team check before each collective step, through the model's lanes).
#include <doctest/doctest.h>

#include <csignal>
#include <cstddef>
#include <vector>

#include <kbuf/kbuf.hpp>

#include "reliability_support.hpp"
#include "vector_lanes.hpp"

#if KBUF_ENABLE_DEBUG
#define KBUF_LANES "workspace lanes (debug): "
#else
#define KBUF_LANES "workspace lanes: "
#endif

namespace {

// How a kernel on the model of a GPU's team gets its arena.
enum class ArenaOf {
  thread,      // a per_thread workspace's arena(team): the thread's, shared by its vector lanes
  lane_token,  // a per_thread workspace's arena(token) with a token each lane holds (kbuf 0.6.0's
               // only per_thread arena): a GPU runs every lane as a thread, each with its own
  team         // a per_team workspace's arena(team): every lane of the team
};

struct LanesRun {
  int wrong = 0;   // entries read back other than written
  int parted = 0;  // groups (threads, or teams) whose lanes got different memory
  int empty = 0;   // takes served nowhere
  kbuf::WorkspaceReport report;
};

// `league` teams of `team` threads of `vector` lanes, each lane a host thread: every thread (or
// team) takes `n` doubles (`large` for every third: a spill past its slot) in two frames, fills
// them through its lanes as a ThreadVectorRange (TeamVectorRange for a team arena) would, meets,
// and reads back entries other lanes wrote. The takes of a frame of a team live at
// once (a team barrier after them), and so do the arenas (one before any ends).
LanesRun run_on_lanes(ArenaOf of, int league, int team, int vector) {
  using host_alloc = kbuf::BufferAllocator<Kokkos::HostSpace>;
  using host_exec = Kokkos::DefaultHostExecutionSpace;
  host_alloc alloc(1 << 22);
  kbuf_test::EmulatedTeams teams(league, team, vector);
  const Kokkos::TeamPolicy<host_exec> policy(league, 1);
  auto scope = alloc.scope();
  auto ws = of == ArenaOf::team
                ? alloc.workspace(policy, kbuf::per_team{1024, 8192}, "lanes model per team")
                : alloc.workspace(policy, kbuf::per_thread{512, 4096}, "lanes model per thread");
  const int n = 40, large = 300;
  const int lanes = league * team * vector;
  std::vector<const void*> pointer(static_cast<std::size_t>(lanes) * 2, nullptr);
  std::vector<int> wrong(static_cast<std::size_t>(lanes), 0), empty(wrong);
  teams.run([&](const kbuf_test::EmulatedTeams::Member& m) {
    const int thread = m.league_rank() * team + m.team_rank();
    const int lane = thread * vector + m.lane();
    const bool whole_team = of == ArenaOf::team;
    // What fills together: a thread's lanes, or the team's.
    const int me = whole_team ? m.league_rank() : thread;
    const int first = whole_team ? m.team_rank() * vector + m.lane() : m.lane();
    const int stride = whole_team ? team * vector : vector;
    auto arena = of == ArenaOf::lane_token ? ws.arena(lane) : ws.arena(m);
    for (int f = 0; f < 2; ++f) {
      auto frame = arena.frame();
      const int size = me % 3 == 0 ? large : n;
      auto v = arena.take<double*>(size);
      double* p = v.data();
      pointer[static_cast<std::size_t>(lane) * 2 + static_cast<std::size_t>(f)] = p;
      m.team_barrier();  // every take of the team's frame is alive: memory held apart is apart
      if (p == nullptr) {
        ++empty[static_cast<std::size_t>(lane)];
        continue;
      }
      if (of == ArenaOf::lane_token) continue;  // each lane holds its own take: nothing to share
      const double x = me + 1000.0 * f;
      for (int j = first; j < size; j += stride) p[j] = x + 0.25 * j;
      if (whole_team) {
        m.team_barrier();
      } else {
        m.vector_barrier();
      }
      for (int j = first; j < size; j += stride) {
        const int k = (j + 5) % size;  // another lane's entry
        wrong[static_cast<std::size_t>(lane)] += p[k] != x + 0.25 * k ? 1 : 0;
      }
    }
    m.team_barrier();  // every arena of the league is alive here
  });
  LanesRun r;
  r.report = ws.finish();
  for (const int w : wrong) r.wrong += w;
  for (const int e : empty) r.empty += e;
  const int group = of == ArenaOf::team ? team * vector : vector;
  for (int g = 0; g < lanes / group; ++g) {
    bool parted = false;
    for (int l = 1; l < group; ++l) {
      for (int f = 0; f < 2; ++f) {
        parted = parted || pointer[static_cast<std::size_t>(g * group + l) * 2 + f] !=
                               pointer[static_cast<std::size_t>(g * group) * 2 + f];
      }
    }
    r.parted += parted ? 1 : 0;
  }
  CHECK(teams.overdue() == 0);  // no lane waited on a meeting its group never completed
  return r;
}

}  // namespace

TEST_CASE(
    KBUF_LANES
    "on a model of a GPU's team (every vector lane a thread), a per_thread "
    "arena(team) is the thread's, shared by its vector lanes: one memory, read back across them") {
  for (const int vector : {1, 4}) {
    CAPTURE(vector);
    const LanesRun r = run_on_lanes(ArenaOf::thread, 3, 2, vector);
    CHECK(r.parted == 0);
    CHECK(r.wrong == 0);
    CHECK(r.empty == 0);
    CHECK(r.report.complete());
    CHECK(r.report.arenas == 3u * 2u);  // one per thread, not per lane
    CHECK(r.report.team_threads == 0u);
    CHECK(r.report.spills + r.report.fallbacks > 0);  // the large takes spilled, through a claim
  }
}

TEST_CASE(
    KBUF_LANES
    "on the model of a GPU's team, an arena for each vector lane (arena(token) "
    "with a token each lane holds, kbuf 0.6.0's only per_thread arena) parts a thread's lanes") {
  const LanesRun r = run_on_lanes(ArenaOf::lane_token, 3, 2, 4);
  CHECK(r.parted == 3 * 2);  // every thread's lanes got different memory
  CHECK(r.report.arenas == 3u * 2u * 4u);
  CHECK(r.empty == 0);
}

TEST_CASE(KBUF_LANES
          "on the model of a GPU's team, a per_team arena is shared by every thread "
          "and vector lane of the team") {
  const LanesRun r = run_on_lanes(ArenaOf::team, 3, 2, 4);
  CHECK(r.parted == 0);
  CHECK(r.wrong == 0);
  CHECK(r.empty == 0);
  CHECK(r.report.complete());
  CHECK(r.report.arenas == 3u);
  CHECK(r.report.team_threads == 2u * 4u);  // the team's lanes, as a GPU's block
}

#if KBUF_ENABLE_DEBUG
TEST_CASE(KBUF_LANES
          "on the model of a GPU's team, a vector lane that takes another size aborts with "
          "the team check's message, in bounded time") {
  const kbuf_rel::ChildResult r = kbuf_rel::run_in_child([&]() {
    std::signal(SIGABRT, SIG_DFL);  // the abort itself, not doctest's report of it
    kbuf::BufferAllocator<Kokkos::HostSpace> alloc(1 << 20);
    kbuf_test::EmulatedTeams teams(1, 2, 4);
    const Kokkos::TeamPolicy<Kokkos::DefaultHostExecutionSpace> policy(1, 1);
    auto scope = alloc.scope();
    auto ws = alloc.workspace(policy, kbuf::per_thread{512, 4096}, "lanes model misuse");
    teams.run([&](const kbuf_test::EmulatedTeams::Member& m) {
      auto arena = ws.arena(m);
      auto v = arena.take<double*>(m.team_rank() == 1 && m.lane() == 2 ? 41 : 40);
      (void)v;
    });
  });
  INFO(r.output);
  CHECK(r.aborted());
  CHECK(r.says("the threads of a team made different takes or frames (a take"));
  CHECK_FALSE(r.says("vector lanes model: a lane held"));  // no lane waited on its group
}
#endif
