// kbuf::Workspace: temporaries inside kernels. Slots held by one team at a time with a league far
// larger than the slots, frames (the peak is the maximum, not the sum), spill then fit on the
// rerun, failed takes, per_thread arenas, and the host side's bad input. Kernels write through
// raw pointers, so that the same tests run over the foreign space.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "test_support.hpp"

using kbuf_test::Alloc;
using kbuf_test::space;

namespace {

using namespace kbuf_test::workspace_types;
using counts = Kokkos::View<long long*, space>;

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Each team takes `n` ints, fills them with its league rank (every thread a part), waits, and
// counts the entries that are not its rank; a slot held by two teams at once shows as errors.
// `occupancy[slot]` counts the teams inside each slot: above one is a second holder.
struct Exclusive {
  WS ws;
  int n;
  counts errors;     // [0]: wrong entries, [1]: a second holder seen, [2]: failed arenas
  counts occupancy;  // per slot
  KOKKOS_INLINE_FUNCTION void operator()(const member& team) const {
    auto arena = ws.arena(team);
    auto v = arena.take<int*>(n);
    int* p = v.data();
    const int me = team.league_rank();
    const int slot = arena.slot();
    if (p == nullptr || slot < 0) {
      Kokkos::single(Kokkos::PerTeam(team), [&]() { Kokkos::atomic_add(&errors.data()[2], 1ll); });
      return;
    }
    Kokkos::single(Kokkos::PerTeam(team), [&]() {
      if (Kokkos::atomic_fetch_add(&occupancy.data()[slot], 1ll) != 0) {
        Kokkos::atomic_add(&errors.data()[1], 1ll);
      }
    });
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, n), [&](const int i) { p[i] = me; });
    team.team_barrier();
    // Some work between the fill and the check, so that another holder would overwrite.
    long long wrong = 0;
    for (int round = 0; round < 4; ++round) {
      long long w = 0;
      Kokkos::parallel_reduce(
          Kokkos::TeamThreadRange(team, n),
          [&](const int i, long long& acc) { acc += p[i] != me ? 1 : 0; }, w);
      wrong += w;
    }
    team.team_barrier();
    Kokkos::single(Kokkos::PerTeam(team), [&]() {
      if (wrong != 0) Kokkos::atomic_add(&errors.data()[0], wrong);
      Kokkos::atomic_add(&occupancy.data()[slot], -1ll);
    });
  }
};

// Frames: every iteration takes `n` doubles in a frame; they all land where the first did.
struct Frames {
  WS ws;
  int n;
  int iterations;
  counts moved;  // [0]: iterations whose take did not start at the first one's address
  KOKKOS_INLINE_FUNCTION void operator()(const member& team) const {
    auto arena = ws.arena(team);
    double* first = nullptr;
    for (int it = 0; it < iterations; ++it) {
      auto frame = arena.frame();
      auto v = arena.take<double*>(n);
      auto w = kbuf::take<double**>(arena, 2, n / 2);  // the free form
      if (it == 0) first = v.data();
      Kokkos::single(Kokkos::PerTeam(team), [&]() {
        if (v.data() != first || w.data() == nullptr) Kokkos::atomic_add(&moved.data()[0], 1ll);
      });
    }
  }
};

