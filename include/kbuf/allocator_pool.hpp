#ifndef KBUF_ALLOCATOR_POOL_HPP
#define KBUF_ALLOCATOR_POOL_HPP

/// @file
/// `kbuf::AllocatorPool`: a thread-safe pool of `kbuf::BufferAllocator`s, one per host thread.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <Kokkos_Core.hpp>

#include <kbuf/buffer_allocator.hpp>
#include <kbuf/config.hpp>
#include <kbuf/debug.hpp>
#include <kbuf/errors.hpp>
#include <kbuf/impl/budget.hpp>
#include <kbuf/impl/pool_thread_cache.hpp>
#include <kbuf/impl/published_statistics.hpp>

namespace kbuf {

template <class MemorySpace>
class AllocatorPool;

/// A thread-safe pool of `BufferAllocator`s: each host thread takes its own with `local()`.
///
/// A `BufferAllocator` is not thread-safe; the pool is the bookkeeping around "one allocator
/// per thread". The first `local()` call of a thread hands it an allocator (a kept one whose
/// thread exited, else a new one); every later call from that thread finds it in a
/// thread-local cache without a lock, a heap allocation or an atomic read-modify-write. The
/// allocator then belongs to that thread until it exits: only that thread may use it, and its
/// temporaries, checkpoints and scopes follow the allocator's usual rules. When the thread
/// exits, its allocator (empty by then, its buffer kept) goes back to the pool and serves the
/// next thread that asks, so programs that start and end many short-lived threads do not
/// grow the pool beyond the threads that ever ran at once.
///
/// Misuse: a thread that exits with live temporaries (debug builds abort with a message
/// naming the pool; otherwise that allocator is retired, never handed out again); destroying
/// the pool while a thread still uses one of its allocators (debug builds abort if one is not
/// empty; nothing can catch a thread that uses it afterwards). A thread that merely used the
/// pool earlier may outlive it: its exit does nothing then.
///
/// `size()` and `statistics()` may be called from any thread at any time. Each allocator's
/// counters are published by its owner thread at every `local()` call that finds it empty
/// (between scopes) and when the thread exits (no thread reads another's allocator), so
/// `statistics()` sees each allocator as it was at its owner's latest such call, and exactly
/// once its thread has exited.
///
/// Not copyable, not movable: threads cache pointers into it. Like its allocators, it must be
/// destroyed before `Kokkos::finalize`.
template <class MemorySpace = default_memory_space>
class AllocatorPool final {
 public:
  /// The allocators it hands out.
  using allocator_type = BufferAllocator<MemorySpace>;
  /// Where their temporaries live.
  using memory_space = MemorySpace;
  /// The execution space whose default instance its allocators are bound to.
  using execution_space = typename allocator_type::execution_space;

  /// A pool whose allocators start with a buffer of `buffer_size(sizehint)` bytes and align
  /// temporaries to `alignment` (a power of two). No allocator is made before a thread asks.
  /// @throws kbuf::logic_error if `alignment` is not a power of two.
  explicit AllocatorPool(std::size_t sizehint = 0,
                         std::size_t alignment = allocator_type::default_alignment)
      : AllocatorPool(sizehint, alignment, "kbuf::AllocatorPool") {}

  /// As above; `label` names the pool in messages and, followed by `[i]`, the Kokkos
  /// allocations of its i-th allocator.
  AllocatorPool(std::size_t sizehint, std::size_t alignment, std::string label)
      : AllocatorPool(execution_space(), sizehint, alignment, std::move(label)) {}

  /// A pool whose allocators are all bound to the execution space instance `exec` (see
  /// `BufferAllocator(exec, ...)`): for host threads that submit their work to `exec`, or one
  /// pool per instance when each thread drives its own (from `partition_space`, or streams).
  /// @throws kbuf::logic_error if `alignment` is not a power of two.
  explicit AllocatorPool(const execution_space& exec, std::size_t sizehint = 0,
                         std::size_t alignment = allocator_type::default_alignment,
                         std::string label = "kbuf::AllocatorPool")
      : exec_(exec),
        sizehint_(sizehint),
        alignment_(alignment),
        label_(std::move(label)),
        id_(Impl::next_pool_id()),
        shared_(std::make_shared<Impl::PoolShared>()) {
    KBUF_EXPECTS(is_power_of_two(alignment), "kbuf::AllocatorPool '", label_,
                 "': alignment = ", alignment, " is not a power of two");
  }

  AllocatorPool(const AllocatorPool&) = delete;
  AllocatorPool(AllocatorPool&&) = delete;
  AllocatorPool& operator=(const AllocatorPool&) = delete;
  AllocatorPool& operator=(AllocatorPool&&) = delete;

