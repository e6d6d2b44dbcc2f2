// kbuf::Workspace's two promises on kernels written by others: a rerun under the same label
// completes after one round whatever a kernel does after a take it did not expect (return at
// once, break out of a loop, go on), and a rare large need spills instead of making every slot
// large, with sizes chosen from the bytes they hold for the next run's slots. The sizing is
// checked on its own (no kernel: the figures of a GPU's two thousand slots), then for real.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "test_support.hpp"

using kbuf_test::Alloc;
using kbuf_test::space;

namespace {

using namespace kbuf_test::workspace_types;
using counts = Kokkos::View<long long*, space>;

// What a kernel does once a take was not served (`arena.ok()` false).
enum class Shape { return_at_once, break_loop, go_on };

// Per team: one array of the team's own size (`large` doubles for every `every`-th team, else
// `small`), then `frames` frames that each take a k x k matrix; every take is filled by the
// team's threads with a value of its own and checked. out[0]: wrong entries, out[1]: arenas
// that saw ok() false, out[2]: takes skipped because their view was empty.
struct TeamShapes {
  WS ws;
  Shape shape;
  int small, large, every, frames, k;
  counts out;
  KOKKOS_INLINE_FUNCTION void operator()(const member& team) const {
    auto arena = ws.arena(team);
    const int me = team.league_rank();
    const int n = me % every == 0 ? large : small;
    auto a = arena.take<double*>(n);
    if (!arena.ok()) {
      Kokkos::single(Kokkos::PerTeam(team), [&]() { Kokkos::atomic_add(&out.data()[1], 1ll); });
      if (shape == Shape::return_at_once) return;
    }
    double* pa = a.data();
    if (pa != nullptr) {
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, n), [&](const int i) { pa[i] = me; });
    }
    for (int f = 0; f < frames; ++f) {
      auto frame = arena.frame();
      auto m = arena.take<double**>(k, k);
      if (!arena.ok()) {
        if (shape == Shape::return_at_once) return;
        if (shape == Shape::break_loop) break;
      }
      double* pm = m.data();
      if (pm == nullptr) {
        Kokkos::single(Kokkos::PerTeam(team), [&]() { Kokkos::atomic_add(&out.data()[2], 1ll); });
        continue;
      }
      const double x = 1000.0 * me + f;
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, k * k), [&](const int i) { pm[i] = x; });
      team.team_barrier();
      long long w = 0;
      Kokkos::parallel_reduce(
          Kokkos::TeamThreadRange(team, k * k),
          [&](const int i, long long& acc) { acc += pm[i] != x ? 1 : 0; }, w);
      Kokkos::single(Kokkos::PerTeam(team), [&]() {
        if (w != 0) Kokkos::atomic_add(&out.data()[0], w);
      });
    }
    if (pa != nullptr) {
      team.team_barrier();
      long long w = 0;
      Kokkos::parallel_reduce(
          Kokkos::TeamThreadRange(team, n),
          [&](const int i, long long& acc) { acc += pa[i] != me ? 1 : 0; }, w);
      Kokkos::single(Kokkos::PerTeam(team), [&]() {
        if (w != 0) Kokkos::atomic_add(&out.data()[0], w);
      });
    }
  }
};

// Per thread: each iteration holds a UniqueToken value, takes its own array (large for every
// `every`-th iteration), then a frame with a small one; both filled and checked.
struct ThreadShapes {
  WS ws;
  Kokkos::Experimental::UniqueToken<exec, Kokkos::Experimental::UniqueTokenScope::Global> token;
  Shape shape;
  int small, large, every;
  counts out;
  KOKKOS_INLINE_FUNCTION void body(const int i, WS::Arena& arena) const {
    const int n = i % every == 0 ? large : small;
    auto a = arena.take<double*>(n);
    if (!arena.ok()) {
      Kokkos::atomic_add(&out.data()[1], 1ll);
      if (shape == Shape::return_at_once) return;
    }
    double* pa = a.data();
    for (int j = 0; pa != nullptr && j < n; ++j) pa[j] = i;
    for (int f = 0; f < 2; ++f) {
      auto frame = arena.frame();
      auto b = arena.take<int*>(small);
      if (!arena.ok() && shape != Shape::go_on) break;
      int* pb = b.data();
      if (pb == nullptr) {
        Kokkos::atomic_add(&out.data()[2], 1ll);
        continue;
      }
      for (int j = 0; j < small; ++j) pb[j] = -i - f;
      long long w = 0;
      for (int j = 0; j < small; ++j) w += pb[j] != -i - f ? 1 : 0;
      if (w != 0) Kokkos::atomic_add(&out.data()[0], w);
    }
    long long w = 0;
    for (int j = 0; pa != nullptr && j < n; ++j) w += pa[j] != i ? 1 : 0;
    if (w != 0) Kokkos::atomic_add(&out.data()[0], w);
  }
  KOKKOS_INLINE_FUNCTION void operator()(const int i) const {
    const int t = token.acquire();
    {
      auto arena = ws.arena(t);
      body(i, arena);
    }
    token.release(t);
  }
};

