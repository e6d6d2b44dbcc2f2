#ifndef KBUF_CURRENT_HPP
#define KBUF_CURRENT_HPP

/// @file
/// kbuf in code it does not own. A library that allocates buffers inside calls its caller never
/// sees takes them with `kbuf::temporary` under a `kbuf::scope`; until its caller says otherwise
/// these are the plain Views it made before. A caller makes an allocator (or each thread's
/// allocator of a pool) the current one of its thread with a `kbuf::use` guard, and the
/// library's buffers then come from it, released when the library's scopes end (docs/dropin.md).
/// `kbuf::process_allocator` is an allocator for code that has no `main` to own one: made on first
/// use, ended by `Kokkos::finalize`.
///
/// @code
/// // In the library, where it allocated per call:
/// void gather(const Halo& halo, Data& data) {
///   auto scope = kbuf::scope<memory_space>();  // releases the call's temporaries at '}'
///   buffer_type send = kbuf::temporary<double**, Kokkos::LayoutRight, memory_space>(
///       "send_buffer", halo.num_export(), data.extent(1));
///   ...
/// }
/// // In the caller, once:
/// kbuf::use current(alloc);  // or (pool), or (kbuf::process_allocator())
/// @endcode

#include <cstddef>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include <Kokkos_Core.hpp>

#include <kbuf/allocator_pool.hpp>
#include <kbuf/buffer_allocator.hpp>
#include <kbuf/config.hpp>
#include <kbuf/debug.hpp>
#include <kbuf/impl/current_state.hpp>
#include <kbuf/impl/errors.hpp>
#include <kbuf/impl/extents.hpp>
#include <kbuf/impl/macros.hpp>
#include <kbuf/impl/view_traits.hpp>

namespace kbuf {

/// A guard that makes an allocator the calling thread's current allocator for `MemorySpace`
/// while it lives: `kbuf::current<MemorySpace>()` returns it, `kbuf::scope` opens scopes of it
/// and `kbuf::temporary` takes from it inside them. Guards nest: the newest live guard of a thread
/// wins, and when it ends the one made before it is current again.
///
/// @code
/// kbuf::use current(alloc);  // MemorySpace deduced from the allocator
/// library_call();            // its kbuf::temporary buffers come from alloc
/// @endcode
///
/// Per thread: a guard changes nothing for other threads, which see their own guards (none,
/// unless they make one). Made from an `AllocatorPool`, it makes the calling thread's own
/// allocator of the pool (`pool.local()`) current, so each thread that makes such a guard
/// uses its own allocator and none shares one.
///
/// A guard belongs to the thread that made it and must be destroyed there. Guards may end in
/// any order (an RAII guard ends in reverse order of its creation anyway): the current
/// allocator is always the one of the newest guard still alive. The allocator (or the pool)
/// must outlive the guard; with `KBUF_ENABLE_DEBUG` an allocator destroyed while a guard names
/// it, and a guard destroyed on another thread, abort with a message naming the allocator.
/// Not copyable, not movable.
template <class MemorySpace>
class use final {
 public:
  /// The allocators it makes current.
  using allocator_type = BufferAllocator<MemorySpace>;
  /// Their memory space.
  using memory_space = MemorySpace;

  /// Makes `alloc` the calling thread's current allocator for `MemorySpace`.
  explicit use(BufferAllocator<MemorySpace>& alloc) noexcept
      : alloc_(&alloc), state_(&Impl::current_state<MemorySpace>()), outer_(state_->innermost) {
    state_->innermost = this;
#if KBUF_ENABLE_DEBUG
    ++alloc.live_uses_;
#endif
  }

  /// Makes the calling thread's own allocator of `pool` (`pool.local()`) its current allocator.
  /// @throws kbuf::out_of_memory if the thread's first `local()` cannot make its allocator.
  explicit use(AllocatorPool<MemorySpace>& pool) : use(pool.local()) {}