// A need per team: `small` bytes, and `large` for the teams whose rank is a multiple of `every`.
// Each take is filled with the rank and checked; failures counted as such.
struct Needs {
  WS ws;
  int small;  // doubles
  int large;  // doubles
  int every;
  counts out;  // [0]: failed arenas, [1]: wrong entries
  KOKKOS_INLINE_FUNCTION void operator()(const member& team) const {
    auto arena = ws.arena(team);
    const int me = team.league_rank();
    const int n = me % every == 0 ? large : small;
    auto a = arena.take<double*>(n);
    auto b = arena.take<double*>(small / 2);
    if (!arena.ok()) {
      Kokkos::single(Kokkos::PerTeam(team), [&]() { Kokkos::atomic_add(&out.data()[0], 1ll); });
      return;
    }
    double* pa = a.data();
    double* pb = b.data();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, n), [&](const int i) { pa[i] = me; });
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, small / 2),
                         [&](const int i) { pb[i] = -me; });
    team.team_barrier();
    long long w = 0;
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(team, n),
        [&](const int i, long long& acc) { acc += pa[i] != me ? 1 : 0; }, w);
    long long w2 = 0;
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(team, small / 2),
        [&](const int i, long long& acc) { acc += pb[i] != -me ? 1 : 0; }, w2);
    Kokkos::single(Kokkos::PerTeam(team), [&]() {
      if (w + w2 != 0) Kokkos::atomic_add(&out.data()[1], w + w2);
    });
  }
};

// Team 0 spills: in each of `iterations` frames it takes two blocks of `large` doubles that do
// not fit its slot, fills them with +-(iteration + 1), and checks both; the other teams take
// `small`. Overlapping spilled takes, or spilled memory a frame does not give back, show.
struct Spills {
  WS ws;
  int small;
  int large;
  int iterations;
  counts out;  // [0]: failed takes, [1]: wrong entries
  KOKKOS_INLINE_FUNCTION void operator()(const member& team) const {
    auto arena = ws.arena(team);
    if (team.league_rank() != 0) {
      auto v = arena.take<double*>(small);
      if (v.data() == nullptr) {
        Kokkos::single(Kokkos::PerTeam(team), [&]() { Kokkos::atomic_add(&out.data()[0], 1ll); });
      }
      return;
    }
    for (int it = 0; it < iterations; ++it) {
      auto frame = arena.frame();
      auto a = arena.take<double*>(large);
      auto b = arena.take<double*>(large);
      double* pa = a.data();
      double* pb = b.data();
      if (pa == nullptr || pb == nullptr) {
        Kokkos::single(Kokkos::PerTeam(team), [&]() { Kokkos::atomic_add(&out.data()[0], 1ll); });
        continue;
      }
      const double x = it + 1;
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, large), [&](const int i) {
        pa[i] = x;
        pb[i] = -x;
      });
      team.team_barrier();
      long long w = 0;
      Kokkos::parallel_reduce(
          Kokkos::TeamThreadRange(team, large),
          [&](const int i, long long& acc) { acc += (pa[i] != x) + (pb[i] != -x); }, w);
      Kokkos::single(Kokkos::PerTeam(team), [&]() {
        if (w != 0) Kokkos::atomic_add(&out.data()[1], w);
      });
      team.team_barrier();
    }
  }
};

// per_thread: each iteration holds a UniqueToken value, takes `n` ints, fills and checks them.
struct PerThread {
  WS ws;
  Kokkos::Experimental::UniqueToken<exec, Kokkos::Experimental::UniqueTokenScope::Global> token;
  int n;
  counts out;  // [0]: wrong entries, [1]: failed takes
  KOKKOS_INLINE_FUNCTION void operator()(const int i) const {
    const int t = token.acquire();
    {
      auto arena = ws.arena(t);
      auto v = arena.take<int*>(n);
      int* p = v.data();
      if (p == nullptr) {
        Kokkos::atomic_add(&out.data()[1], 1ll);
      } else {
        for (int j = 0; j < n; ++j) p[j] = i;
        long long w = 0;
        for (int j = 0; j < n; ++j) w += p[j] != i ? 1 : 0;
        if (w != 0) Kokkos::atomic_add(&out.data()[0], w);
      }
    }
    token.release(t);
  }
};