// Two arenas in one team of a policy with one slot: the outer one holds the slot and, with a
// spill, the only lane; the inner one holds no slot and spills in three frames, finding the lane
// taken each time. out[0]: empty takes.
struct MissedLane {
  WS ws;
  int n;  // doubles of each spilled take
  counts out;
  KOKKOS_INLINE_FUNCTION void operator()(const member& team) const {
    auto outer = ws.arena(team);
    auto held = outer.take<double*>(n);  // spills: the lane is the outer arena's now
    if (held.data() == nullptr) Kokkos::atomic_add(&out.data()[0], 1ll);
    auto inner = ws.arena(team);  // the slot is taken: none
    for (int f = 0; f < 3; ++f) {
      auto frame = inner.frame();
      auto v = inner.take<double*>(n);
      if (v.data() == nullptr) Kokkos::atomic_add(&out.data()[0], 1ll);
    }
  }
};

// A loop of frames filled and read across threads with TeamThreadRange, with no barrier of its
// own at the end of an iteration: the frame's end is that barrier. out[0]: entries read that
// another iteration had written.
struct FrameLoop {
  WS ws;
  int n, iterations;
  counts out;
  KOKKOS_INLINE_FUNCTION void operator()(const member& team) const {
    auto arena = ws.arena(team);
    for (int it = 0; it < iterations; ++it) {
      auto frame = arena.frame();
      auto v = arena.take<int*>(n);
      int* p = v.data();
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, n), [&](const int i) { p[i] = it; });
      team.team_barrier();
      long long w = 0;
      // Read in the opposite order: each thread reads what others wrote.
      Kokkos::parallel_reduce(
          Kokkos::TeamThreadRange(team, n),
          [&](const int i, long long& acc) { acc += p[n - 1 - i] != it ? 1 : 0; }, w);
      Kokkos::single(Kokkos::PerTeam(team), [&]() {
        if (w != 0) Kokkos::atomic_add(&out.data()[0], w);
      });
    }
  }
};

// Each thread takes one rank-3 array with an extent of 2^32 (too large for a legacy View).
struct Wide {
  WS ws;
  counts out;  // [0]: takes not refused
  KOKKOS_INLINE_FUNCTION void operator()(const member& team) const {
    auto arena = ws.arena(team);
    auto v = arena.take<char***>(1, 1, std::int64_t{1} << 32);
    Kokkos::single(Kokkos::PerTeam(team), [&]() {
      if (v.data() != nullptr || arena.ok()) Kokkos::atomic_add(&out.data()[0], 1ll);
    });
  }
};

const char* name(Shape s) {
  return s == Shape::return_at_once ? "return at once" : s == Shape::break_loop ? "break" : "go on";
}

// Serial (and the foreign space, which runs on Serial) has one thread: nothing can meet a
// taken lane there, so a rerun sized for the needs has no fallback at all.
constexpr bool one_thread =
#if defined(KOKKOS_ENABLE_SERIAL)
    std::is_same<exec, Kokkos::Serial>::value;
#else
    false;
#endif

}  // namespace

