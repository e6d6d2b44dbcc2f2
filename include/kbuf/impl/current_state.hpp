#ifndef KBUF_IMPL_CURRENT_STATE_HPP
#define KBUF_IMPL_CURRENT_STATE_HPP

/// @file
/// The state behind kbuf/current.hpp: each thread's chain of `kbuf::use` guards per memory
/// space, and the process allocator's pool, made on first use and ended by a Kokkos finalize
/// hook. Not part of the API.

#include <atomic>
#include <memory>
#include <mutex>

#include <Kokkos_Core.hpp>

#include <kbuf/allocator_pool.hpp>
#include <kbuf/impl/errors.hpp>
#include <kbuf/impl/macros.hpp>

namespace kbuf {

template <class MemorySpace>
class use;
template <class MemorySpace>
class CurrentScope;

namespace Impl {

/// One thread's `kbuf::use` guards and `kbuf::scope`s for `MemorySpace`: the newest live one of
/// each, which links to the one made before it (its `outer_`). Trivial, so its `thread_local`
/// needs no guard and no destructor.
template <class MemorySpace>
struct CurrentState {
  use<MemorySpace>* innermost = nullptr;
  CurrentScope<MemorySpace>* innermost_scope = nullptr;
};

/// The chains of guards and scopes: a node leaves its chain wherever it is in it (RAII objects
/// leave from the newest end; one kept in an optional or on the heap may leave from the
/// middle).
struct Chain {
  template <class Node>
  static void unlink(Node*& innermost, Node* node) noexcept {
    if (innermost == node) {
      innermost = node->outer_;
      return;
    }
    for (Node* n = innermost; n != nullptr; n = n->outer_) {
      if (n->outer_ == node) {
        n->outer_ = node->outer_;
        return;
      }
    }
  }
};

/// The calling thread's guards for `MemorySpace`.
template <class MemorySpace>
CurrentState<MemorySpace>& current_state() noexcept {
  thread_local CurrentState<MemorySpace> state;
  return state;
}

/// The process allocator of `MemorySpace`: a pool made by the first call between
/// `Kokkos::initialize` and `Kokkos::finalize`, deleted by the finalize hook that call pushed.
template <class MemorySpace>
struct ProcessState {
  std::mutex mutex;  // makes and ends the pool
  std::atomic<AllocatorPool<MemorySpace>*> pool{nullptr};
  bool ended = false;  // a Kokkos::finalize ended one (under mutex): for the message
};

template <class MemorySpace>
ProcessState<MemorySpace>& process_state() noexcept {
  static ProcessState<MemorySpace> state;
  return state;
}

/// The finalize hook: no thread may use the pool's allocators any more (see
/// `kbuf::process_allocator`).
template <class MemorySpace>
void end_process_pool() noexcept {
  ProcessState<MemorySpace>& state = process_state<MemorySpace>();
  AllocatorPool<MemorySpace>* pool = nullptr;
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    pool = state.pool.exchange(nullptr, std::memory_order_acq_rel);
    state.ended = true;
  }
  delete pool;
}

/// The first call of `kbuf::process_allocator`: makes the pool and pushes its finalize hook.
/// @throws kbuf::logic_error if Kokkos is not initialized, or once `Kokkos::finalize` has ended
/// the pool (also from a finalize hook: Kokkos is still initialized while they run, and a hook
/// pushed then would never run).
template <class MemorySpace>
KBUF_IMPL_COLD AllocatorPool<MemorySpace>& make_process_pool() {
  ProcessState<MemorySpace>& state = process_state<MemorySpace>();
  std::lock_guard<std::mutex> lock(state.mutex);
  if (AllocatorPool<MemorySpace>* pool = state.pool.load(std::memory_order_acquire)) return *pool;
  KBUF_EXPECTS(
      Kokkos::is_initialized() && !state.ended, "kbuf::process_allocator<",
      space_name<MemorySpace>(), ">(): ",
      state.ended ? "Kokkos::finalize ended the process allocator" : "Kokkos is not initialized",
      "; the process allocator exists between Kokkos::initialize and Kokkos::finalize");
  using allocator_type = typename AllocatorPool<MemorySpace>::allocator_type;
  auto pool = std::make_unique<AllocatorPool<MemorySpace>>(0, allocator_type::default_alignment,
                                                           "kbuf::process_allocator");
  Kokkos::push_finalize_hook(&end_process_pool<MemorySpace>);
  state.pool.store(pool.get(), std::memory_order_release);
  return *pool.release();
}

}  // namespace Impl
}  // namespace kbuf

#endif  // KBUF_IMPL_CURRENT_STATE_HPP
