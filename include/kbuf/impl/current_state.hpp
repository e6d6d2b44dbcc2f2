#ifndef KBUF_IMPL_CURRENT_STATE_HPP
#define KBUF_IMPL_CURRENT_STATE_HPP

/// @file
/// The state behind kbuf/current.hpp: the chains of each thread's `kbuf::use` guards and scopes,
/// and the process allocator's pool, made on first use and ended by a Kokkos finalize hook. The
/// state itself is one per process (kbuf/impl/process_registry.hpp). Not part of the API.

#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include <Kokkos_Core.hpp>

#include <kbuf/allocator_pool.hpp>
#include <kbuf/impl/errors.hpp>
#include <kbuf/impl/macros.hpp>
#include <kbuf/impl/process_registry.hpp>

namespace kbuf {

template <class MemorySpace>
class use;
template <class MemorySpace>
class CurrentScope;

namespace Impl {

struct CurrentAccess;

/// KBUF_ENABLE_DEBUG: a temporary a kbuf::scope served, as a counted View, so that the scope's
/// end can tell whether anything else still holds it.
struct HeldTemporary {
  explicit HeldTemporary(const char* name) : label(name) {}
  HeldTemporary(const HeldTemporary&) = delete;
  HeldTemporary& operator=(const HeldTemporary&) = delete;
  virtual ~HeldTemporary() = default;
  /// References to it, this one included.
  virtual int use_count() const noexcept = 0;
  /// Its size.
  virtual std::size_t bytes() const noexcept = 0;
  std::string label;
};

template <class V>
struct HeldView final : HeldTemporary {
  HeldView(const char* name, const V& v) : HeldTemporary(name), view(v) {}
  int use_count() const noexcept override { return static_cast<int>(view.use_count()); }
  std::size_t bytes() const noexcept override {
    return view.size() * sizeof(typename V::value_type);
  }
  V view;
};

/// The chains of guards and scopes: a node leaves its chain wherever it is in it (RAII objects
/// leave from the newest end; one kept in an optional or on the heap may leave from the
/// middle). The thread's slots hold the newest node of each chain as `void*`
/// (kbuf/impl/process_registry.hpp).
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
  template <class Node>
  static void unlink(void*& innermost, Node* node) noexcept {
    Node* head = static_cast<Node*>(innermost);
    unlink(head, node);
    innermost = head;
  }
};

/// The finalize hook: no thread may use the pool's allocators any more (see
/// `kbuf::process_allocator`).
template <class MemorySpace>
void end_process_pool() noexcept {
  ProcessSpaceState& state = process_state<MemorySpace>();
  AllocatorPool<MemorySpace>* pool = nullptr;
  {
    std::lock_guard<std::mutex> lock(process_states().mutex);
    pool = static_cast<AllocatorPool<MemorySpace>*>(
        state.pool.exchange(nullptr, std::memory_order_acq_rel));
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
  ProcessSpaceState& state = process_state<MemorySpace>();
  std::lock_guard<std::mutex> lock(process_states().mutex);
  if (void* pool = state.pool.load(std::memory_order_acquire)) {
    return *static_cast<AllocatorPool<MemorySpace>*>(pool);
  }
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
