#ifndef KBUF_IMPL_POOL_THREAD_CACHE_HPP
#define KBUF_IMPL_POOL_THREAD_CACHE_HPP

// How AllocatorPool::local() finds the calling thread's allocator without a lock: a thread-local
// list of (never-reused pool id, slot), the state a pool shares with the threads that took
// allocators from it, and the thread-exit hook that hands them back.

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include <kbuf/impl/macros.hpp>

namespace kbuf {
namespace Impl {

/// What a pool shares with the threads that took allocators from it. A thread's exit hook
/// holds it by `shared_ptr`, so a thread that exits after the pool died finds `alive == false`
/// instead of freed memory.
struct PoolShared {
  std::mutex mutex;
  bool alive = true;             // under mutex
  std::vector<void*> free_list;  // slots whose thread exited; under mutex
};

/// One entry of a thread's cache: the pool (by a never-reused id), its slot, its shared state.
struct PoolCacheEntry {
  std::uint64_t pool_id;
  void* slot;
  std::shared_ptr<PoolShared> shared;
  void (*on_thread_exit)(void* slot, PoolShared& shared) noexcept;
};

/// A thread's latest pool of one memory space and its slot there: what `local()` checks first.
/// Trivial, so its `thread_local` costs no guard.
struct PoolHotEntry {
  std::uint64_t pool_id = 0;  // 0: none (pool ids start at 1)
  void* slot = nullptr;
};

/// The calling thread's allocators, one per pool it used. Its destructor (at thread exit)
/// hands each back to its pool, if that pool is still alive.
struct PoolThreadCache {
  std::vector<PoolCacheEntry> entries;
  PoolThreadCache() = default;
  PoolThreadCache(const PoolThreadCache&) = delete;
  PoolThreadCache& operator=(const PoolThreadCache&) = delete;
  ~PoolThreadCache() {
    for (PoolCacheEntry& e : entries) {
      std::lock_guard<std::mutex> lock(e.shared->mutex);
      if (e.shared->alive) e.on_thread_exit(e.slot, *e.shared);
    }
  }
};

KBUF_IMPL_EXPORT inline PoolThreadCache& pool_thread_cache() noexcept {
  thread_local PoolThreadCache cache;
  return cache;
}

/// Reaches into a pool's internals; declared for kbuf's tests, which define it.
struct PoolTestAccess;

KBUF_IMPL_EXPORT inline std::uint64_t next_pool_id() noexcept {
  static std::atomic<std::uint64_t> counter{0};
  return counter.fetch_add(1, std::memory_order_relaxed) + 1;
}

}  // namespace Impl
}  // namespace kbuf

#endif  // KBUF_IMPL_POOL_THREAD_CACHE_HPP
