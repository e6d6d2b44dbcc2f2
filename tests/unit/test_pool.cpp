// kbuf::AllocatorPool from many host threads: every thread's temporaries stay its own, exited
// threads' allocators are reused, statistics() read during the work never tears, and pools and
// threads may die in either order. Also run under ThreadSanitizer (scripts/ci-reliability.sh).
#include <doctest/doctest.h>

#include "test_support.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace kbuf_test;
using Pool = kbuf::AllocatorPool<kbuf_test::space>;  // the default space, or the foreign one
using LocalAlloc = Pool::allocator_type;

// A temporary's bytes as 32-bit words (every element size used here is a multiple of 4).
struct Block {
  std::uint32_t* words;
  std::size_t count;
  std::uint32_t tag;
};

template <class View>
Block block_of(const View& v, std::uint32_t tag) {
  const std::size_t bytes = v.span() * sizeof(typename View::value_type);
  return Block{reinterpret_cast<std::uint32_t*>(v.data()), bytes / 4, tag};
}

// The block's words as a view in the pool's space: the host reaches them through deep_copy.
using Words = Kokkos::View<std::uint32_t*, kbuf_test::space, Kokkos::MemoryUnmanaged>;
Words words_of(const Block& b) {
  return Words(b.words, b.count);
}

void fill(const Block& b) {
  std::vector<std::uint32_t> pattern(b.count);
  for (std::size_t i = 0; i < b.count; ++i) pattern[i] = b.tag ^ static_cast<std::uint32_t>(i);
  Kokkos::deep_copy(words_of(b),
                    Kokkos::View<std::uint32_t*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(
                        pattern.data(), b.count));
}

// The first word that does not carry the block's pattern (with the word read), or count if all
// do.
std::size_t first_bad(const Block& b, std::uint32_t& read) {
  const auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), words_of(b));
  for (std::size_t i = 0; i < b.count; ++i) {
    if (h(i) != (b.tag ^ static_cast<std::uint32_t>(i))) {
      read = h(i);
      return i;
    }
  }
  return b.count;
}

// thread (8 bits) | round (16 bits) | temporary (8 bits): distinct for every live temporary of
// every thread and round that can overlap.
std::uint32_t make_tag(unsigned thread, unsigned round, unsigned k) {
  return (thread & 0xFFu) << 24 | (round & 0xFFFFu) << 8 | (k & 0xFFu);
}

struct ThreadResult {
  std::size_t allocations = 0;  // allocate calls (temporaries + fallbacks)
  std::size_t resets = 0;
  std::size_t bad_words = 0;
  std::string first_error;
  const void* allocator = nullptr;
};

// One thread of the stress test: `rounds` rounds of mixed temporaries from pool.local(),
// each filled with its own pattern, all live ones checked after every other allocation,
// released in LIFO order through nested scopes and explicit checkpoints.
void stress_thread(Pool& pool, unsigned id, unsigned rounds, ThreadResult& out) {
  std::mt19937 rng(1234u + id);
  std::vector<Block> live;
  auto check_all = [&](unsigned round) {
    for (const Block& b : live) {
      std::uint32_t read = 0;
      const std::size_t bad = first_bad(b, read);
      if (bad != b.count) {
        ++out.bad_words;
        if (out.first_error.empty()) {
          out.first_error = "thread " + std::to_string(id) + " round " + std::to_string(round) +
                            ": word " + std::to_string(bad) + " of a temporary reads " +
                            std::to_string(read) + ", expected " +
                            std::to_string(b.tag ^ static_cast<std::uint32_t>(bad));
        }
      }
    }
  };
  for (unsigned round = 0; round < rounds; ++round) {
    LocalAlloc& alloc = pool.local();
    if (out.allocator == nullptr) out.allocator = &alloc;
    if (out.allocator != &alloc && out.first_error.empty()) {
      out.first_error = "local() returned another allocator in round " + std::to_string(round);
    }
    unsigned k = 0;
    auto add = [&](const Block& b) {
      fill(b);
      live.push_back(b);
      ++out.allocations;
      if (++k % 2 == 0) check_all(round);
    };
    const auto n = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    {
      auto outer = alloc.scope();
      add(block_of(alloc.allocate<double**>(n(1, 9), n(1, 9)), make_tag(id, round, k)));
      add(block_of(alloc.allocate<Pod12* [3], Kokkos::LayoutLeft>(n(0, 20)),
                   make_tag(id, round, k)));
      const std::size_t outer_live = live.size();
      {
        auto inner = alloc.scope();
        add(block_of(alloc.allocate<Kokkos::complex<double>***, Kokkos::LayoutLeft>(
                         n(1, 4), n(1, 4), n(1, 4)),
                     make_tag(id, round, k)));
        const auto cp = alloc.checkpoint();
        const std::size_t cp_live = live.size();
        add(block_of(alloc.allocate<int*>(n(1, 300)), make_tag(id, round, k)));
        add(block_of(alloc.allocate<Wide*>(n(1, 5)), make_tag(id, round, k)));
        check_all(round);
        alloc.reset(cp);
        ++out.resets;
        live.resize(cp_live);
        add(block_of(alloc.allocate<float**, Kokkos::LayoutLeft>(n(1, 30), n(1, 30)),
                     make_tag(id, round, k)));
        check_all(round);
      }
      ++out.resets;
      live.resize(outer_live);
      add(block_of(alloc.allocate<std::int64_t*>(n(1, 100)), make_tag(id, round, k)));
      check_all(round);
    }
    ++out.resets;
    live.clear();
    if (!alloc.empty() && out.first_error.empty()) {
      out.first_error = "allocator not empty after round " + std::to_string(round);
    }
  }
}