TEST_CASE(
    "workspace learning: slots are the teams a GPU can hold in flight, for an H200, AUTO "
    "included") {
  // An H200: 132 SMs x 2048 threads (Kokkos' concurrency), 32 resident blocks per SM.
  const long long concurrency = 132 * 2048, resident = 132 * 32;
  CHECK(kbuf::Impl::team_slots(concurrency, 128, 1, 1 << 20, resident) == 2112);
  CHECK(kbuf::Impl::team_slots(concurrency, 128, 8, 1 << 20, resident) == 264);
  CHECK(kbuf::Impl::team_slots(concurrency, 256, 1, 1 << 20, resident) == 1056);
  CHECK(kbuf::Impl::team_slots(concurrency, 32, 1, 1 << 20, resident) == 4224);  // 64/SM > 32
  CHECK(kbuf::Impl::team_slots(concurrency, -1, 1, 1 << 20, resident) == 4224);  // AUTO
  CHECK(kbuf::Impl::team_slots(concurrency, -1, 8, 1 << 20, resident) == 4224);
  CHECK(kbuf::Impl::team_slots(concurrency, 128, 1, 1000, resident) == 1000);  // the league
  CHECK(kbuf::Impl::team_slots(concurrency, 128, 1, 0, resident) == 0);
  // The host: 16 OpenMP threads; vector lanes are loops there (vector length 1).
  CHECK(kbuf::Impl::team_slots(16, 1, 1, 1 << 20, 0) == 16);
  CHECK(kbuf::Impl::team_slots(16, 2, 1, 1 << 20, 0) == 8);
  CHECK(kbuf::Impl::team_slots(16, 3, 1, 1 << 20, 0) == 6);
  CHECK(kbuf::Impl::team_slots(16, -1, 1, 5, 0) == 5);
  // per_thread: the token's size, at most the policy's threads.
  CHECK(kbuf::Impl::thread_slots(concurrency, 1000) == 1000);
  CHECK(kbuf::Impl::thread_slots(concurrency, 1 << 30) == static_cast<std::size_t>(concurrency));
  CHECK(kbuf::Impl::thread_slots(16, 0) == 16);
}

// Each team takes `n` doubles and fills them; out[0]: empty takes.
struct TeamTakes {
  WS ws;
  int n;
  counts out;
  KOKKOS_INLINE_FUNCTION void operator()(const member& team) const {
    auto arena = ws.arena(team);
    auto v = arena.take<double*>(n);
    double* p = v.data();
    if (p == nullptr) {
      Kokkos::single(Kokkos::PerTeam(team), [&]() { Kokkos::atomic_add(&out.data()[0], 1ll); });
      return;
    }
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, n), [&](const int i) { p[i] = i; });
  }
};

TEST_CASE(
    "workspace learning: a Kokkos::AUTO team size counts its slots for the threads the label's "
    "teams ran with") {
  Alloc alloc(1 << 22);
  const int league = 64;
  const long long concurrency = alloc.execution_space_instance().concurrency();
  // The threads a team of the first round runs with: two where the backend has them (on a GPU
  // Kokkos resolves AUTO to 128 or 256; here the first round names its team size instead).
  const int most = team_policy(alloc.execution_space_instance(), 1, 1)
                       .team_size_max(TeamTakes{}, Kokkos::ParallelForTag());
  const int team = most >= 2 ? 2 : 1;
  {
    auto scope = alloc.scope();
    const team_policy named(alloc.execution_space_instance(), league, team);
    auto ws = alloc.workspace(named, kbuf::per_team{1024}, "auto");
    counts out("out", 1);
    Kokkos::parallel_for("auto", named, TeamTakes{ws, 64, out});
    const kbuf::WorkspaceReport r = ws.finish();
    CHECK(kbuf_test::host_vector(out)[0] == 0);
    CHECK(r.team_threads == static_cast<std::size_t>(team));
  }
  const team_policy automatic(alloc.execution_space_instance(), league, Kokkos::AUTO);
  auto scope = alloc.scope();
  auto unseen = alloc.workspace(automatic, kbuf::per_team{1024}, "auto, never run");
  auto ws = alloc.workspace(automatic, kbuf::per_team{1024}, "auto");
  // A label that has not run: AUTO as the smallest team; one that has: its teams' threads.
  CHECK(unseen.slots() == kbuf::Impl::team_slots(concurrency, 1, 1, league, 0));
  CHECK(ws.slots() == kbuf::Impl::team_slots(concurrency, team, 1, league, 0));
  (void)unseen.finish();
  (void)ws.finish();
}

