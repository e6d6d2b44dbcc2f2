// The claims inside kbuf::Workspace driven by host threads at once (also under ThreadSanitizer,
// label "threads"): a slot is never held by two claimants, spilled blocks never overlap, and
// once every block is given back the spill area is empty again. The same functions run inside
// kernels (kbuf/workspace.hpp); here nothing but the claims runs, so that the threads meet in
// them as often as possible.
#include <doctest/doctest.h>

#include <atomic>
#include <cstddef>
#include <random>
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
  std::vector<unsigned int> flags(slots, 0u);
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
  for (const unsigned int f : flags) CHECK(f == 0u);
}

TEST_CASE(
    "workspace claims: four threads spill at once: blocks never overlap, the area ends empty") {
  constexpr int threads = 4;
  constexpr unsigned long long cap = 64;  // units
  constexpr int rounds = 4000;
  unsigned long long word = 0, peak = 0;
  std::vector<std::atomic<int>> owner(cap);
  for (auto& o : owner) o.store(0);
  std::atomic<long> overlaps{0}, served{0}, refused{0};
  on_threads(threads, [&](int t) {
    std::mt19937 rng(1234u + static_cast<unsigned>(t));
    std::uniform_int_distribution<int> size(1, 8), depth(1, 3);
    kbuf::Impl::SpillCursor cursor;
    struct Block {
      unsigned long long at, units;
    };
    for (int i = 0; i < rounds; ++i) {
      Block stack[3];
      int n = 0;
      const int want = depth(rng);
      for (int k = 0; k < want; ++k) {
        const unsigned long long u = static_cast<unsigned long long>(size(rng));
        const unsigned long long at = kbuf::Impl::spill_claim(&word, &peak, cap, u, cursor);
        if (at == kbuf::Impl::failed_claim) {
          ++refused;
          continue;
        }
        if (at + u > cap) ++overlaps;  // outside the area
        for (unsigned long long x = at; x < at + u && x < cap; ++x) {
          if (owner[x].exchange(t + 1) != 0) ++overlaps;
        }
        stack[n++] = Block{at, u};
        if ((i + k) % 8 == 0) std::this_thread::yield();
        ++served;
      }
      while (n > 0) {  // LIFO, as an arena gives back
        const Block b = stack[--n];
        for (unsigned long long x = b.at; x < b.at + b.units && x < cap; ++x) {
          if (owner[x].exchange(0) != t + 1) ++overlaps;
        }
        kbuf::Impl::spill_release(&word, b.units, cursor);
      }
    }
  });
  CHECK(overlaps.load() == 0);
  CHECK(served.load() > 0);
  CHECK(word == 0ull);  // nothing live, the top back at zero
  CHECK(peak <= cap + 8);
}

TEST_CASE("workspace claims: one claimant's LIFO blocks bring the top down as they go") {
  unsigned long long word = 0, peak = 0;
  kbuf::Impl::SpillCursor c;
  CHECK(kbuf::Impl::spill_claim(&word, &peak, 10, 4, c) == 0);
  CHECK(kbuf::Impl::spill_claim(&word, &peak, 10, 5, c) == 4);
  CHECK(kbuf::Impl::spill_claim(&word, &peak, 10, 2, c) == kbuf::Impl::failed_claim);
  CHECK(peak == 11);  // asked for, though refused
  kbuf::Impl::spill_release(&word, 5, c);
  CHECK((word >> 32) == 4);  // the top came down
  CHECK((word & kbuf::Impl::spill_half) == 4);
  CHECK(kbuf::Impl::spill_claim(&word, &peak, 10, 6, c) == 4);
  kbuf::Impl::spill_release(&word, 6, c);
  kbuf::Impl::spill_release(&word, 4, c);
  CHECK(word == 0ull);
}