  use(const use&) = delete;
  use(use&&) = delete;
  use& operator=(const use&) = delete;
  use& operator=(use&&) = delete;

  /// The allocator current before this guard is current again (if this is the newest live
  /// guard of the thread; otherwise the newest stays current). Never throws.
  ~use() {
#if KBUF_ENABLE_DEBUG
    if (&Impl::current_state<MemorySpace>() != state_) {
      Impl::debug_abort(Impl::concat(
          "kbuf::use: the guard of allocator '", alloc_->label(), "' (",
          static_cast<const void*>(alloc_),
          ") was destroyed on another thread than the one that made it; a guard belongs to "
          "the thread that made it"));
    }
    --alloc_->live_uses_;
#endif
    Impl::Chain::unlink(state_->innermost, this);
  }

  /// The allocator this guard makes current.
  [[nodiscard]] allocator_type& allocator() const noexcept {
    return *alloc_;
  }

 private:
  friend struct Impl::Chain;

  allocator_type* alloc_;
  Impl::CurrentState<MemorySpace>* state_;  // of the thread that made it
  use* outer_;                              // the thread's guard made before it, or null
};

/// The calling thread's current allocator for `MemorySpace`: that of its newest live
/// `kbuf::use` guard, or null when it has none. The pointer is valid while that guard lives.
/// Lock-free, allocates nothing.
template <class MemorySpace = default_memory_space>
[[nodiscard]] BufferAllocator<MemorySpace>* current() noexcept {
  const use<MemorySpace>* g = Impl::current_state<MemorySpace>().innermost;
  return g != nullptr ? &g->allocator() : nullptr;
}

/// What `kbuf::scope` returns: a scope of the allocator that was current when it was made,
/// which it resets when destroyed (also when an exception unwinds through it), or, when no
/// allocator was current, a scope that does nothing. While it is the calling thread's innermost
/// open scope and its allocator is current, `kbuf::temporary` takes from that allocator: so
/// every temporary it gives out is released by a scope, and temporaries taken anywhere else
/// (outside every scope, or under a guard made inside the scope for another allocator) are plain
/// Views. It keeps to the allocator it was opened on: a guard made inside it changes nothing of
/// what it releases.
///
/// Like a guard it belongs to the thread that made it. Scopes of one allocator end in LIFO
/// order, as `BufferAllocator::Scope`s do. Not copyable, not movable: `auto s = kbuf::scope();`
/// holds it where it is made.
template <class MemorySpace>
class CurrentScope final {
 public:
  /// The allocator of its scopes.
  using allocator_type = BufferAllocator<MemorySpace>;

  /// A scope of `*alloc` (its checkpoint now), or, for null, a scope that does nothing; the
  /// calling thread's innermost scope from now on.
  explicit CurrentScope(allocator_type* alloc) noexcept
      : alloc_(alloc),
        state_(&Impl::current_state<MemorySpace>()),
        outer_(state_->innermost_scope) {
    state_->innermost_scope = this;
    if (alloc != nullptr) scope_.emplace(alloc->scope());
  }
  CurrentScope(const CurrentScope&) = delete;
  CurrentScope(CurrentScope&&) = delete;
  CurrentScope& operator=(const CurrentScope&) = delete;
  CurrentScope& operator=(CurrentScope&&) = delete;
  /// Resets its allocator to the checkpoint taken when it was made (nothing if none).
  ~CurrentScope() {
#if KBUF_ENABLE_DEBUG
    if (&Impl::current_state<MemorySpace>() != state_) {
      Impl::debug_abort(
          Impl::concat("kbuf::scope: a scope of allocator '",
                       alloc_ != nullptr ? alloc_->label() : std::string("(none)"),
                       "' was destroyed on another thread than the one that made it; a scope "
                       "belongs to the thread that made it"));
    }
#endif
    Impl::Chain::unlink(state_->innermost_scope, this);
  }  // scope_ resets alloc_ now