TEST_CASE(
    "workspace learning: sizes from the bytes they hold, never more than fixed slots (large "
    "needs 50x the common one)") {
  const std::size_t unit = 64, common = 4096, large = 50 * common, arenas = 200000;
  const bool print = std::getenv("KBUF_TEST_PRINT_SIZING") != nullptr;
  if (print) {
    std::printf("%6s %10s %12s %10s %6s %12s %9s %12s\n", "slots", "frequency", "slot bytes",
                "lanes", "", "bytes held", "/fixed", "misses/run");
  }
  for (const std::size_t slots : {1, 2, 16, 2112}) {
    for (const std::size_t every : {20, 100, 200, 1000, 10000}) {
      CAPTURE(slots);
      CAPTURE(every);
      kbuf::Impl::WorkspaceNeeds needs;
      needs.arenas = arenas;
      needs.levels = {{common, arenas - arenas / every}, {large, arenas / every}};
      const kbuf::Impl::WorkspaceSizes s = kbuf::Impl::workspace_sizes(needs, slots, unit);
      const long double fixed = static_cast<long double>(slots) * large;
      if (print) {
        std::printf("%6zu %10s %12zu %10zu %6s %12.0Lf %9.4Lf %12.3f\n", slots,
                    ("1/" + std::to_string(every)).c_str(), s.slot_bytes, s.lanes,
                    s.lanes != 0 ? "x 50" : "", s.bytes, s.bytes / fixed, s.expected_misses);
      }
      CHECK(s.bytes <= fixed);
      CHECK(s.miss_probability <= kbuf::Impl::lane_miss_target);
      CHECK((s.slot_bytes == common || s.slot_bytes == large));
      if (s.slot_bytes == common) CHECK(s.lane_bytes == large);
      if (slots == 2112 && every == 200) CHECK(s.bytes <= fixed / 10);
      if (slots == 2 && every == 200) CHECK(s.bytes <= 2 * common + large);
      if (slots == 1) CHECK(s.bytes == fixed);        // one slot: a lane would only add to it
      if (slots == 2112) CHECK(s.bytes < fixed / 5);  // every frequency: lanes pay
    }
  }
}

TEST_CASE("workspace learning: the miss probability is the binomial tail") {
  // P(X >= k), X ~ B(n, p), against sums done here.
  CHECK(kbuf::Impl::binomial_tail(1, 0.25, 1) == doctest::Approx(0.25));
  CHECK(kbuf::Impl::binomial_tail(2, 0.5, 1) == doctest::Approx(0.75));
  CHECK(kbuf::Impl::binomial_tail(2, 0.5, 2) == doctest::Approx(0.25));
  CHECK(kbuf::Impl::binomial_tail(3, 0.1, 2) == doctest::Approx(3 * 0.01 * 0.9 + 0.001));
  CHECK(kbuf::Impl::binomial_tail(5, 0.3, 0) == 1.0);
  CHECK(kbuf::Impl::binomial_tail(5, 0.3, 6) == 0.0);
  // Large n and p, where (1 - p)^n underflows a double: still a probability, and monotone.
  const double a = kbuf::Impl::binomial_tail(270000, 0.5, 135000);
  const double b = kbuf::Impl::binomial_tail(270000, 0.5, 136000);
  CHECK(a > 0.4);
  CHECK(a < 0.6);
  CHECK(b < a);
  CHECK(b >= 0.0);
}