  /// Destroys every allocator. No thread may use one any more (see the class notes); threads
  /// that used the pool earlier may still be running or exit later. With `KBUF_ENABLE_DEBUG`,
  /// aborts if an allocator still holds temporaries.
  ~AllocatorPool() {
    std::vector<std::unique_ptr<Slot>> slots;
    {
      std::lock_guard<std::mutex> lock(shared_->mutex);
      shared_->alive = false;
      shared_->free_list.clear();
      slots.swap(slots_);
    }
#if KBUF_ENABLE_DEBUG
    for (const auto& slot : slots) {
      if (!slot->alloc.empty()) {
        Impl::debug_abort(Impl::concat("kbuf::AllocatorPool '", label_, "' (",
                                       static_cast<const void*>(this),
                                       ") destroyed while its allocator '", slot->alloc.label(),
                                       "' holds ", slot->alloc.checkpoint().depth(),
                                       " live temporaries; end every thread's use of "
                                       "the pool before destroying it"));
      }
    }
#endif
    // Threads that used the pool keep an entry for it in their caches; it finds the pool dead
    // when they exit (or take an allocator of another pool) and is dropped then.
  }

  /// The calling host thread's own allocator, made (or taken from the allocators of exited
  /// threads) on the thread's first call. Later calls take no lock, allocate nothing and do
  /// no atomic read-modify-write; a call that finds the allocator empty (between scopes)
  /// publishes its counters for `statistics()`. Cheap enough to call for every temporary: the
  /// thread's latest pool is found with one compare.
  /// The reference stays valid while the thread runs and the pool lives.
  /// @throws kbuf::out_of_memory if the first call cannot make the allocator.
  KBUF_IMPL_ALWAYS_INLINE allocator_type& local() {
    const Impl::PoolHotEntry& hot = hot_entry();
    if (KBUF_IMPL_UNLIKELY(hot.pool_id != id_)) return local_lookup();
    Slot& slot = *static_cast<Slot*>(hot.slot);
    if (slot.alloc.empty()) slot.published.publish(slot.alloc.current_statistics());
    return slot.alloc;
  }

  /// Allocators made so far (in use by a thread or kept for the next one).
  [[nodiscard]] std::size_t size() const noexcept {
    return made_.load(std::memory_order_acquire);
  }

  /// Allocators kept for the next thread that asks (their threads exited).
  [[nodiscard]] std::size_t idle() const {
    std::lock_guard<std::mutex> lock(shared_->mutex);
    return shared_->free_list.size();
  }

  /// The counters of every allocator, summed; `peak_used` and `peak_live` are the largest of
  /// any one allocator. Each allocator's part is a consistent snapshot as of its owner's
  /// latest `local()` call that found it empty (exact for allocators whose thread exited).
  [[nodiscard]] Statistics statistics() const {
    std::size_t sum[Impl::statistics_words] = {};
    std::lock_guard<std::mutex> lock(shared_->mutex);
    for (const auto& slot : slots_) {
      const Statistics s = slot->published.read();
      std::size_t words[Impl::statistics_words];
      std::memcpy(words, &s, sizeof words);
      for (std::size_t i = 0; i < Impl::statistics_words; ++i) {
        if (Impl::statistics_word_is_peak(i)) {
          if (words[i] > sum[i]) sum[i] = words[i];
        } else {
          sum[i] += words[i];
        }
      }
    }
    Statistics total;
    std::memcpy(&total, sum, sizeof sum);
    return total;
  }

  /// Sets the combined limit: the pool's allocators never hold more than `nbytes` together
  /// (buffers and live fallbacks, counted as `BufferAllocator::held()` counts them). The
  /// allocators take their bytes from one shared budget in their cold paths only (buffer
  /// growth, fallbacks, `resize`, a new allocator's first buffer), with one atomic
  /// read-modify-write each, and give them back when they free memory; the hot path is
  /// untouched. What would pass it is refused as `BufferAllocator::limit` refuses: a fallback
  /// or a `resize` raises `kbuf::out_of_memory` naming the combined limit, a regrowth stops
  /// where the remaining room ends, and a thread's first `local()` raises
  /// `kbuf::out_of_memory` if the new allocator's first buffer does not fit. Each allocator
  /// may have its own `limit()` as well. May be called from any thread. Default: no limit
  /// (`SIZE_MAX`).
  /// @throws kbuf::logic_error if the allocators hold more than `nbytes` now; nothing changes.
  void limit(std::size_t nbytes) {
    budget_.set_limit(nbytes, "kbuf::AllocatorPool::limit", "pool '" + label_ + "'");
  }
  /// The combined limit (`SIZE_MAX`: none).
  [[nodiscard]] std::size_t limit() const noexcept {
    return budget_.limit();
  }
  /// Bytes the pool's allocators hold together now (buffers and live fallbacks).
  [[nodiscard]] std::size_t held() const {
    return budget_.held();
  }

  /// The pool's label.
  [[nodiscard]] const std::string& label() const noexcept {
    return label_;
  }
  /// The alignment of its allocators.
  [[nodiscard]] std::size_t alignment() const noexcept {
    return alignment_;
  }
  /// The execution space instance its allocators are bound to.
  [[nodiscard]] const execution_space& execution_space_instance() const noexcept {
    return exec_;
  }

