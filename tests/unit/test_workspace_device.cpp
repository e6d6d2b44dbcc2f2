// kbuf::Workspace in the shapes a GPU runs: leagues of at least sixteen times the slots (every
// slot reused many times), teams of up to 128 threads with vector lengths 1 and 8, every take
// filled by all of a team's threads and vector lanes and checked, one lane shared by many
// spilling arenas, per_thread arenas that spill, and the bytes held against fixed slots once
// the workspace has learned. On the host these run on OpenMP's threads (and Serial); the GPU
// check runs them on the device, where thousands of teams are in flight.
#include <doctest/doctest.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <new>
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

// A per_thread workspace in a team kernel: each thread of the team takes its arena with
// arena(team), shared by its vector lanes, takes `n` doubles (`large` for every `every`-th
// thread: a spill), fills them through its vector lanes (ThreadVectorRange), and after the team's
// barrier reads back through them, each lane other entries than it wrote. An arena a lane held
// alone (a GPU runs every vector lane as a thread of the device) would read another lane's
// entries unwritten. out[0]: wrong entries, out[1]: empty takes, out[2]: a second holder seen.
struct TeamThreadFill {
  WS ws;
  int n, large, every;
  counts out, occupancy;
  KOKKOS_INLINE_FUNCTION void operator()(const member& team) const {
    const int me = team.league_rank() * team.team_size() + team.team_rank();
    auto arena = ws.arena(team);
    const int slot = arena.slot();
    if (slot >= 0) {
      Kokkos::single(Kokkos::PerThread(team), [&]() {
        if (Kokkos::atomic_fetch_add(&occupancy.data()[slot], 1ll) != 0) {
          Kokkos::atomic_add(&out.data()[2], 1ll);
        }
      });
    }
    const int m = me % every == 0 ? large : n;
    auto v = arena.take<double*>(m);
    double* p = v.data();
    if (p == nullptr) {
      Kokkos::single(Kokkos::PerThread(team), [&]() { Kokkos::atomic_add(&out.data()[1], 1ll); });
    } else {
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, m),
                           [&](const int j) { p[j] = me + 0.25 * j; });
    }
    team.team_barrier();
    if (p != nullptr) {
      long long wrong = 0;
      Kokkos::parallel_reduce(
          Kokkos::ThreadVectorRange(team, m),
          [&](const int j, long long& w) {
            const int k = (j + 5) % m;  // another lane's entry
            w += p[k] != me + 0.25 * k ? 1 : 0;
          },
          wrong);
      Kokkos::single(Kokkos::PerThread(team), [&]() {
        if (wrong != 0) Kokkos::atomic_add(&out.data()[0], wrong);
      });
    }
    team.team_barrier();  // every lane done with the take before one gives the slot back
    if (slot >= 0) {
      Kokkos::single(Kokkos::PerThread(team),
                     [&]() { Kokkos::atomic_add(&occupancy.data()[slot], -1ll); });
    }
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

