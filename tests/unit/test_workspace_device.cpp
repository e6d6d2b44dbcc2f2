// kbuf::Workspace in the shapes a GPU runs: leagues of at least sixteen times the slots (every
// slot reused many times), teams of up to 128 threads with vector lengths 1 and 8, every take
// filled by all of a team's threads and vector lanes and checked, one lane shared by many
// spilling arenas, per_thread arenas that spill, and the bytes held against fixed slots once
// the workspace has learned. On the host these run on OpenMP's threads (and Serial); the GPU
// check runs them on the device, where thousands of teams are in flight.
#include <doctest/doctest.h>

#include <cstddef>
#include <cstdio>
#include <string>
#include <vector>

#include "test_support.hpp"

using kbuf_test::Alloc;
using kbuf_test::space;

namespace {

using namespace kbuf_test::workspace_types;
using counts = Kokkos::View<long long*, space>;

// Each team takes `n` ints (`large` for every `every`-th team) in each of `frames` frames, fills
// them with its rank through its threads and vector lanes, and checks them after a barrier;
// occupancy[slot] counts the teams inside a slot. out[0]: wrong entries, out[1]: a second holder
// seen, out[2]: empty takes.
struct Fill {
  WS ws;
  int n, large, every, frames;
  counts out, occupancy;
  KOKKOS_INLINE_FUNCTION void operator()(const member& team) const {
    auto arena = ws.arena(team);
    const int me = team.league_rank();
    const int slot = arena.slot();
    if (slot >= 0) {
      Kokkos::single(Kokkos::PerTeam(team), [&]() {
        if (Kokkos::atomic_fetch_add(&occupancy.data()[slot], 1ll) != 0) {
          Kokkos::atomic_add(&out.data()[1], 1ll);
        }
      });
    }
    const int m = me % every == 0 ? large : n;
    for (int f = 0; f < frames; ++f) {
      auto frame = arena.frame();
      auto v = arena.take<int**>(m, 4);
      int* p = v.data();
      if (p == nullptr) {
        Kokkos::single(Kokkos::PerTeam(team), [&]() { Kokkos::atomic_add(&out.data()[2], 1ll); });
        continue;
      }
      const int x = me * 16 + f;
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, m), [&](const int i) {
        Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, 4),
                             [&](const int j) { p[4 * i + j] = x + j; });
      });
      team.team_barrier();
      long long w = 0;
      Kokkos::parallel_reduce(
          Kokkos::TeamThreadRange(team, m),
          [&](const int i, long long& acc) {
            const int k = m - 1 - i;  // what another thread wrote
            for (int j = 0; j < 4; ++j) acc += p[4 * k + j] != x + j ? 1 : 0;
          },
          w);
      Kokkos::single(Kokkos::PerTeam(team), [&]() {
        if (w != 0) Kokkos::atomic_add(&out.data()[0], w);
      });
    }
    if (slot >= 0) {
      team.team_barrier();
      Kokkos::single(Kokkos::PerTeam(team),
                     [&]() { Kokkos::atomic_add(&occupancy.data()[slot], -1ll); });
    }
  }
};

// per_thread: each iteration takes `n` doubles (`large` for every `every`-th one), fills and
// checks them.
struct ThreadFill {
  WS ws;
  Kokkos::Experimental::UniqueToken<exec, Kokkos::Experimental::UniqueTokenScope::Global> token;
  int n, large, every;
  counts out;  // [0]: wrong entries, [1]: empty takes
  KOKKOS_INLINE_FUNCTION void operator()(const int i) const {
    const int t = token.acquire();
    {
      auto arena = ws.arena(t);
      const int m = i % every == 0 ? large : n;
      auto v = arena.take<double*>(m);
      double* p = v.data();
      if (p == nullptr) {
        Kokkos::atomic_add(&out.data()[1], 1ll);
      } else {
        for (int j = 0; j < m; ++j) p[j] = i + 0.5 * j;
        long long w = 0;
        for (int j = 0; j < m; ++j) w += p[j] != i + 0.5 * j ? 1 : 0;
        if (w != 0) Kokkos::atomic_add(&out.data()[0], w);
      }
    }
    token.release(t);
  }
};

// A league of sixteen times the slots a per_team workspace gets for `policy` (made and finished
// at once to count them), at least 64: every slot is reused many times.
int league_for(Alloc& alloc, const team_policy& policy) {
  auto scope = alloc.scope();
  auto ws = alloc.workspace(policy, kbuf::per_team{0}, "slots probe");
  const int slots = static_cast<int>(ws.slots());
  (void)ws.finish();
  return 16 * slots > 64 ? 16 * slots : 64;
}

// The team sizes and vector lengths this backend allows, among those a GPU run uses.
std::vector<std::pair<int, int>> shapes(const Alloc& alloc) {
  const team_policy probe(alloc.execution_space_instance(), 1, 1);
  const int most_team =
      probe.team_size_max(Fill{WS(), 1, 1, 1, 1, counts(), counts()}, Kokkos::ParallelForTag());
  const int most_vector = team_policy::vector_length_max();
  std::vector<std::pair<int, int>> out;
  for (const int team : {1, 32, 128}) {
    for (const int vector : {1, 8}) {
      const int t = team < most_team ? team : most_team;
      const int v = vector < most_vector ? vector : most_vector;
      if (t * v > 1024) continue;
      const std::pair<int, int> s{t, v};
      bool seen = false;
      for (const auto& o : out) seen = seen || o == s;
      if (!seen) out.push_back(s);
    }
  }
  return out;
}

}  // namespace

