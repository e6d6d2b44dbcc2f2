// The claims inside kbuf::Workspace driven by host threads at once (also under ThreadSanitizer,
// label "threads"): a slot, or a spill lane, is never held by two claimants; a lane claim is one
// pass that never waits (a claimant that finds every lane taken is served by fallbacks); a run
// of the fallback region's chunks is held by one claimant, and what it wrote there is done
// before the next claimant writes (the release is ordered: ThreadSanitizer sees no race). The same
// functions run inside kernels (kbuf/workspace.hpp); here nothing but the claims runs, so that the
// threads meet in them as often as possible. The debug team check runs here too, on a model of
// a wavefront whose lanes run in lockstep (tests/support/lockstep.hpp).
#include <doctest/doctest.h>

#include <atomic>
#include <csignal>
#include <cstddef>
#include <thread>
#include <vector>

#include <kbuf/kbuf.hpp>

#include "lockstep.hpp"
#include "reliability_support.hpp"

namespace {

// Runs `f(t)` on `n` threads, started together (each waits until all have started).
template <class F>
void on_threads(int n, F f) {
  std::atomic<int> started{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < n; ++t) {
    threads.emplace_back([&, t]() {
      ++started;
      while (started.load() < n) std::this_thread::yield();
      f(t);
    });
  }
  for (auto& th : threads) th.join();
}

}  // namespace

TEST_CASE(
    "workspace claims: eight threads, three slots: never two holders, every slot free at the end") {
  constexpr int threads = 8;
  constexpr std::size_t slots = 3;
  constexpr int rounds = 3000;
  std::vector<unsigned int> flags(slots * kbuf::Impl::flag_stride, 0u);
  std::vector<std::atomic<int>> holder(slots);
  for (auto& h : holder) h.store(0);
  std::atomic<long> doubled{0}, served{0}, unslotted{0};
  on_threads(threads, [&](int t) {
    for (int i = 0; i < rounds; ++i) {
      const int s =
          kbuf::Impl::claim_slot(flags.data(), slots, static_cast<std::size_t>(t + i), 4096);
      if (s < 0) {
        ++unslotted;
        continue;
      }
      if (holder[s].exchange(t + 1) != 0) ++doubled;
      if (i % 8 == 0) std::this_thread::yield();  // held a while: another claimant comes by
      if (holder[s].exchange(0) != t + 1) ++doubled;
      ++served;
      kbuf::Impl::release_slot(flags.data(), s);
    }
  });
  CHECK(doubled.load() == 0);
  CHECK(served.load() + unslotted.load() == threads * rounds);
  CHECK(served.load() > 0);
  for (const unsigned int f : flags) CHECK(f == 0u);  // the flags and the padding between
}

TEST_CASE(
    "workspace claims: six threads claim two spill lanes in one pass: one holder each, no wait") {
  constexpr int threads = 6;
  constexpr std::size_t lanes = 2;
  constexpr int rounds = 2000;
  std::vector<unsigned int> flags(lanes * kbuf::Impl::flag_stride, 0u);
  std::vector<std::atomic<int>> holder(lanes);
  for (auto& h : holder) h.store(0);
  std::atomic<long> doubled{0}, served{0}, missed{0};
  on_threads(threads, [&](int t) {
    for (int i = 0; i < rounds; ++i) {
      const int lane =
          kbuf::Impl::claim_slot(flags.data(), lanes, static_cast<std::size_t>(t + i), 1);
      if (lane < 0) {
        ++missed;  // every lane taken at that moment: the arena falls back
        continue;
      }
      if (holder[lane].exchange(t + 1) != 0) ++doubled;
      if (i % 4 == 0) std::this_thread::yield();  // a holder works a while
      if (holder[lane].exchange(0) != t + 1) ++doubled;
      ++served;
      kbuf::Impl::release_slot(flags.data(), lane);
    }
  });
  CHECK(doubled.load() == 0);
  CHECK(served.load() + missed.load() == threads * rounds);
  CHECK(served.load() > 0);
  for (const unsigned int f : flags) CHECK(f == 0u);  // the flags and the padding between
}

TEST_CASE(
    "workspace claims: six threads take runs of the fallback region, write and give them back: one "
    "holder per chunk, the memory handed over in order") {
  constexpr int threads = 6;
  constexpr std::size_t chunks = 24;
  constexpr unsigned shift = 6;  // 64-byte chunks
  constexpr int rounds = 2000;
  std::vector<unsigned int> flags(chunks, 0u);
  std::vector<unsigned char> memory(chunks << shift, 0);
  kbuf::Impl::FallbackRegion region;
  region.flags = flags.data();
  region.base = memory.data();
  region.chunks = chunks;
  region.home = chunks / threads;
  region.shift = shift;
  // Counted per thread and summed at the end: a shared atomic counter would order the threads
  // and hide from ThreadSanitizer a release that does not.
  std::vector<long> wrong(threads, 0), served(threads, 0), missed(threads, 0);
  on_threads(threads, [&](int t) {
    for (int i = 0; i < rounds; ++i) {
      const unsigned long long k = 1 + static_cast<unsigned long long>((t + i) % 5);  // 1 to 5
      const long long first =
          kbuf::Impl::region_claim(region, static_cast<unsigned long long>(t) * region.home, k);
      if (first < 0) {
        ++missed[t];  // every run of k taken at that moment: the take would fail (or go to a heap)
        continue;
      }
      // Plain writes and reads, as a kernel's: a second holder, or a write of the last holder
      // not done before this one's, shows as a wrong byte (and to ThreadSanitizer as a race).
      unsigned char* p = memory.data() + (static_cast<std::size_t>(first) << shift);
      const std::size_t n = static_cast<std::size_t>(k) << shift;
      const unsigned char mine = static_cast<unsigned char>(1 + t);
      for (std::size_t b = 0; b < n; ++b) p[b] = mine;
      if (i % 8 == 0) std::this_thread::yield();  // held a while: another claimant comes by
      for (std::size_t b = 0; b < n; ++b) wrong[t] += p[b] != mine ? 1 : 0;
      ++served[t];
      kbuf::Impl::region_release(region, static_cast<unsigned long long>(first), k);
    }
  });
  long all_wrong = 0, all_served = 0, all_missed = 0;
  for (int t = 0; t < threads; ++t) {
    all_wrong += wrong[t];
    all_served += served[t];
    all_missed += missed[t];
  }
  CHECK(all_wrong == 0);
  CHECK(all_served + all_missed == threads * rounds);
  CHECK(all_served > 0);
  for (const unsigned int f : flags) CHECK(f == 0u);
}