// The team sizes and vector lengths this backend allows, among those a GPU run uses: the most
// threads a team may have is asked for the functor launched and the vector length it is
// launched with (on a GPU the registers of a thread bound a block's threads: 128 x 8 is refused
// where the functor needs more than 64 registers per thread).
std::vector<std::pair<int, int>> shapes(const Alloc& alloc) {
  const int most_vector = team_policy::vector_length_max();
  std::vector<std::pair<int, int>> out;
  for (const int team : {1, 32, 128}) {
    for (const int vector : {1, 8}) {
      const int v = vector < most_vector ? vector : most_vector;
      const team_policy probe(alloc.execution_space_instance(), 1, 1, v);
      const int most_team =
          probe.team_size_max(Fill{WS(), 1, 1, 1, 1, counts(), counts()}, Kokkos::ParallelForTag());
      const int t = team < most_team ? team : most_team;
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
            "of %zu B, fallback region %zu B, %zu B held against %zu B for fixed slots of the "
            "largest need; %zu fallbacks, %zu lanes missed\n",
            team, vector, league, ws.slots(), ws.slot_bytes(), ws.spill_lanes(), ws.lane_bytes(),
            ws.fallback_region_bytes(), ws.slots() * ws.slot_bytes() + ws.spill_bytes(),
            ws.slots() * r.peak_slot_bytes, r.fallbacks, r.lanes_missed);
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

TEST_CASE(
    "workspace device: Kokkos::AUTO teams: the rerun has as many slots as teams of the size Kokkos "
    "chose can be in flight") {
  Alloc alloc(1 << 20);
  const int league = 4096;
  const team_policy policy(alloc.execution_space_instance(), league, Kokkos::AUTO);
  std::size_t threads = 0;
  for (int round = 1; round <= 2; ++round) {
    CAPTURE(round);
    auto scope = alloc.scope();
    auto ws = alloc.workspace(policy, kbuf::per_team{1024}, "device auto");
    counts out("out", 3);
    counts occupancy("occupancy", ws.slots());
    Kokkos::parallel_for("device auto", policy, Fill{ws, 200, 4000, 97, 2, out, occupancy});
    const kbuf::WorkspaceReport r = ws.finish();
    CHECK(kbuf_test::nonzero_entries(out) == "");
    CHECK(r.complete());
    CHECK(r.unslotted_arenas == 0);
    CHECK(r.team_threads >= 1);
    if (round == 2) {
      CHECK(r.team_threads == threads);
      const auto space = alloc.execution_space_instance();
      CHECK(ws.slots() == kbuf::Impl::team_slots(space.concurrency(),
                                                 static_cast<long long>(threads), 1, league,
                                                 kbuf::Impl::resident_teams(space)));
    }
    std::printf("workspace device: AUTO, round %d: %zu slots, teams of %zu threads\n", round,
                ws.slots(), r.team_threads);
    threads = r.team_threads;
  }
}

// A device emulated on the host: the arenas and their frames live in host memory the kernel
// writes, so a device backend builds none of this (its GPU check runs the cases above for real).
#if !defined(KBUF_BACKEND_CUDA) && !defined(KBUF_BACKEND_HIP)
namespace {

// The GPU check's cases as a device runs them, with every arena of a round live at once: one
// host thread makes them all, nested, in one kernel (`arenas` of them, as many as the device's
// slots), and in each frame each takes its array before any gives its own back. Per team: each
// arena takes `n` x 4 ints (`large` x 4 for every `every`-th), in each of `frames` frames.
// `storage` holds the arenas, their frames and their takes' addresses (host memory: host
// backends only). out[0]: wrong entries, out[1]: empty takes, out[2]: arenas without a slot.
struct AllAtOnce {
  WS ws;
  bool per_team;
  int arenas, n, large, every, frames;
  Kokkos::View<unsigned char*, Kokkos::HostSpace> storage;
  counts out;
  static constexpr std::size_t arena_size = (sizeof(WS::Arena) + 63) / 64 * 64;
  static constexpr std::size_t frame_size = (sizeof(WS::Frame) + 63) / 64 * 64;
  static std::size_t bytes(int arenas) {
    return static_cast<std::size_t>(arenas) * (arena_size + frame_size + sizeof(int*)) + 64;
  }
  KOKKOS_INLINE_FUNCTION WS::Arena& arena(int k) const {
    return *reinterpret_cast<WS::Arena*>(base() + static_cast<std::size_t>(k) * arena_size);
  }
  KOKKOS_INLINE_FUNCTION WS::Frame* frame(int k) const {
    return reinterpret_cast<WS::Frame*>(base() + static_cast<std::size_t>(arenas) * arena_size +
                                        static_cast<std::size_t>(k) * frame_size);
  }
  KOKKOS_INLINE_FUNCTION int*& pointer(int k) const {
    return reinterpret_cast<int**>(base() +
                                   static_cast<std::size_t>(arenas) * (arena_size + frame_size))[k];
  }
  KOKKOS_INLINE_FUNCTION unsigned char* base() const {
    const std::uintptr_t p = reinterpret_cast<std::uintptr_t>(storage.data());
    return reinterpret_cast<unsigned char*>((p + 63) / 64 * 64);
  }
  KOKKOS_INLINE_FUNCTION void operator()(const member& team) const {
    for (int k = 0; k < arenas; ++k) {
      if (per_team) {
        new (&arena(k)) WS::Arena(ws.arena(team));
      } else {
        new (&arena(k)) WS::Arena(ws.arena(k));
      }
      if (arena(k).slot() < 0) Kokkos::atomic_add(&out.data()[2], 1ll);
    }
    for (int f = 0; f < frames; ++f) {
      for (int k = 0; k < arenas; ++k) {
        new (frame(k)) WS::Frame(arena(k).frame());
        const int m = k % every == 0 ? large : n;
        int* p = arena(k).take<int**>(m, 4).data();
        pointer(k) = p;
        if (p == nullptr) {
          Kokkos::atomic_add(&out.data()[1], 1ll);
          continue;
        }
        for (int i = 0; i < 4 * m; ++i) p[i] = k * 16 + f + i;
      }
      for (int k = 0; k < arenas; ++k) {
        const int m = k % every == 0 ? large : n;
        const int* p = pointer(k);
        long long w = 0;
        for (int i = 0; p != nullptr && i < 4 * m; ++i) w += p[i] != k * 16 + f + i ? 1 : 0;
        if (w != 0) Kokkos::atomic_add(&out.data()[0], w);
      }
      for (int k = arenas; k-- > 0;) frame(k)->~Frame();
    }
    for (int k = arenas; k-- > 0;) arena(k).~Arena();
  }
};

// While it lives, workspaces are sized as on an NVIDIA H200 (concurrency 270,336, 4,224 teams
// resident) and the host's fallback heap holds at most `heap_limit` bytes, as a device's would.
struct EmulatedH200 {
  kbuf::Impl::DeviceEmulation saved = kbuf::Impl::device_emulation();
  explicit EmulatedH200(std::size_t heap_limit) {
    kbuf::Impl::device_emulation() = kbuf::Impl::DeviceEmulation{132 * 2048, 132 * 32, heap_limit};
  }
  EmulatedH200(const EmulatedH200&) = delete;
  EmulatedH200& operator=(const EmulatedH200&) = delete;
  ~EmulatedH200() { kbuf::Impl::device_emulation() = saved; }
};

const std::size_t mib = std::size_t(1) << 20;
// The fallback heaps a device's run is given: CUDA's default device heap (what kbuf's fallbacks
// had before they had a region), and none (what they have now: kernels never call malloc).
const std::size_t device_heaps[] = {8 * mib, 0};

// For each heap of `device_heaps`, under an emulated H200 with a host heap of that many bytes:
// `rounds` rounds of AllAtOnce over the workspace `make(alloc)` returns (its slots are the
// arenas), each checked, then `check(round, workspace, report)`.
template <class Make, class Check>
void at_once(bool per_team, int n, int large, int every, int frames, int rounds, const Make& make,
             const Check& check) {
  for (const std::size_t heap : device_heaps) {
    CAPTURE(heap);
    const EmulatedH200 h200(heap);
    Alloc alloc(1 << 20);
    auto scope = alloc.scope();
    for (int round = 1; round <= rounds; ++round) {
      CAPTURE(round);
      WS ws = make(alloc);
      const int arenas = static_cast<int>(ws.slots());
      counts out("out", 3);
      Kokkos::View<unsigned char*, Kokkos::HostSpace> storage("storage", AllAtOnce::bytes(arenas));
      Kokkos::parallel_for("at once", team_policy(alloc.execution_space_instance(), 1, 1),
                           AllAtOnce{ws, per_team, arenas, n, large, every, frames, storage, out});
      const kbuf::WorkspaceReport r = ws.finish();
      CHECK(kbuf_test::nonzero_entries(out) == "");
      CHECK(r.complete());
      CHECK(r.arenas == static_cast<std::size_t>(arenas));
      check(round, ws, r);
    }
  }
}

}  // namespace

TEST_CASE(
    "workspace device: one lane for many spillers at an H200's scale (4,224 teams each needing "
    "16 KB at once) completes in one round with no heap beyond a device's") {
  at_once(
      true, 1000, 1000, 1, 2, 1,
      [](Alloc& alloc) {
        const team_policy policy(alloc.execution_space_instance(), 16 * 4224, 1);
        return alloc.workspace(policy, kbuf::per_team{1024, 1000 * 4 * sizeof(int)}, "one lane");
      },
      [](int, const WS& ws, const kbuf::WorkspaceReport& r) {
        REQUIRE(ws.slots() == 4224);
        REQUIRE(ws.spill_lanes() == 1);
        CHECK(r.spilling_arenas == 4224);
        CHECK(r.spills + r.fallbacks == 2 * 4224);
        CHECK(r.fallbacks >= 2 * 4223);  // the lane serves one arena at a time
      });
}

TEST_CASE(
    "workspace device: 4,224 teams that outgrow their slot at once complete in one round with no "
    "heap beyond a device's, and the rerun fits") {
  at_once(
      true, 200, 4000, 97, 3, 2,
      [](Alloc& alloc) {
        const team_policy policy(alloc.execution_space_instance(), 16 * 4224, 1);
        return alloc.workspace(policy, kbuf::per_team{1024}, "device fill");
      },
      [](int round, const WS& ws, const kbuf::WorkspaceReport& r) {
        REQUIRE(ws.slots() == 4224);
        if (round == 1) CHECK(r.fallbacks == 3 * 4224);  // every take outgrew the 1 KiB slot
        if (round == 2) {
          CHECK(r.spill_peak <= r.lane_bytes);
          CHECK(r.fallbacks == 0);  // 44 spilling arenas at once, and as many lanes
        }
      });
}

TEST_CASE(
    "workspace device: 20,000 per_thread arenas at once complete in one round with no heap beyond "
    "a device's, and the rerun fits") {
  at_once(
      false, 25, 1000, 31, 1, 2,  // 50 and 2,000 doubles: 25 and 1,000 x 4 ints
      [](Alloc& alloc) {
        const Kokkos::RangePolicy<exec> policy(alloc.execution_space_instance(), 0, 20000);
        return alloc.workspace(policy, kbuf::per_thread{512, 8192}, "device per thread");
      },
      [](int round, const WS& ws, const kbuf::WorkspaceReport& r) {
        REQUIRE(ws.slots() == 20000);
        if (round == 1) CHECK(r.fallbacks > 0);
        if (round == 2) CHECK(r.spill_peak <= r.lane_bytes);
      });
}
#endif

TEST_CASE(
    "workspace device: per_thread arenas in a team kernel are the threads', shared by their vector "
    "lanes: a ThreadVectorRange fill reads back across the lanes") {
  Alloc alloc(1 << 22);
  const int most_vector = team_policy::vector_length_max();
  for (const int want : {1, 8}) {
    const int vector = want < most_vector ? want : most_vector;
    const team_policy probe(alloc.execution_space_instance(), 1, 1, vector);
    const int most_team = probe.team_size_max(TeamThreadFill{WS(), 1, 1, 1, counts(), counts()},
                                              Kokkos::ParallelForTag());
    const int team = 32 < most_team ? 32 : most_team;
    const int league = 64;
    CAPTURE(team);
    CAPTURE(vector);
    const team_policy policy(alloc.execution_space_instance(), league, team, vector);
    for (int round = 1; round <= 2; ++round) {
      CAPTURE(round);
      auto scope = alloc.scope();
      auto ws = alloc.workspace(policy, kbuf::per_thread{512, 4096},
                                "device team per thread x" + std::to_string(vector));
      counts out("out", 3);
      counts occupancy("occupancy", ws.slots() > 0 ? ws.slots() : 1);
      Kokkos::parallel_for("device team per thread", policy,
                           TeamThreadFill{ws, 40, 300, 17, out, occupancy});
      const kbuf::WorkspaceReport r = ws.finish();
      CHECK(kbuf_test::nonzero_entries(out) == "");
      CHECK(r.complete());
      CHECK(r.arenas == static_cast<std::size_t>(league * team));  // one per thread, not per lane
      CHECK(r.team_threads == 0u);  // per_thread arenas count no team
      if (round == 1) CHECK(r.spills + r.fallbacks > 0);
    }
  }
}