TEST_CASE(
    "workspace device: leagues of sixteen times the slots, every team's takes filled by its "
    "threads and lanes, one holder per slot") {
  Alloc alloc(1 << 20);
  for (const auto& shape : shapes(alloc)) {
    const int team = shape.first;
    const int vector = shape.second;
    CAPTURE(team);
    CAPTURE(vector);
    const team_policy sizing(alloc.execution_space_instance(), 1 << 20, team, vector);
    const int league = league_for(alloc, sizing);
    auto scope = alloc.scope();
    const team_policy policy(alloc.execution_space_instance(), league, team, vector);
    const std::string label = "device fill " + std::to_string(team) + "x" + std::to_string(vector);
    for (int round = 1; round <= 2; ++round) {
      CAPTURE(round);
      auto ws = alloc.workspace(policy, kbuf::per_team{1024}, label);
      counts out("out", 3);
      counts occupancy("occupancy", ws.slots());
      Kokkos::parallel_for("device fill", policy, Fill{ws, 200, 4000, 97, 3, out, occupancy});
      const kbuf::WorkspaceReport r = ws.finish();
      CHECK(kbuf_test::nonzero_entries(out) == "");
      CHECK(r.complete());
      CHECK(r.arenas == static_cast<std::size_t>(league));
      CHECK(r.unslotted_arenas == 0);  // never more teams in flight than slots
      for (const long long x : kbuf_test::host_vector(occupancy)) CHECK(x == 0);
      if (round == 2) CHECK(r.spill_peak <= r.lane_bytes);
      if (round == 2 && ws.slots() > 1) {
        std::printf(
            "workspace device: team %d x vector %d, league %d, %zu slots: slot %zu B, %zu lanes "
            "of %zu B, %zu B held against %zu B for fixed slots of the largest need; %zu "
            "fallbacks, %zu lanes missed\n",
            team, vector, league, ws.slots(), ws.slot_bytes(), ws.spill_lanes(), ws.lane_bytes(),
            ws.slots() * ws.slot_bytes() + ws.spill_bytes(), ws.slots() * r.peak_slot_bytes,
            r.fallbacks, r.lanes_missed);
        CHECK(ws.slots() * ws.slot_bytes() + ws.spill_bytes() <= ws.slots() * r.peak_slot_bytes);
      }
    }
  }
}

TEST_CASE("workspace device: one lane, many spilling teams: the rest fall back, all served") {
  Alloc alloc(1 << 20);
  const team_policy sizing(alloc.execution_space_instance(), 1 << 20, 1);
  const int league = league_for(alloc, sizing);
  auto scope = alloc.scope();
  const team_policy policy(alloc.execution_space_instance(), league, 1);
  // Every team spills (1000 x 4 ints do not fit 1 KiB); one lane holds one team's at a time.
  auto ws = alloc.workspace(policy, kbuf::per_team{1024, 1000 * 4 * sizeof(int)}, "one lane");
  REQUIRE(ws.spill_lanes() == 1);
  counts out("out", 3);
  counts occupancy("occupancy", ws.slots());
  Kokkos::parallel_for("one lane", policy, Fill{ws, 1000, 1000, 1, 2, out, occupancy});
  const kbuf::WorkspaceReport r = ws.finish();
  CHECK(kbuf_test::nonzero_entries(out) == "");
  CHECK(r.complete());
  CHECK(r.spilling_arenas == static_cast<std::size_t>(league));
  CHECK(r.spills + r.fallbacks == static_cast<std::size_t>(2 * league));
  CHECK(r.spills >= 2);                             // the lane served some
  if (ws.slots() == 1) CHECK(r.lanes_missed == 0);  // one team at a time: never taken
}

TEST_CASE("workspace device: per_thread arenas that spill and fall back, all served") {
  Alloc alloc(1 << 20);
  const int iterations = 20000;
  const Kokkos::RangePolicy<exec> policy(alloc.execution_space_instance(), 0, iterations);
  const Kokkos::Experimental::UniqueToken<exec, Kokkos::Experimental::UniqueTokenScope::Global>
      token(alloc.execution_space_instance());
  for (int round = 1; round <= 2; ++round) {
    CAPTURE(round);
    auto scope = alloc.scope();
    auto ws = alloc.workspace(policy, kbuf::per_thread{512, 8192}, "device per thread");
    counts out("out", 2);
    Kokkos::parallel_for("device per thread", policy, ThreadFill{ws, token, 50, 2000, 31, out});
    const kbuf::WorkspaceReport r = ws.finish();
    CHECK(kbuf_test::nonzero_entries(out) == "");
    CHECK(r.complete());
    CHECK(r.arenas == static_cast<std::size_t>(iterations));
    if (round == 1) CHECK(r.spills + r.fallbacks > 0);
    if (round == 2) CHECK(r.spill_peak <= r.lane_bytes);
  }
}