TEST_CASE(
    "workspace learning: every kernel shape completes in one round, per team, and the rerun needs "
    "no fallback") {
  Alloc alloc(1 << 16);
  const int league = 2000, small = 256, large = 12800, every = 200, frames = 6, k = 12;
  // Teams of one thread, and of as many as the backend allows up to 16 (OpenMP: its threads).
  const int most_team = team_policy(alloc.execution_space_instance(), 1, 1)
                            .team_size_max(TeamShapes{}, Kokkos::ParallelForTag());
  std::vector<int> team_sizes{1};
  if (most_team > 1) team_sizes.push_back(most_team < 16 ? most_team : 16);
  for (const int team_size : team_sizes) {
    for (const Shape shape : {Shape::return_at_once, Shape::break_loop, Shape::go_on}) {
      CAPTURE(team_size);
      CAPTURE(name(shape));
      const team_policy policy(alloc.execution_space_instance(), league, team_size);
      const std::string label =
          std::string("team shapes ") + name(shape) + " " + std::to_string(team_size);
      for (int round = 1; round <= 2; ++round) {
        CAPTURE(round);
        auto scope = alloc.scope();
        auto ws = alloc.workspace(policy, kbuf::per_team{512}, label);  // a guess far too small
        counts out("out", 3);
        Kokkos::parallel_for("team shapes", policy,
                             TeamShapes{ws, shape, small, large, every, frames, k, out});
        const kbuf::WorkspaceReport r = ws.finish();
        // The kernel's error counts: every value right; no take failed: the kernel never left
        // early.
        CHECK(kbuf_test::nonzero_entries(out) == "");
        CHECK(r.complete());
        CHECK(r.takes == static_cast<std::size_t>(league) * (1 + frames));
        if (round == 1) {
          CHECK(r.fallbacks > 0);  // the guess was too small: served by fallbacks, learned
          continue;
        }
        CHECK(r.spill_peak <= r.lane_bytes);  // sized for every need
        CHECK((r.fallbacks == 0 || r.lanes_missed != 0));
        if (one_thread) CHECK(r.fallbacks == 0);
        // Less than fixed slots of the largest need, once more than one slot is in flight.
        if (ws.slots() > 1) CHECK(ws.slot_bytes() < r.peak_slot_bytes);
      }
    }
  }
}

TEST_CASE(
    "workspace learning: every kernel shape completes in one round, per thread, and the rerun "
    "needs no fallback") {
  Alloc alloc(1 << 16);
  const int iterations = 3000, small = 200, large = 10000, every = 150;
  const Kokkos::RangePolicy<exec> policy(alloc.execution_space_instance(), 0, iterations);
  const Kokkos::Experimental::UniqueToken<exec, Kokkos::Experimental::UniqueTokenScope::Global>
      token(alloc.execution_space_instance());
  for (const Shape shape : {Shape::return_at_once, Shape::break_loop, Shape::go_on}) {
    CAPTURE(name(shape));
    const std::string label = std::string("thread shapes ") + name(shape);
    for (int round = 1; round <= 2; ++round) {
      CAPTURE(round);
      auto scope = alloc.scope();
      auto ws = alloc.workspace(policy, kbuf::per_thread{256}, label);
      REQUIRE(ws.slots() ==
              std::min<std::size_t>(static_cast<std::size_t>(token.size()), iterations));
      counts out("out", 3);
      Kokkos::parallel_for("thread shapes", policy,
                           ThreadShapes{ws, token, shape, small, large, every, out});
      const kbuf::WorkspaceReport r = ws.finish();
      CHECK(kbuf_test::nonzero_entries(out) == "");
      CHECK(r.complete());
      CHECK(r.takes == static_cast<std::size_t>(iterations) * 3);
      if (round == 1) {
        CHECK(r.fallbacks > 0);
        continue;
      }
      CHECK(r.spill_peak <= r.lane_bytes);
      CHECK((r.fallbacks == 0 || r.lanes_missed != 0));
      if (one_thread) CHECK(r.fallbacks == 0);
    }
  }
}

TEST_CASE("workspace learning: an arena that finds the lane taken is counted once, however often") {
  Alloc alloc(1 << 16);
  const team_policy policy(alloc.execution_space_instance(), 1, 1);
  const int n = 1024;  // doubles: 8 KiB, more than the slot
  auto scope = alloc.scope();
  auto ws = alloc.workspace(policy, kbuf::per_team{64, n * sizeof(double)}, "missed");
  REQUIRE(ws.slots() == 1);
  REQUIRE(ws.spill_lanes() == 1);
  counts out("out", 1);
  Kokkos::parallel_for("missed", policy, MissedLane{ws, n, out});
  const kbuf::WorkspaceReport r = ws.finish();
  CHECK(kbuf_test::host_vector(out)[0] == 0);  // every take served
  CHECK(r.arenas == 2);
  CHECK(r.unslotted_arenas == 1);
  CHECK(r.spilling_arenas == 2);
  CHECK(r.spills == 1);        // the outer arena's take, in the lane
  CHECK(r.fallbacks == 3);     // the inner arena's three, each in its own frame
  CHECK(r.lanes_missed == 1);  // one arena, not one per spill
  CHECK(r.complete());
}

