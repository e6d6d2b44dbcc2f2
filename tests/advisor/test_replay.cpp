// The replay (kbuf-advisor's BufferAllocator without memory) against a real
// kbuf::BufferAllocator: the same programs of temporaries through both, every number compared
// after every step. Both run kbuf's rules (kbuf/impl/buffer_policy.hpp); this checks that the
// replay drives them in the order the allocator does.
#include <doctest/doctest.h>

#include <kbuf/kbuf.hpp>
#include <kbuf_advisor/replay.hpp>

#include <cstddef>
#include <random>
#include <vector>

namespace {

using Alloc = kbuf::BufferAllocator<Kokkos::HostSpace>;

void check_same(const Alloc& alloc, const kbuf_advisor::Replay& replay) {
  const kbuf::Impl::BufferPolicy& p = replay.policy();
  const kbuf::Statistics s = alloc.statistics();
  CHECK(alloc.capacity() == p.capacity());
  CHECK(alloc.used() == p.used());
  CHECK(alloc.high_water_mark() == p.high_water_mark());
  CHECK(s.fallbacks == p.counters().fallbacks);
  CHECK(s.fallback_bytes == p.counters().fallback_bytes);
  CHECK(s.regrows == p.counters().regrows);
}

// Rounds of nested temporaries (a scope each, sometimes nested scopes inside), sizes from a
// few bytes to several pages, so that fallbacks, growth and reuse all happen.
void run_program(unsigned seed, std::size_t rounds) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> op(0, 9);
  std::uniform_int_distribution<std::size_t> small(0, 3000), large(0, 40000);
  Alloc alloc(0, Alloc::default_alignment);
  kbuf_advisor::Replay replay(Alloc::default_alignment);
  for (std::size_t round = 0; round < rounds; ++round) {
    std::vector<Alloc::Checkpoint> cps;
    std::vector<kbuf_advisor::Replay::Point> points;
    const int steps = 5 + op(rng) * 3;
    for (int i = 0; i < steps; ++i) {
      if (!cps.empty() && op(rng) < 4) {  // release the newest (LIFO)
        alloc.reset(cps.back());
        replay.release(points.back());
        cps.pop_back();
        points.pop_back();
      } else {
        const std::size_t n = op(rng) == 0 ? large(rng) : small(rng);
        cps.push_back(alloc.checkpoint());
        (void)alloc.allocate<unsigned char*>(n);
        bool from_buffer = false;
        points.push_back(replay.acquire(n, from_buffer));
      }
      check_same(alloc, replay);
    }
    alloc.reset();
    if (!points.empty()) replay.release(points.front());
    check_same(alloc, replay);
  }
}

}  // namespace

TEST_CASE("the replay holds, grows and falls back exactly as a BufferAllocator does") {
  for (unsigned seed = 1; seed <= 20; ++seed) {
    CAPTURE(seed);
    run_program(seed, 12);
  }
}

TEST_CASE("the replay converges in one round: a repeated program falls back only in its first") {
  kbuf_advisor::Replay replay(64);
  std::uint64_t fallbacks_after_first = 0;
  for (int round = 0; round < 3; ++round) {
    bool from_buffer = false;
    const auto a = replay.acquire(1000, from_buffer);
    (void)replay.acquire(2000, from_buffer);
    if (round > 0) fallbacks_after_first += from_buffer ? 0 : 1;
    replay.release(a);
  }
  CHECK(replay.first_round_fallbacks() == 2);
  CHECK(fallbacks_after_first == 0);
  // The need: 1000 bytes padded to 1024, then 2000.
  CHECK(replay.policy().capacity() == kbuf::buffer_size(1024 + 2000));
}
