// kbuf-advisor's core fed by several host threads at once: every allocation gets its verdict
// from its own thread's events, whatever the others do or however long they make it wait. Built
// with ThreadSanitizer by the reliability stage (label "threads").
#include <doctest/doctest.h>

#include <kbuf_advisor/advisor.hpp>

#include "advisor_test_support.hpp"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace {

using namespace kbuf_advisor_test;  // Advisor, Results, address(), reason() ...

std::uint64_t not_served(const Results& r) {
  std::uint64_t n = 0;
  for (std::uint64_t v : r.not_served) n += v;
  return n;
}

// One thread's program: nested temporaries of growing size, a kernel now and then.
void thread_program(Advisor& a, std::uintptr_t base, int pairs) {
  for (int i = 0; i < pairs; ++i) {
    const void* outer = address(base + 2 * static_cast<std::uintptr_t>(i % 4));
    const void* inner = address(base + 2 * static_cast<std::uintptr_t>(i % 4) + 1);
    const std::uint64_t n = 64 + 8 * static_cast<std::uint64_t>(i % 50);
    a.allocate("Host", "outer", outer, n);
    a.allocate("Host", "inner", inner, 2 * n);
    if (i % 16 == 0) a.end_kernel(a.begin_kernel("k"));
    a.deallocate("Host", "inner", inner, 2 * n);
    a.deallocate("Host", "outer", outer, n);
  }
}

// Waits until `count` reaches `n`.
struct Latch {
  std::mutex m;
  std::condition_variable cv;
  int count = 0;
  void arrive() {
    std::lock_guard<std::mutex> lock(m);
    ++count;
    cv.notify_all();
  }
  void wait_for(int n) {
    std::unique_lock<std::mutex> lock(m);
    cv.wait(lock, [&] { return count >= n; });
  }
};

}  // namespace

TEST_CASE("host threads at once: every allocation served, each thread's replay as if alone") {
  constexpr int threads = 6, pairs = 5000;
  // One thread alone: what each thread's allocator must come to.
  Advisor alone(Settings{});
  std::thread([&] { thread_program(alone, 0, pairs); }).join();
  const Results one = alone.finish();
  REQUIRE(one.replays.size() == 1);

  // A small window: under the old single queue, a thread descheduled between an allocation and
  // its free for 64 events of the others left that allocation without a verdict.
  Settings s;
  s.window = 64;
  Advisor a(s);
  Latch started, done;
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      started.arrive();
      started.wait_for(threads);  // all live at once: six slots, six allocators
      thread_program(a, 1000000 * static_cast<std::uintptr_t>(t + 1), pairs);
      done.arrive();
      done.wait_for(threads);
    });
  }
  for (auto& th : pool) th.join();
  const Results r = a.finish();
  CHECK(r.allocations == 2 * threads * pairs);
  CHECK(r.deallocations == 2 * threads * pairs);
  CHECK(r.threads == threads);
  CHECK(r.served() == 2 * threads * pairs);
  CHECK(not_served(r) == 0);
  REQUIRE(r.replays.size() == threads);
  for (const auto& x : r.replays) {
    CAPTURE(x.thread);
    CHECK(x.temporaries == one.replays[0].temporaries);
    CHECK(x.from_buffer == one.replays[0].from_buffer);
    CHECK(x.fallbacks == one.replays[0].fallbacks);
    CHECK(x.regrows == one.replays[0].regrows);
    CHECK(x.capacity == one.replays[0].capacity);
  }
}

TEST_CASE("a thread stalled between an allocation and its free still gets its verdict") {
  Settings s;
  s.window = 8;
  Advisor a(s);
  Latch allocated, others_done;
  std::thread stalled([&] {
    a.allocate("Host", "stalled", address(1), 4096);
    allocated.arrive();
    others_done.wait_for(1);  // the others make far more than `window` events meanwhile
    a.end_kernel(a.begin_kernel("k"));
    a.deallocate("Host", "stalled", address(1), 4096);
    allocated.arrive();  // keeps its slot until the other thread is done too
    others_done.wait_for(2);
  });
  std::thread busy([&] {
    allocated.wait_for(1);
    for (std::uintptr_t i = 0; i < 1000; ++i) {
      a.allocate("Host", "busy", address(100 + i % 3), 64);
      a.deallocate("Host", "busy", address(100 + i % 3), 64);
    }
    others_done.arrive();
    allocated.wait_for(2);
    others_done.arrive();
  });
  stalled.join();
  busy.join();
  const Results r = a.finish();
  CHECK(r.allocations == 1001);
  CHECK(reason(r, Reason::window) == 0);
  CHECK(r.served() == 1001);
  REQUIRE(r.replays.size() == 2);
  CHECK(r.peak_pending <= 2);  // each thread's queue: an allocation and its free
}

TEST_CASE("an allocation freed by another thread is its allocating thread's temporary") {
  Advisor a(Settings{});
  Latch step;
  std::thread maker([&] {
    a.allocate("Host", "handed over", address(7), 1000);
    step.arrive();
    step.wait_for(2);  // freed by the other thread
    allocate_and_free(a, "Host", "own", 8, 100);
    step.arrive();
    step.wait_for(4);
  });
  std::thread freer([&] {
    step.wait_for(1);
    a.deallocate("Host", "handed over", address(7), 1000);
    step.arrive();
    step.wait_for(3);
    step.arrive();
  });
  maker.join();
  freer.join();
  const Results r = a.finish();
  CHECK(r.served() == 2);
  REQUIRE(r.replays.size() == 1);  // the maker's; the freer allocated nothing
  CHECK(r.replays[0].temporaries == 2);
  CHECK(r.replays[0].from_buffer == 1);  // the first was a fallback: the buffer grows after it
  CHECK(r.replays[0].capacity >= 1000);
}

TEST_CASE("threads one after the other reuse one slot and one allocator, as a pool does") {
  constexpr int rounds = 40, pairs = 10;
  Advisor alone(Settings{});  // the same rounds on one thread
  std::thread([&] {
    for (int t = 0; t < rounds; ++t) thread_program(alone, 0, pairs);
  }).join();
  const Results one = alone.finish();
  REQUIRE(one.replays.size() == 1);

  Advisor a(Settings{});
  for (int t = 0; t < rounds; ++t) {
    std::thread([&a, t] {
      thread_program(a, 1000000 * static_cast<std::uintptr_t>(t + 1), pairs);
    }).join();
  }
  const Results r = a.finish();
  CHECK(r.threads == rounds);
  CHECK(r.thread_slots == 1);
  REQUIRE(r.replays.size() == 1);
  CHECK(r.replays[0].temporaries == 2 * rounds * pairs);
  CHECK(r.replays[0].from_buffer == one.replays[0].from_buffer);
  CHECK(r.replays[0].regrows == one.replays[0].regrows);
  CHECK(r.replays[0].capacity == one.replays[0].capacity);
  CHECK(r.served() == 2 * rounds * pairs);
}