void run_stress(unsigned nthreads, unsigned rounds) {
  Pool pool;
  std::vector<ThreadResult> results(nthreads);
  std::vector<std::thread> threads;
  std::atomic<unsigned> ready{0};
  for (unsigned t = 0; t < nthreads; ++t) {
    threads.emplace_back([&, t] {
      (void)pool.local();  // every thread takes its allocator before any starts its rounds
      ready.fetch_add(1);
      while (ready.load() < nthreads) std::this_thread::yield();
      stress_thread(pool, t, rounds, results[t]);
    });
  }
  for (auto& th : threads) th.join();

  std::size_t allocations = 0, resets = 0;
  std::set<const void*> allocators;
  for (unsigned t = 0; t < nthreads; ++t) {
    INFO("thread " << t);
    CHECK(results[t].first_error == "");
    CHECK(results[t].bad_words == 0);
    allocations += results[t].allocations;
    resets += results[t].resets;
    allocators.insert(results[t].allocator);
  }
  // The threads ran at once (they waited for each other), so each had its own allocator.
  CHECK(allocators.size() == nthreads);
  CHECK(pool.size() == nthreads);
  // Exact once the threads have exited.
  const kbuf::Statistics s = pool.statistics();
  CHECK(s.temporaries + s.fallbacks + s.empty == allocations);
  CHECK(s.resets == resets);
  CHECK(s.peak_live >= 4);
}

}  // namespace

TEST_CASE("pool stress: 2, 4 and 8 threads never see another thread's or round's bytes") {
  for (unsigned n : {2u, 4u, 8u}) {
    INFO(n << " threads");
    run_stress(n, 2000);
  }
}

TEST_CASE("local() gives each thread one allocator, the same on every call") {
  Pool pool;
  LocalAlloc& a = pool.local();
  CHECK(&pool.local() == &a);
  CHECK(pool.size() == 1);
  const LocalAlloc* other = nullptr;
  std::thread([&] { other = &pool.local(); }).join();
  CHECK(other != nullptr);
  CHECK(other != &a);
  CHECK(pool.size() == 2);
  CHECK(pool.idle() == 1);  // the exited thread's allocator is kept
  CHECK(a.alignment() == LocalAlloc::default_alignment);
}

TEST_CASE("an exited thread's allocator, buffer included, serves the next thread") {
  Pool pool(4096);
  const void* first = nullptr;
  const void* first_buffer = nullptr;
  std::thread([&] {
    auto& alloc = pool.local();
    first = &alloc;
    first_buffer = alloc.buffer().data();
    auto s = alloc.scope();
    (void)alloc.allocate<double*>(100);
  }).join();
  const void* second = nullptr;
  const void* second_buffer = nullptr;
  std::size_t capacity = 0;
  std::thread([&] {
    auto& alloc = pool.local();
    second = &alloc;
    second_buffer = alloc.buffer().data();
    capacity = alloc.capacity();
  }).join();
  CHECK(second == first);
  CHECK(second_buffer == first_buffer);
  CHECK(capacity == kbuf::buffer_size(4096));
  CHECK(pool.size() == 1);
}

TEST_CASE("1000 short-lived threads make at most as many allocators as ever ran at once") {
  Pool pool;
  constexpr unsigned wave = 4;  // threads alive at once
  constexpr unsigned total = 1000;
  std::atomic<std::size_t> bad{0};
  for (unsigned started = 0; started < total; started += wave) {
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < wave; ++t) {
      threads.emplace_back([&, t] {
        auto& alloc = pool.local();
        auto s = alloc.scope();
        auto v = alloc.allocate<int*>(64);
        Kokkos::deep_copy(v, static_cast<int>(started + t));
        const auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
        for (int i = 0; i < 64; ++i) {
          if (h(i) != static_cast<int>(started + t)) bad.fetch_add(1);
        }
      });
    }
    for (auto& th : threads) th.join();
  }
  CHECK(bad.load() == 0);
  CHECK(pool.size() >= 1);
  CHECK(pool.size() <= wave);
  CHECK(pool.idle() == pool.size());
  CHECK(pool.statistics().temporaries + pool.statistics().fallbacks == total);
  CHECK(pool.statistics().resets == total);
}

