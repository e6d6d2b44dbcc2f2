// AllocatorPool::local() never gives one allocator to two live threads: threads that hold their
// allocator (a live temporary in it) while other threads ask, meet at barriers so that every one
// of them is live at the checks. Threads that exited may hand theirs on; live ones never.
#include <doctest/doctest.h>

#include "test_support.hpp"

#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace {

using Pool = kbuf::AllocatorPool<Kokkos::HostSpace>;
using HostAlloc = Pool::allocator_type;

// A reusable barrier for `count` threads (std::barrier is C++20).
class Barrier {
 public:
  explicit Barrier(std::size_t count) : count_(count) {}
  void arrive_and_wait() {
    std::unique_lock<std::mutex> lock(m_);
    const std::size_t gen = generation_;
    if (++waiting_ == count_) {
      waiting_ = 0;
      ++generation_;
      cv_.notify_all();
      return;
    }
    cv_.wait(lock, [&] { return generation_ != gen; });
  }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  std::size_t count_, waiting_ = 0, generation_ = 0;
};

// What one thread saw: its allocator at its first and its last local() call, and whether the
// temporary it kept live in it still held its own values at the end.
struct Seen {
  const HostAlloc* first = nullptr;
  const HostAlloc* last = nullptr;
  bool intact = false;
};

// Takes the thread's allocator, keeps a temporary of `tag`s live in it across `hold` (which
// waits at barriers), then checks the temporary and asks again.
template <class Hold>
void hold_allocator(Pool& pool, int tag, Seen& seen, Hold&& hold) {
  HostAlloc& a = pool.local();
  seen.first = &a;
  auto scope = a.scope();
  auto v = a.allocate<int*>(256);
  for (int i = 0; i < 256; ++i) v(i) = tag;
  hold();
  bool ok = true;
  for (int i = 0; i < 256; ++i) ok = ok && v(i) == tag;
  seen.intact = ok;
  seen.last = &pool.local();
}

}  // namespace

TEST_CASE(
    "threads that hold their allocator never get the same one, nor one another thread holds") {
  Pool pool;
  constexpr int holders = 3;
  constexpr int askers = 3;  // per wave, all live at once
  constexpr int waves = 4;
  Barrier held(holders + 1);      // the holders have their allocators (and the main thread)
  Barrier released(holders + 1);  // the main thread lets them go
  std::vector<Seen> holder_seen(holders);
  std::vector<std::thread> holder_threads;
  for (int h = 0; h < holders; ++h) {
    holder_threads.emplace_back([&, h] {
      hold_allocator(pool, 1000 + h, holder_seen[h], [&] {
        held.arrive_and_wait();
        released.arrive_and_wait();
      });
    });
  }
  held.arrive_and_wait();
  std::set<const HostAlloc*> held_by_holders;
  for (const Seen& s : holder_seen) held_by_holders.insert(s.first);
  CHECK(held_by_holders.size() == static_cast<std::size_t>(holders));

  // While the holders hold, waves of askers come and go; the allocators of an earlier wave's
  // exited threads may serve a later wave, the holders' never.
  for (int w = 0; w < waves; ++w) {
    Barrier together(askers);
    std::vector<Seen> asker_seen(askers);
    std::vector<std::thread> asker_threads;
    for (int k = 0; k < askers; ++k) {
      asker_threads.emplace_back([&, k] {
        hold_allocator(pool, 100 * w + k, asker_seen[k], [&] {
          together.arrive_and_wait();  // every asker of the wave holds its allocator here
          together.arrive_and_wait();  // and every one has written its temporary
        });
      });
    }
    for (auto& t : asker_threads) t.join();
    std::set<const HostAlloc*> wave;
    for (const Seen& s : asker_seen) {
      CHECK(s.first != nullptr);
      CHECK(s.last == s.first);
      CHECK(s.intact);
      CHECK(held_by_holders.count(s.first) == 0);
      wave.insert(s.first);
    }
    CHECK(wave.size() == static_cast<std::size_t>(askers));
  }

  released.arrive_and_wait();
  for (auto& t : holder_threads) t.join();
  for (const Seen& s : holder_seen) {
    CHECK(s.last == s.first);
    CHECK(s.intact);
  }
  CHECK(pool.size() <= static_cast<std::size_t>(holders + askers));
}
