// AllocatorPool::local() after a thread's first call takes no lock, allocates nothing (heap or
// Kokkos) and fences nothing; and what it hands out keeps the allocator's own hot path. As in
// test_hot_path.cpp, this executable replaces the global operator new to count heap
// allocations (counting_new.cpp) and counts Kokkos allocations and fences through Kokkos Tools
// callbacks. The absence of atomic read-modify-writes is checked on the machine code of
// kbuf_test_pool_local_hot() by check_no_rmw.cmake (test unit.pool_hot_path_no_rmw).
#include <doctest/doctest.h>

#include "counting_new.hpp"
#include "test_support.hpp"

#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>

namespace {
using kbuf_test::heap_allocations;
std::atomic<long> kokkos_allocations{0};
std::atomic<long> kokkos_fences{0};
}  // namespace

using Pool = kbuf::AllocatorPool<Kokkos::HostSpace>;

namespace kbuf::Impl {
struct PoolTestAccess {
  static std::mutex& mutex(Pool& pool) { return pool.shared_->mutex; }
};
}  // namespace kbuf::Impl

// The fast path as a function of its own, for the machine-code check. extern "C": a name the
// check can find without demangling.
extern "C" __attribute__((noinline, used)) void* kbuf_test_pool_local_hot(Pool* pool) {
  return &pool->local();
}
// The check's control: an atomic read-modify-write, which it must find here.
extern "C" __attribute__((noinline, used)) long kbuf_test_rmw_control(std::atomic<long>* a) {
  return a->fetch_add(1);
}

namespace {
// Kokkos allocations only: with a tool loaded, kbuf also reports its temporaries, in spaces of
// their own ("kbuf:<label>"), which allocate nothing.
void on_allocate(Kokkos::Tools::SpaceHandle space, const char*, const void*, std::uint64_t) {
  if (std::strncmp(space.name, "kbuf:", 5) == 0) return;
  ++kokkos_allocations;
}
void on_fence(const char*, std::uint32_t, std::uint64_t*) {
  ++kokkos_fences;
}

void round(Pool& pool, int n) {
  auto& alloc = pool.local();
  auto s = alloc.scope();
  auto a = alloc.allocate<double**>(n, n);
  auto b = alloc.allocate<Kokkos::complex<double>***, Kokkos::LayoutLeft>(n, 2, 3);
  for (int i = 0; i < 10; ++i) (void)pool.local().allocate<float*>(n + i);
  (void)a, (void)b;
}
}  // namespace

TEST_CASE("after a thread's first call, local() and its allocator allocate and fence nothing") {
  Kokkos::Tools::Experimental::set_allocate_data_callback(on_allocate);
  Kokkos::Tools::Experimental::set_begin_fence_callback(on_fence);
  {
    Pool pool;
    round(pool, 30);  // first call, fallbacks; the buffer grows at the next round
    round(pool, 30);
    const long heap = heap_allocations.load();
    const long kokkos = kokkos_allocations.load();
    const long fences = kokkos_fences.load();
    for (int i = 0; i < 1000; ++i) {
      CHECK(kbuf_test_pool_local_hot(&pool) == &pool.local());
      round(pool, 30);
    }
    CHECK(heap_allocations.load() == heap);
    CHECK(kokkos_allocations.load() == kokkos);
    CHECK(kokkos_fences.load() == fences);
    CHECK(pool.statistics().temporaries >= 1000 * 12);  // the counters above saw real work
  }
  Kokkos::Tools::Experimental::set_allocate_data_callback(nullptr);
  Kokkos::Tools::Experimental::set_begin_fence_callback(nullptr);
}

TEST_CASE("the first call does allocate, so the counters above can fail") {
  Pool pool;
  const long heap = heap_allocations.load();
  (void)pool.local();
  CHECK(heap_allocations.load() > heap);
}

TEST_CASE("after a thread's first call, local() runs while another thread holds the pool's lock") {
  Pool pool;
  (void)pool.local();  // first call
  std::mutex& mutex = kbuf::Impl::PoolTestAccess::mutex(pool);
  std::atomic<int> stage{0};
  std::thread holder([&] {
    std::lock_guard<std::mutex> lock(mutex);
    stage.store(1);
    while (stage.load() != 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  while (stage.load() != 1) std::this_thread::yield();
  std::atomic<bool> finished{false};
  std::thread caller([&] {
    (void)pool.local();  // this thread's first call: takes the lock, must wait
    finished.store(true);
  });
  // The main thread's later calls: all of them complete while the lock is held.
  for (int i = 0; i < 100000; ++i) (void)kbuf_test_pool_local_hot(&pool);
  CHECK(!finished.load());  // the control: a first call does wait for the lock
  stage.store(2);
  caller.join();
  holder.join();
  CHECK(finished.load());
}