// per_thread arenas from `token(i)`: takes `n` ints, fills them with the iteration and checks
// them; occupancy[slot] counts the holders of each slot. out[0]: wrong entries, out[1]: a second
// holder seen, out[2]: arenas without a slot, out[3]: empty takes.
template <class Token>
struct Holders {
  WS ws;
  Token token;
  int n;
  counts out, occupancy;
  KOKKOS_INLINE_FUNCTION void operator()(const int i) const {
    const int t = token.acquire(i);
    {
      auto arena = ws.arena(t);
      const int slot = arena.slot();
      if (slot < 0) {
        Kokkos::atomic_add(&out.data()[2], 1ll);
      } else if (Kokkos::atomic_fetch_add(&occupancy.data()[slot], 1ll) != 0) {
        Kokkos::atomic_add(&out.data()[1], 1ll);
      }
      auto v = arena.take<int*>(n);
      int* p = v.data();
      if (p == nullptr) {
        Kokkos::atomic_add(&out.data()[3], 1ll);
      } else {
        for (int j = 0; j < n; ++j) p[j] = i;
        long long w = 0;
        for (int j = 0; j < n; ++j) w += p[j] != i ? 1 : 0;
        if (w != 0) Kokkos::atomic_add(&out.data()[0], w);
      }
      if (slot >= 0) Kokkos::atomic_add(&occupancy.data()[slot], -1ll);
    }
    token.release(t);
  }
};

// The global UniqueToken of the execution space, as Kokkos teaches users to make it.
struct GlobalToken {
  Kokkos::Experimental::UniqueToken<exec, Kokkos::Experimental::UniqueTokenScope::Global> token;
  KOKKOS_INLINE_FUNCTION int acquire(int) const { return token.acquire(); }
  KOKKOS_INLINE_FUNCTION void release(int t) const { token.release(t); }
};

// Token values of a GPU's global UniqueToken: its size is the device's concurrency (an H200's
// 270,336), and on Kokkos 3.4 a value can be any below it. Each iteration holds `base + i`, a
// number no other iteration holds.
struct DeviceTokenValues {
  int base;
  KOKKOS_INLINE_FUNCTION int acquire(int i) const { return base + i; }
  KOKKOS_INLINE_FUNCTION void release(int) const {}
};

team_policy policy_for(const Alloc& alloc, int league, int team = 1) {
  return team_policy(alloc.execution_space_instance(), league, team);
}

}  // namespace

TEST_CASE(
    "workspace: a slot is held by one team at a time, with a league far larger than the slots") {
  Alloc alloc(1 << 20);
  for (const int team : {1, 2}) {
    CAPTURE(team);
    const int league = 512;
    if (team > policy_for(alloc, league).team_size_max(Exclusive{}, Kokkos::ParallelForTag())) {
      continue;
    }
    const auto policy = policy_for(alloc, league, team);
    auto scope = alloc.scope();
    auto ws = alloc.workspace(policy, kbuf::per_team{256 * sizeof(int)}, "exclusive");
    const std::size_t expected = (static_cast<std::size_t>(exec().concurrency()) + team - 1) / team;
    CHECK(ws.slots() == (expected < league ? expected : league));
    CHECK(ws.slot_bytes() >= 256 * sizeof(int));
    counts errors("errors", 3);
    counts occupancy("occupancy", ws.slots());
    Kokkos::parallel_for("exclusive", policy, Exclusive{ws, 256, errors, occupancy});
    const kbuf::WorkspaceReport r = ws.finish();
    const auto e = kbuf_test::host_vector(errors);
    CHECK(e[0] == 0);
    CHECK(e[1] == 0);
    CHECK(e[2] == 0);
    CHECK(r.arenas == static_cast<std::size_t>(league));
    CHECK(r.takes == static_cast<std::size_t>(league));
    CHECK(r.unslotted_arenas == 0);
    CHECK(r.complete());
    for (const long long o : kbuf_test::host_vector(occupancy)) CHECK(o == 0);
  }
}