  /// The allocator it resets, or null for a scope that does nothing.
  [[nodiscard]] allocator_type* allocator() const noexcept {
    return alloc_;
  }

 private:
  friend struct Impl::Chain;

  allocator_type* alloc_;
  Impl::CurrentState<MemorySpace>* state_;  // of the thread that made it
  CurrentScope* outer_;                     // the thread's scope made before it, or null
  std::optional<typename allocator_type::Scope> scope_;
};

/// A scope of the calling thread's current allocator for `MemorySpace`: every temporary taken
/// from it after this call is released when the scope ends, and only inside such a scope does
/// `kbuf::temporary` take from the allocator. With no current allocator, a scope that does
/// nothing (`kbuf::temporary` makes plain Views, which free themselves). Open it where a call
/// begins, before its temporaries:
/// @code
/// auto scope = kbuf::scope<memory_space>();
/// @endcode
template <class MemorySpace = default_memory_space>
[[nodiscard]] CurrentScope<MemorySpace> scope() noexcept {
  return CurrentScope<MemorySpace>(current<MemorySpace>());
}

namespace Impl {

/// The allocator kbuf::temporary takes from: the current one, when the thread's innermost open
/// kbuf::scope is one of it; else null.
template <class MemorySpace>
BufferAllocator<MemorySpace>* scoped_current() noexcept {
  const CurrentState<MemorySpace>& state = current_state<MemorySpace>();
  if (state.innermost == nullptr || state.innermost_scope == nullptr) return nullptr;
  BufferAllocator<MemorySpace>* alloc = &state.innermost->allocator();
  return state.innermost_scope->allocator() == alloc ? alloc : nullptr;
}

/// kbuf::temporary for a label given as a C string.
template <class DataType, class Layout, class MemorySpace, class... Extents>
Kokkos::View<DataType, Layout, MemorySpace> temporary(const char* label, Extents... extents) {
  using V = Kokkos::View<DataType, Layout, MemorySpace>;
  using U = typename BufferAllocator<MemorySpace>::template view<DataType, Layout>;
  using T = typename V::value_type;
  static_assert(Impl::is_contiguous_layout<Layout>,
                "kbuf::temporary: Layout must be Kokkos::LayoutRight or Kokkos::LayoutLeft");
  static_assert(sizeof...(Extents) == static_cast<std::size_t>(V::rank_dynamic),
                "kbuf::temporary: pass exactly one extent per runtime dimension of DataType "
                "(one per '*')");
  static_assert((std::is_integral<Extents>::value && ...),
                "kbuf::temporary: extents must be integers");
  static_assert(!std::is_const<T>::value,
                "kbuf::temporary: the value type must not be const (the memory is uninitialised)");
  static_assert(std::is_trivially_destructible<T>::value,
                "kbuf::temporary: the value type must be trivially destructible (temporaries are "
                "released without running destructors)");
  KBUF_EXPECTS(label != nullptr, "kbuf::temporary(nullptr, ...): the label is null");
  std::size_t nbytes = 0;
  const bool fast = Impl::fast_byte_count<DataType, U>(nbytes, extents...);
  if (KBUF_IMPL_UNLIKELY(!fast)) {
    (void)Impl::checked_byte_count<DataType, U>(
        [label](auto... e) {
          Impl::throw_logic_error("kbuf::temporary(\"", label, "\", ", Impl::joined(", ", e...),
                                  "): ", Impl::bad_extents_reason<DataType, U>(e...));
        },
        extents...);
  }
  if (BufferAllocator<MemorySpace>* alloc = scoped_current<MemorySpace>()) {
    const U u = alloc->template allocate<DataType, Layout>(extents...);
    return Impl::unmanaged_view<V>(u.data(), extents...);
  }
  return V(Kokkos::view_alloc(std::string(label), Kokkos::WithoutInitializing),
           static_cast<std::size_t>(extents)...);
}

}  // namespace Impl

/// A buffer of `DataType` in `Layout` (LayoutRight or LayoutLeft), one extent per runtime
/// dimension, uninitialised, of the plain type `Kokkos::View<DataType, Layout, MemorySpace>`, so
/// that it assigns to a library's own View members.
/// - With a current allocator (`kbuf::use`), inside a `kbuf::scope` of it (the calling thread's
///   innermost): a temporary of the allocator, released when that scope ends. The View holds
///   no reference count (Kokkos treats it as unmanaged: `use_count()` is 0, `label()` empty)
///   and dangles after that, like every kbuf temporary.
/// - Otherwise (no current allocator, or no scope of it open): a View allocated
///   `Kokkos::view_alloc(label, Kokkos::WithoutInitializing)`, exactly what the library made
///   before it adopted kbuf. So an object made outside a call's scope, which may outlive it,
///   never holds a temporary.
/// A zero extent gives an empty View that holds no memory from the allocator. The value type
/// must be trivially destructible.
/// @throws kbuf::logic_error for a negative extent or a size that overflows `size_t`, naming
/// the call, the label and the value; nothing is allocated then.
/// @throws kbuf::out_of_memory as `BufferAllocator::allocate`; without a current allocator,
/// what Kokkos throws when an allocation fails.
template <class DataType, class Layout = Kokkos::LayoutRight,
          class MemorySpace = default_memory_space, class... Extents>
[[nodiscard]] Kokkos::View<DataType, Layout, MemorySpace> temporary(const std::string& label,
                                                                    Extents... extents) {
  return Impl::temporary<DataType, Layout, MemorySpace>(label.c_str(), extents...);
}

/// As above, for a label given as a string literal: the same, without making a `std::string`
/// (and so no heap allocation for a long label) unless a plain View is made.
template <class DataType, class Layout = Kokkos::LayoutRight,
          class MemorySpace = default_memory_space, class... Extents>
[[nodiscard]] Kokkos::View<DataType, Layout, MemorySpace> temporary(const char* label,
                                                                    Extents... extents) {
  return Impl::temporary<DataType, Layout, MemorySpace>(label, extents...);
}

/// The process's allocator for `MemorySpace`, for code that has no `main` to own one: the
/// calling host thread's allocator (`local()`) of one `AllocatorPool` per process and memory
/// space, labelled "kbuf::process_allocator". The pool is made by the first call after
/// `Kokkos::initialize` and destroyed, with its allocators and their buffers, by
/// `Kokkos::finalize` (through `Kokkos::push_finalize_hook`). Any host thread may call it; each
/// gets its own allocator, as from `AllocatorPool::local()` (lock-free after a thread's first
/// call). Make it current with `kbuf::use current(kbuf::process_allocator());`.
///
/// The reference is valid until `Kokkos::finalize`. By then every thread must be done with it:
/// no live temporary, scope or `kbuf::use` guard (with `KBUF_ENABLE_DEBUG`, `Kokkos::finalize`
/// aborts naming the allocator otherwise), and no call of it during `Kokkos::finalize` (a
/// finalize hook must not call it).
/// @throws kbuf::logic_error before `Kokkos::initialize` or after `Kokkos::finalize`, naming the
/// call.
/// @throws kbuf::out_of_memory if a thread's first call cannot make its allocator.
template <class MemorySpace = default_memory_space>
[[nodiscard]] BufferAllocator<MemorySpace>& process_allocator() {
  AllocatorPool<MemorySpace>* pool =
      Impl::process_state<MemorySpace>().pool.load(std::memory_order_acquire);
  if (KBUF_IMPL_UNLIKELY(pool == nullptr)) pool = &Impl::make_process_pool<MemorySpace>();
  return pool->local();
}

}  // namespace kbuf

#endif  // KBUF_CURRENT_HPP