 private:
  friend struct Impl::PoolTestAccess;

  struct Slot {
    Slot(const execution_space& exec, const std::string& label, std::size_t sizehint,
         std::size_t alignment, AllocatorPool* pool)
        : alloc(pool->budget_, exec, sizehint, alignment, label), pool(pool) {}
    allocator_type alloc;
    Impl::PublishedStatistics published;
    const AllocatorPool* pool;  // for messages
  };

  // The calling thread's latest pool of this type and its slot there (a cache of its entry in
  // Impl::pool_thread_cache(): pool ids are never reused, so a stale entry matches no pool).
  static Impl::PoolHotEntry& hot_entry() noexcept {
    thread_local Impl::PoolHotEntry hot;
    return hot;
  }

  // local() when the thread's latest pool is another one: its cache entry, else its first call.
  KBUF_IMPL_COLD allocator_type& local_lookup() {
    for (const Impl::PoolCacheEntry& e : Impl::pool_thread_cache().entries) {
      if (e.pool_id == id_) {
        hot_entry() = Impl::PoolHotEntry{id_, e.slot};
        Slot& slot = *static_cast<Slot*>(e.slot);
        if (slot.alloc.empty()) slot.published.publish(slot.alloc.current_statistics());
        return slot.alloc;
      }
    }
    return local_first();
  }

  // The thread's first call: take a kept allocator or make one, and remember it.
  KBUF_IMPL_COLD allocator_type& local_first() {
    auto& entries = Impl::pool_thread_cache().entries;
    entries.reserve(entries.size() + 1);  // the push_back below cannot fail then
    Slot* slot = nullptr;
    {
      std::lock_guard<std::mutex> lock(shared_->mutex);
      if (!shared_->free_list.empty()) {
        slot = static_cast<Slot*>(shared_->free_list.back());
        shared_->free_list.pop_back();
      }
    }
    if (slot == nullptr) {
      std::size_t number = 0;
      {
        std::lock_guard<std::mutex> lock(shared_->mutex);
        number = made_number_++;  // names it; a failure below leaves a gap in the numbers
      }
      // Made outside the lock: a buffer allocation may take long (and fence).
      auto made = std::make_unique<Slot>(exec_, label_ + "[" + std::to_string(number) + "]",
                                         sizehint_, alignment_, this);
      slot = made.get();
      std::lock_guard<std::mutex> lock(shared_->mutex);
      slots_.reserve(slots_.size() + 1);
      // Room for every allocator in the free list: giving one back (at thread exit) cannot fail.
      shared_->free_list.reserve(slots_.size() + 1);
      slots_.push_back(std::move(made));
      made_.store(slots_.size(), std::memory_order_release);
    }
    slot->published.publish(slot->alloc.statistics());
    // Forget cached entries of pools that died (a thread may use many pools over its life).
    for (std::size_t i = entries.size(); i-- > 0;) {
      bool alive = false;
      {
        std::lock_guard<std::mutex> lock(entries[i].shared->mutex);
        alive = entries[i].shared->alive;
      }
      // Outside the lock: the entry may hold the last reference to the mutex.
      if (!alive) entries.erase(entries.begin() + static_cast<std::ptrdiff_t>(i));
    }
    entries.push_back(Impl::PoolCacheEntry{id_, slot, shared_, &AllocatorPool::give_back});
    hot_entry() = Impl::PoolHotEntry{id_, slot};
    return slot->alloc;
  }

  // A thread exits (its cache is destroyed); the pool is alive and its mutex is held.
  static void give_back(void* p, Impl::PoolShared& shared) noexcept {
    Slot& slot = *static_cast<Slot*>(p);
    slot.published.publish(slot.alloc.current_statistics());
    if (!slot.alloc.empty()) {
#if KBUF_ENABLE_DEBUG
      Impl::debug_abort(Impl::concat(
          "kbuf::AllocatorPool '", slot.pool->label_, "' (", static_cast<const void*>(slot.pool),
          "): a thread exited while its allocator '", slot.alloc.label(), "' holds ",
          slot.alloc.checkpoint().depth(), " live temporaries (", slot.alloc.used(),
          " bytes); end every scope and reset before the thread ends"));
#else
      return;  // retired: never handed out again (destroyed with the pool)
#endif
    }
    shared.free_list.push_back(p);  // cannot throw: reserved when the allocator was made
  }

  execution_space exec_;
  std::size_t sizehint_;
  std::size_t alignment_;
  std::string label_;
  std::uint64_t id_;
  std::shared_ptr<Impl::PoolShared> shared_;
  Impl::SharedBudget budget_;                 // the combined limit; outlives every allocator
  std::vector<std::unique_ptr<Slot>> slots_;  // under shared_->mutex
  std::size_t made_number_ = 0;               // under shared_->mutex
  std::atomic<std::size_t> made_{0};
};

}  // namespace kbuf

#endif  // KBUF_ALLOCATOR_POOL_HPP