TEST_CASE(
    "workspace: frames give back what was taken after them, so the peak is the largest, not the "
    "sum") {
  Alloc alloc(1 << 20);
  const auto policy = policy_for(alloc, 8);
  auto scope = alloc.scope();
  const int n = 1000;
  auto ws = alloc.workspace(policy, kbuf::per_team{4 * n * sizeof(double)}, "frames");
  counts moved("moved", 1);
  Kokkos::parallel_for("frames", policy, Frames{ws, n, 10, moved});
  const kbuf::WorkspaceReport r = ws.finish();
  CHECK(kbuf_test::host_vector(moved)[0] == 0);
  const std::size_t unit = alloc.alignment() > 64 ? alloc.alignment() : 64;
  const std::size_t one = (n * sizeof(double) + unit - 1) / unit * unit;
  CHECK(r.peak_slot_bytes == 2 * one);  // one iteration's two takes, not ten iterations'
  CHECK(r.takes == 8 * 10 * 2);
  CHECK(r.spills == 0);
  CHECK(r.complete());
  CHECK(r.next_slot_bytes == 2 * one);  // learned: what one team needed
}

TEST_CASE(
    "workspace: a need that fits neither slot nor lane falls back: the first round is whole, the "
    "rerun fits") {
  Alloc alloc(1 << 16);
  const int league = 64;
  const auto policy = policy_for(alloc, league);
  const int small = 512;    // doubles: 4 KiB
  const int large = 65536;  // doubles: 512 KiB, for every 16th team
  kbuf::WorkspaceReport first;
  {
    auto scope = alloc.scope();
    auto ws =
        alloc.workspace(policy, kbuf::per_team{(small + small / 2) * sizeof(double)}, "needs");
    CHECK(ws.spill_bytes() == 0);  // nothing learned yet: no spill area
    counts out("out", 2);
    Kokkos::parallel_for("needs", policy, Needs{ws, small, large, 16, out});
    first = ws.finish();
    // The kernel's error counts: the large ones fell back, and were served; every take correct.
    CHECK(kbuf_test::nonzero_entries(out) == "");
    CHECK(first.complete());
    CHECK(first.fallbacks == static_cast<std::size_t>(league / 16));
    CHECK(first.fallback_bytes >= static_cast<std::size_t>(league / 16) * large * sizeof(double));
    CHECK(first.peak_slot_bytes >= (large + small / 2) * sizeof(double));
  }
  for (int round = 2; round <= 3; ++round) {
    CAPTURE(round);
    auto scope = alloc.scope();
    auto ws = alloc.workspace(policy, kbuf::per_team{64}, "needs");  // the guess is ignored now
    counts out("out", 2);
    Kokkos::parallel_for("needs", policy, Needs{ws, small, large, 16, out});
    const kbuf::WorkspaceReport r = ws.finish();
    CHECK(kbuf_test::nonzero_entries(out) == "");
    CHECK(r.complete());
    // Sized for every need: a fallback now only for an arena that found every lane taken.
    CHECK(r.spill_peak <= r.lane_bytes);
    CHECK((r.fallbacks == 0 || r.lanes_missed != 0));
    // Never more than slots sized for the largest need (header aside).
    CHECK(ws.slots() * ws.slot_bytes() + ws.spill_bytes() <= ws.slots() * first.peak_slot_bytes);
  }
}

TEST_CASE("workspace: one rare large need spills instead of making every slot large") {
  Alloc alloc(1 << 16);
  const int league = 256;
  const auto policy = policy_for(alloc, league);
  const int small = 512;    // doubles
  const int large = 65536;  // doubles, for team 0 only
  std::size_t peak = 0;
  for (int round = 1; round <= 3; ++round) {
    CAPTURE(round);
    auto scope = alloc.scope();
    auto ws = alloc.workspace(policy, kbuf::per_team{(small + small / 2) * sizeof(double)}, "rare");
    counts out("out", 2);
    Kokkos::parallel_for("rare", policy, Needs{ws, small, large, league, out});
    const kbuf::WorkspaceReport r = ws.finish();
    CHECK(kbuf_test::nonzero_entries(out) == "");
    CHECK(r.complete());
    if (round == 1) {
      peak = r.peak_slot_bytes;
      CHECK(r.fallbacks == 1);  // no spill area yet: the large one fell back
      continue;
    }
    CHECK(r.fallbacks == 0);  // one spilling arena: one lane, never taken by another
    if (ws.slots() > 1) {
      CHECK(ws.slot_bytes() < static_cast<std::size_t>(large) * sizeof(double));
      CHECK(r.spills == 1);
      CHECK(ws.slots() * ws.slot_bytes() + ws.spill_bytes() < ws.slots() * peak);
    }
  }
}