TEST_CASE("statistics() read during the work is a consistent sum, never torn") {
  Pool pool;
  constexpr unsigned nthreads = 3;
  constexpr std::size_t per_round = 5;  // temporaries per round, one reset per round
  constexpr unsigned rounds = 3000;
  std::atomic<bool> done{false};
  std::atomic<bool> go{false};
  std::atomic<unsigned> running{0};
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < nthreads; ++t) {
    threads.emplace_back([&] {
      (void)pool.local();
      running.fetch_add(1);
      while (!go.load()) std::this_thread::yield();  // the reader runs from the start
      for (unsigned r = 0; r < rounds; ++r) {
        auto& alloc = pool.local();  // publishes the counters as of the end of the last round
        auto s = alloc.scope();
        for (std::size_t i = 0; i < per_round; ++i) (void)alloc.allocate<double*>(8 + i);
      }
    });
  }
  std::size_t reads = 0, inconsistent = 0, decreasing = 0;
  std::size_t last_total = 0, last_size = 0;
  while (running.load() < nthreads) std::this_thread::yield();
  std::thread reader([&] {
    for (bool last = false; !last;) {
      last = done.load();
      const std::size_t size = pool.size();
      const kbuf::Statistics s = pool.statistics();
      const std::size_t total = s.temporaries + s.fallbacks;
      ++reads;
      // Every published snapshot lies between two rounds: per_round temporaries per reset.
      if (total != per_round * s.resets) ++inconsistent;
      if (s.peak_live > per_round) ++inconsistent;
      if (total < last_total || size < last_size) ++decreasing;
      last_total = total;
      last_size = size;
      go.store(true);
    }
  });
  for (auto& th : threads) th.join();
  done.store(true);
  reader.join();
  INFO(reads << " concurrent reads");
  CHECK(reads > 0);
  CHECK(inconsistent == 0);
  CHECK(decreasing == 0);
  const kbuf::Statistics s = pool.statistics();
  CHECK(s.temporaries + s.fallbacks == nthreads * rounds * per_round);
  CHECK(s.resets == nthreads * rounds);
  CHECK(s.peak_live == per_round);
  CHECK(pool.size() == nthreads);
}

TEST_CASE("statistics() sums counters and takes the largest peaks") {
  Pool pool(64 * 1024);
  auto& a = pool.local();
  std::size_t b_peak_used = 0;
  std::thread([&] {
    auto& b = pool.local();
    {
      auto s = b.scope();
      for (int i = 0; i < 7; ++i) (void)b.allocate<double*>(10);
    }
    b_peak_used = b.statistics().peak_used;
  }).join();
  {
    auto s = a.scope();
    for (int i = 0; i < 3; ++i) (void)a.allocate<double*>(1000);
  }
  (void)pool.local();  // publishes this thread's counters
  const kbuf::Statistics s = pool.statistics();
  CHECK(s.temporaries + s.fallbacks == 10);
  CHECK(s.peak_live == 7);
  CHECK(b_peak_used > 0);
  CHECK(s.peak_used == std::max(a.statistics().peak_used, b_peak_used));
  CHECK(s.resets == 2);
}

TEST_CASE("a thread may use several pools, and outlive a pool it used") {
  auto p1 = std::make_unique<Pool>();
  auto p2 = std::make_unique<Pool>();
  std::atomic<int> stage{0};
  const void* a1 = nullptr;
  const void* a2 = nullptr;
  std::thread worker([&] {
    a1 = &p1->local();
    a2 = &p2->local();
    {
      auto s = p1->local().scope();
      (void)p1->local().allocate<double*>(4);
      (void)p2->local().allocate<double*>(4);
      p2->local().reset();
    }
    stage.store(1);
    while (stage.load() != 2) std::this_thread::yield();
    // p1 is gone; p2 and a third pool still work from this thread.
    (void)p2->local().allocate<double*>(4);
    p2->local().reset();
    Pool p3;
    (void)p3.local().allocate<int*>(3);
    p3.local().reset();
  });
  while (stage.load() != 1) std::this_thread::yield();
  CHECK(a1 != a2);
  p1.reset();  // the worker used it but no longer does; it exits later
  stage.store(2);
  worker.join();
  CHECK(p2->size() == 1);
  CHECK(p2->idle() == 1);
  // A new pool, perhaps at the old one's address, is a new pool to every thread.
  p1 = std::make_unique<Pool>();
  CHECK(p1->size() == 0);
  std::thread([&] { (void)p1->local(); }).join();
  CHECK(p1->size() == 1);
}

TEST_CASE("a pool with a bad alignment throws and names the value") {
  CHECK_THROWS_WITH_AS(Pool(0, 48), doctest::Contains("alignment = 48"), kbuf::logic_error);
}

TEST_CASE("without debug checks, an allocator left with live temporaries is never handed out") {
  if (kbuf::debug_checks_enabled) return;  // debug builds abort instead (reliability.pool-debug)
  Pool pool;
  const void* leaked = nullptr;
  std::thread([&] {
    leaked = &pool.local();
    (void)pool.local().allocate<double*>(10);  // misuse: never released
  }).join();
  const void* next = nullptr;
  std::thread([&] { next = &pool.local(); }).join();
  CHECK(next != leaked);
  CHECK(pool.size() == 2);
  CHECK(pool.idle() == 1);
}
