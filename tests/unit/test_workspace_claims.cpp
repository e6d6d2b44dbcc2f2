// The claims inside kbuf::Workspace driven by host threads at once (also under ThreadSanitizer,
// label "threads"): a slot, or a spill lane, is never held by two claimants; a lane claim is one
// pass that never waits (a claimant that finds every lane taken is served by fallbacks); a run
// of the fallback region's chunks is held by one claimant, and what it wrote there is done
// before the next claimant writes (the release is ordered: ThreadSanitizer sees no race). The same
// functions run inside kernels (kbuf/workspace.hpp); here nothing but the claims runs, so that the
// threads meet in them as often as possible.
#include <doctest/doctest.h>

#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

#include <kbuf/kbuf.hpp>

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