TEST_CASE("workspace: spilled takes do not overlap, and a frame gives back what it spilled") {
  Alloc alloc(1 << 16);
  const auto policy = policy_for(alloc, 32);
  const int small = 128;
  const int large = 4096;  // doubles: 32 KiB, twice per frame, four frames
  auto scope = alloc.scope();
  // A spill area for one frame's two blocks: the second frame fits only if the first gave back.
  auto ws = alloc.workspace(
      policy, kbuf::per_team{small * sizeof(double), 2 * large * sizeof(double)}, "spills");
  CHECK(ws.spill_bytes() == 2 * large * sizeof(double));
  counts out("out", 2);
  Kokkos::parallel_for("spills", policy, Spills{ws, small, large, 4, out});
  const kbuf::WorkspaceReport r = ws.finish();
  CHECK(kbuf_test::nonzero_entries(out) == "");
  CHECK(r.spills == 8);
  CHECK(r.spill_bytes == 8 * large * sizeof(double));
  CHECK(r.spill_peak == 2 * large * sizeof(double));
  CHECK(r.complete());
  CHECK(r.peak_slot_bytes == 2 * large * sizeof(double));
}

TEST_CASE("workspace: per_thread arenas, one per UniqueToken value") {
  Alloc alloc(1 << 16);
  const Kokkos::RangePolicy<exec> policy(alloc.execution_space_instance(), 0, 2000);
  auto scope = alloc.scope();
  auto ws = alloc.workspace(policy, kbuf::per_thread{64 * sizeof(int)}, "threads");
  const Kokkos::Experimental::UniqueToken<exec, Kokkos::Experimental::UniqueTokenScope::Global>
      token(alloc.execution_space_instance());
  // The threads in flight: the token's size (a GPU's concurrency), at most the iterations.
  CHECK(ws.slots() == std::min<std::size_t>(static_cast<std::size_t>(token.size()), 2000));
  counts out("out", 2);
  Kokkos::parallel_for("per_thread", policy, PerThread{ws, token, 64, out});
  const kbuf::WorkspaceReport r = ws.finish();
  CHECK(kbuf_test::nonzero_entries(out) == "");
  CHECK(r.arenas == 2000);
  CHECK(r.takes == 2000);
  CHECK(r.spills == 0);
  CHECK(r.complete());
}

TEST_CASE("workspace: the workspace is one temporary of the current scope") {
  Alloc alloc(1 << 22);  // room for the first round's fallback region too
  const auto policy = policy_for(alloc, 4);
  const auto before = alloc.statistics().temporaries;
  {
    auto scope = alloc.scope();
    auto ws = alloc.workspace(policy, kbuf::per_team{1024}, "one");
    CHECK(alloc.statistics().temporaries == before + 1);
    CHECK(alloc.used() >= ws.bytes());
    CHECK(ws.bytes() >= ws.slots() * ws.slot_bytes());
    (void)ws.finish();
  }
  CHECK(alloc.empty());
  CHECK(alloc.used() == 0);
}