namespace {

// `lanes` lanes of one lockstep wavefront, a team of their own, meet `meetings` times in the debug
// team check of one slot's record; lane `odd` (if any) comes with another signature from
// meeting `odd_from` on. Returns each lane's answers, meeting by meeting; `w` counts the lanes it
// had to let go.
std::vector<int> lockstep_meetings(kbuf_test::Wavefront& w, int lanes, int meetings,
                                   std::vector<unsigned long long>& record, int odd = -1,
                                   int odd_from = 0) {
  std::vector<int> agreed(static_cast<std::size_t>(lanes * meetings), 2);
  on_threads(lanes, [&](int t) {
    const kbuf_test::Wavefront::Lane lane(w);
    for (int m = 0; m < meetings; ++m) {
      w.enter();
      const unsigned long long signature =
          0x1234567ull + static_cast<unsigned long long>(m) + (t == odd && m >= odd_from ? 99 : 0);
      agreed[static_cast<std::size_t>(m * lanes + t)] = kbuf::Impl::team_check(
          record.data(), static_cast<unsigned long long>(lanes), signature, lane);
    }
  });
  return agreed;
}

}  // namespace

TEST_CASE(
    "workspace claims: the debug team check on lanes in lockstep: every lane agrees at once, "
    "whichever side of a branch runs first") {
  for (const bool taken_first : {false, true}) {
    for (const int lanes : {2, 5, 64}) {
      CAPTURE(taken_first);
      CAPTURE(lanes);
      kbuf_test::Wavefront w(lanes, taken_first);
      std::vector<unsigned long long> record(kbuf::Impl::wr_stride, 0ull);
      const std::vector<int> agreed = lockstep_meetings(w, lanes, 3, record);
      int ones = 0;
      for (const int a : agreed) ones += a == 1 ? 1 : 0;
      CHECK(ones == 3 * lanes);  // -1: a lane waited the whole bound on a lane held off
      CHECK(w.overdue() == 0);
      CHECK(w.parted() > 0);  // the lanes did part: the model held one side
      CHECK(record[kbuf::Impl::wr_check_count] == 0ull);  // ready for the next meeting
      CHECK(record[kbuf::Impl::wr_check_sum] == 0ull);
      CHECK(record[kbuf::Impl::wr_check_generation] == 3ull);
    }
  }
}

TEST_CASE(
    "workspace claims: the debug team check on lanes in lockstep: a lane with another take is "
    "seen by every lane at once (0, not the time bound's -1), whichever side runs first") {
  for (const bool taken_first : {false, true}) {
    CAPTURE(taken_first);
    constexpr int lanes = 4;
    kbuf_test::Wavefront w(lanes, taken_first);
    std::vector<unsigned long long> record(kbuf::Impl::wr_stride, 0ull);
    const std::vector<int> agreed = lockstep_meetings(w, lanes, 2, record, 2, 1);
    for (int t = 0; t < lanes; ++t) {
      CAPTURE(t);
      CHECK(agreed[static_cast<std::size_t>(t)] == 1);          // the first meeting agreed
      CHECK(agreed[static_cast<std::size_t>(lanes + t)] == 0);  // the second did not
    }
    CHECK(w.overdue() == 0);
  }
}

TEST_CASE(
    "workspace claims: the debug team check on lanes in lockstep: a misuse aborts with its message "
    "in bounded time, whichever side of the report's branch runs first") {
  for (const bool waiters_first : {true, false}) {
    CAPTURE(waiters_first);
    const kbuf_rel::ChildResult r = kbuf_rel::run_in_child([&]() {
      std::signal(SIGABRT, SIG_DFL);  // the abort itself, not doctest's report of it
      // The lanes that leave the report to another take the branch's true side.
      kbuf_test::Wavefront w(2, waiters_first, 20000);
      std::vector<unsigned long long> record(kbuf::Impl::wr_stride, 0ull);
      on_threads(2, [&](int t) {
        const kbuf_test::Wavefront::Lane lane(w);
        w.enter();
        const int agreed =
            kbuf::Impl::team_check(record.data(), 2ull, 0x77ull + static_cast<unsigned>(t), lane);
        kbuf::Impl::team_check_report(record.data(), agreed, lane);
      });
    });
    INFO(r.output);
    CHECK(r.aborted());
    CHECK(r.says("the threads of a team made different takes or frames (a take"));
    CHECK_FALSE(r.says("lockstep model: a lane held"));  // no lane waited on a held one
  }
}