TEST_CASE(
    "workspace learning: a frame's end is the team's barrier, so a loop of frames needs none") {
  Alloc alloc(1 << 16);
  const int n = 4096, iterations = 200;
  int team = 4;
  const team_policy probe(alloc.execution_space_instance(), 8, 1);
  const int most =
      probe.team_size_max(FrameLoop{WS(), n, iterations, counts()}, Kokkos::ParallelForTag());
  if (team > most) team = most;
  CAPTURE(team);
  const team_policy policy(alloc.execution_space_instance(), 8, team);
  auto scope = alloc.scope();
  auto ws = alloc.workspace(policy, kbuf::per_team{n * sizeof(int)}, "frame loop");
  counts out("out", 1);
  Kokkos::parallel_for("frame loop", policy, FrameLoop{ws, n, iterations, out});
  const kbuf::WorkspaceReport r = ws.finish();
  CHECK(kbuf_test::host_vector(out)[0] == 0);
  CHECK(r.complete());
  CHECK(r.takes == static_cast<std::size_t>(8 * iterations));
}

TEST_CASE("workspace learning: a take refuses an extent a legacy View of rank 3 cannot hold") {
  using V = WS::view<char***>;
  if (!kbuf::Impl::extents_held_in_32_bits<V>) return;  // the mdspan View holds it
  Alloc alloc(1 << 16);
  const team_policy policy(alloc.execution_space_instance(), 4, 1);
  auto scope = alloc.scope();
  auto ws = alloc.workspace(policy, kbuf::per_team{1024}, "wide");
  counts out("out", 1);
  Kokkos::parallel_for("wide", policy, Wide{ws, out});
  const kbuf::WorkspaceReport r = ws.finish();
  CHECK(kbuf_test::host_vector(out)[0] == 0);
  CHECK(r.failed_takes == 4);
  CHECK(r.fallbacks == 0);
}

#if KOKKOS_VERSION >= 40200
TEST_CASE("workspace learning: a policy on another instance than the allocator's is refused") {
  bool split = true;  // partition_space aborts where an OpenMP instance would get no thread
#if defined(KOKKOS_ENABLE_OPENMP)
  split = !std::is_same<exec, Kokkos::OpenMP>::value || exec().concurrency() >= 2;
#endif
  if (!split) return;
  const std::vector<exec> instances =
      Kokkos::Experimental::partition_space(exec(), std::vector<int>{1, 1});
  Alloc alloc(instances[0], 1 << 16);
  auto keep = alloc.allocate<double*>(10);
  const std::size_t used = alloc.used();
  const auto temporaries = alloc.statistics().temporaries;
  const team_policy other(instances[1], 4, 1);
  try {
    (void)alloc.workspace(other, kbuf::per_team{1024}, "other instance");
    FAIL("no exception");
  } catch (const kbuf::logic_error& e) {
    const std::string what = e.what();
    CHECK(what.find("kbuf::BufferAllocator::workspace(policy, per_team)") != std::string::npos);
    CHECK(what.find("another instance") != std::string::npos);
    CHECK(what.find("other instance") != std::string::npos);
  }
  const Kokkos::RangePolicy<exec> range(instances[1], 0, 100);
  CHECK_THROWS_AS(alloc.workspace(range, kbuf::per_thread{64}, "other range"), kbuf::logic_error);
  CHECK(alloc.used() == used);
  CHECK(alloc.statistics().temporaries == temporaries);
  // The allocator's own instance is served.
  const team_policy own(instances[0], 4, 1);
  auto scope = alloc.scope();
  auto ws = alloc.workspace(own, kbuf::per_team{1024}, "own instance");
  CHECK(ws.slots() >= 1);
  (void)ws.finish();
  (void)keep;
}
#endif