TEST_CASE("workspace: bad input raises, names the call and the value, and changes nothing") {
  Alloc alloc(1 << 22);  // every workspace below fits, fallback region included
  const auto policy = policy_for(alloc, 4);
  auto keep = alloc.allocate<double*>(10);
  const auto cp = alloc.checkpoint();
  const auto used = alloc.used();
  const auto temporaries = alloc.statistics().temporaries;
  // The allocator as it was; `served`: workspaces made meanwhile (and released) count.
  const auto same = [&](std::size_t served = 0) {
    CHECK(alloc.used() == used);
    CHECK(alloc.checkpoint().depth() == cp.depth());
    CHECK(alloc.statistics().temporaries == temporaries + served);
  };
  SUBCASE("a slot size that overflows") {
    const std::size_t huge = std::numeric_limits<std::size_t>::max() - 3;
    try {
      (void)alloc.workspace(policy, kbuf::per_team{huge}, "huge");
      FAIL("no exception");
    } catch (const kbuf::logic_error& e) {
      CHECK(has(e.what(), "kbuf::BufferAllocator::workspace(policy, per_team)"));
      CHECK(has(e.what(), std::to_string(huge)));
      CHECK(has(e.what(), "overflows"));
    }
    same();
  }
  SUBCASE("slots times the slot size overflow") {
    const std::size_t big = std::numeric_limits<std::size_t>::max() / 2;
    const auto wide = policy_for(alloc, 1000);
    if (alloc.workspace(wide, kbuf::per_team{1}, "probe").slots() >= 2) {
      alloc.reset(cp);
      CHECK_THROWS_AS(alloc.workspace(wide, kbuf::per_team{big}, "big"), kbuf::logic_error);
    } else {
      alloc.reset(cp);
      CHECK_THROWS_AS(alloc.workspace(wide, kbuf::per_team{big}, "big"), kbuf::out_of_memory);
    }
    same(1);
  }
  SUBCASE("more than the limit") {
    alloc.limit(alloc.held());
    try {
      (void)alloc.workspace(policy, kbuf::per_team{std::size_t(1) << 23}, "limited");
      FAIL("no exception");
    } catch (const kbuf::out_of_memory& e) {
      CHECK(has(e.what(), "kbuf::BufferAllocator::workspace(policy, per_team)"));
      CHECK(has(e.what(), "limited"));
    }
    same();
    // Nothing was learned under a label whose workspace could not be had.
    auto scope = alloc.scope();
    alloc.limit(std::numeric_limits<std::size_t>::max());
    CHECK(alloc.workspace(policy, kbuf::per_team{64}, "limited").spill_bytes() == 0);
  }
  SUBCASE("finish twice, and finish after the scope ended") {
    kbuf::Workspace<space> ws;
    CHECK_THROWS_AS(ws.finish(), kbuf::logic_error);  // default-constructed
    {
      auto scope = alloc.scope();
      ws = alloc.workspace(policy, kbuf::per_team{64}, "twice");
      kbuf::Workspace<space> copy = ws;
      (void)ws.finish();
      try {
        (void)copy.finish();
        FAIL("no exception");
      } catch (const kbuf::logic_error& e) {
        CHECK(has(e.what(), "finished already"));
        CHECK(has(e.what(), "twice"));
      }
      ws = alloc.workspace(policy, kbuf::per_team{64}, "late");
    }
    try {
      (void)ws.finish();
      FAIL("no exception");
    } catch (const kbuf::logic_error& e) {
      CHECK(has(e.what(), "released"));
      CHECK(has(e.what(), "late"));
    }
    same(2);
  }
#if defined(KOKKOS_ENABLE_SERIAL)
  if constexpr (!std::is_same<exec, Kokkos::Serial>::value) {
    SUBCASE("a policy of another execution space") {
      const Kokkos::TeamPolicy<Kokkos::Serial> serial(4, 1);
      try {
        (void)alloc.workspace(serial, kbuf::per_team{64}, "serial");
        FAIL("no exception");
      } catch (const kbuf::logic_error& e) {
        CHECK(has(e.what(), "kbuf::BufferAllocator::workspace(policy, per_team)"));
        CHECK(has(e.what(), "Serial"));
      }
      same();
    }
  }
#endif
  (void)keep;
}

TEST_CASE(
    "workspace: per_thread arenas find a slot for token values far above the slots, as a GPU's "
    "token gives them") {
  Alloc alloc(1 << 22);
  const int iterations = 64;
  const Kokkos::RangePolicy<exec> policy(alloc.execution_space_instance(), 0, iterations);
  auto scope = alloc.scope();
  auto ws = alloc.workspace(policy, kbuf::per_thread{64 * sizeof(int)}, "device tokens");
  REQUIRE(ws.slots() <= static_cast<std::size_t>(iterations));
  counts out("out", 4);
  counts occupancy("occupancy", ws.slots());
  const int h200_concurrency = 132 * 2048;
  Kokkos::parallel_for("device tokens", policy,
                       Holders<DeviceTokenValues>{ws, DeviceTokenValues{h200_concurrency - 1000},
                                                  64, out, occupancy});
  const kbuf::WorkspaceReport r = ws.finish();
  CHECK(kbuf_test::nonzero_entries(out) == "");
  CHECK(r.arenas == static_cast<std::size_t>(iterations));
  CHECK(r.unslotted_arenas == 0);  // every value found a slot
  CHECK(r.spills == 0);
  CHECK(r.fallbacks == 0);
  CHECK(r.complete());
}

TEST_CASE(
    "workspace: per_thread arenas over the global UniqueToken with a dynamic schedule and fewer "
    "iterations than threads all hold a slot") {
  Alloc alloc(1 << 22);
  const int threads = static_cast<int>(alloc.execution_space_instance().concurrency());
  const int iterations = threads > 1 ? threads / 2 : 1;
  // With a dynamic schedule any thread may run an iteration: its token value (its thread's
  // number) can be above the slots, which are the iterations.
  const Kokkos::RangePolicy<exec, Kokkos::Schedule<Kokkos::Dynamic>> policy(
      alloc.execution_space_instance(), 0, iterations);
  const GlobalToken token{
      Kokkos::Experimental::UniqueToken<exec, Kokkos::Experimental::UniqueTokenScope::Global>(
          alloc.execution_space_instance())};
  auto scope = alloc.scope();
  auto ws = alloc.workspace(policy, kbuf::per_thread{64 * sizeof(int)}, "dynamic");
  CHECK(ws.slots() == static_cast<std::size_t>(iterations));
  counts out("out", 4);
  counts occupancy("occupancy", ws.slots());
  const int kernels = 20;
  for (int k = 0; k < kernels; ++k) {
    Kokkos::parallel_for("dynamic", policy, Holders<GlobalToken>{ws, token, 64, out, occupancy});
  }
  const kbuf::WorkspaceReport r = ws.finish();
  CHECK(kbuf_test::nonzero_entries(out) == "");
  CHECK(r.arenas == static_cast<std::size_t>(kernels * iterations));
  CHECK(r.unslotted_arenas == 0);
  CHECK(r.fallbacks == 0);
  CHECK(r.complete());
}

TEST_CASE(
    "workspace: the first round's fallback region is cut to what the allocator's limit leaves, "
    "never refused for it") {
  Alloc alloc(1 << 16);
  const auto policy = policy_for(alloc, 4);
  const std::size_t room = 48 * 1024;
  alloc.limit(alloc.held() + room);
  auto scope = alloc.scope();
  auto ws = alloc.workspace(policy, kbuf::per_team{1024}, "limited region");
  const std::size_t full = kbuf::Impl::first_round_fallback(ws.slots(), 1024);
  CHECK(ws.fallback_region_bytes() > 0);
  CHECK(ws.fallback_region_bytes() < full);
  CHECK(alloc.held() <= alloc.limit());
  (void)ws.finish();
  // One asked for explicitly is that size (in whole chunks), with no limit in the way.
  Alloc other(1 << 20);
  auto other_scope = other.scope();
  auto asked = other.workspace(policy_for(other, 4), kbuf::per_team{1024, 0, 4096}, "asked");
  CHECK(asked.fallback_region_bytes() == 4096);
  CHECK(asked.finish().fallback_region_bytes == 4096);
}
