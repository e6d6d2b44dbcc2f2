#ifndef KBUF_CURRENT_HPP
#define KBUF_CURRENT_HPP

/// @file
/// kbuf in code it does not own. A library that allocates buffers inside calls its caller never
/// sees takes them with `kbuf::temporary` under a `kbuf::scope`, both naming the library's
/// `kbuf::owner`; until its caller says otherwise these are the plain Views it made before. A
/// caller makes an allocator (or each thread's allocator of a pool) the current one of its
/// thread with a `kbuf::use` guard, or every memory space's process allocator with one
/// `kbuf::use_process_allocators` guard, and the library's buffers then come from it, released
/// when the library's own scopes end (docs/dropin.md). A scope serves only the temporaries of
/// its owner: one its caller opened for itself never holds a library's buffers.
/// `kbuf::process_allocator` is an allocator for code that has no `main` to own one: made on
/// first use, ended by `Kokkos::finalize`.
///
/// @code
/// // In the library, once:
/// inline constexpr kbuf::owner halo_owner{"halo"};
/// // where it allocated per call:
/// void gather(const Halo& halo, Data& data) {
///   auto scope = kbuf::scope<memory_space>(halo_owner);  // releases the call's buffers at '}'
///   buffer_type send = kbuf::temporary<double**, Kokkos::LayoutRight, memory_space>(
///       halo_owner, "send_buffer", halo.num_export(), data.extent(1));
///   ...
/// }
/// // In the caller, once (in main):
/// kbuf::use_process_allocators guard;  // or kbuf::use current(alloc), or (pool)
/// @endcode

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <Kokkos_Core.hpp>

#include <kbuf/allocator_pool.hpp>
#include <kbuf/buffer_allocator.hpp>
#include <kbuf/config.hpp>
#include <kbuf/debug.hpp>
#include <kbuf/impl/current_state.hpp>
#include <kbuf/impl/errors.hpp>
#include <kbuf/impl/extents.hpp>
#include <kbuf/impl/macros.hpp>
#include <kbuf/impl/process_registry.hpp>
#include <kbuf/impl/view_traits.hpp>

namespace kbuf {

/// Who a `kbuf::scope` belongs to: a library (or any part of a program) names its own owner once
/// and passes it to every `kbuf::scope` it opens and every `kbuf::temporary` it takes. A scope
/// serves only the temporaries of its own owner; a temporary taken while the thread's innermost
/// scope belongs to someone else (its caller's scope, another library's) is a plain View. So a
/// caller that opens a scope of its own around a library call never lends the library memory
/// that its scope releases: an object the library builds there and the caller keeps (Cabana's
/// `createGather`) holds plain Views.
///
/// Owners are told apart by their names, so give each library its own (its namespace, say):
/// two owner objects with the same name are the same owner (which lets a library's owner be
/// one owner in every shared object it is compiled into). The name must outlive every scope and
/// temporary that names the owner: a string literal.
/// @code
/// inline constexpr kbuf::owner halo_owner{"halo"};
/// @endcode
/// Trivially copyable; a constant expression.
class owner final {
 public:
  /// The owner named `name` (not null: kbuf::scope and kbuf::temporary refuse a null name).
  explicit constexpr owner(const char* name) noexcept : name_(name) {}
  /// Its name.
  [[nodiscard]] constexpr const char* name() const noexcept { return name_; }

 private:
  const char* name_;
};

template <class MemorySpace>
class CurrentScope;

template <class MemorySpace = default_memory_space>
BufferAllocator<MemorySpace>& process_allocator();

namespace Impl {

/// The memory space of `Space`: `Space` itself for a memory space, `M` for a
/// `Kokkos::Device<E, M>` (the device type a View names); anything else is refused by the call
/// that names it (kbuf::scope, kbuf::temporary).
template <class Space>
struct memory_space_of {
  using type = Space;
};
template <class ExecutionSpace, class MemorySpace>
struct memory_space_of<Kokkos::Device<ExecutionSpace, MemorySpace>> {
  using type = MemorySpace;
};
template <class Space>
using memory_space_of_t = typename memory_space_of<Space>::type;

template <class Space>
constexpr bool is_memory_space_or_device = Kokkos::is_memory_space<memory_space_of_t<Space>>::value;

/// kbuf::temporary's return type for a data type (a View type takes the overloads below).
template <class DataType, class Layout, class Space>
using temporary_view_t =
    std::enable_if_t<!Kokkos::is_view<DataType>::value, Kokkos::View<DataType, Layout, Space>>;

/// kbuf::temporary's return type for a View type: the type itself, or its non-const View type
/// when its data type is const.
template <class ViewType, bool = Kokkos::is_view<ViewType>::value>
struct temporary_like {};
template <class ViewType>
struct temporary_like<ViewType, true> {
  using type = std::conditional_t<
      std::is_same<typename ViewType::data_type, typename ViewType::non_const_data_type>::value,
      ViewType, typename ViewType::non_const_type>;
};
template <class ViewType>
using temporary_like_t = typename temporary_like<ViewType>::type;

/// The kbuf::logic_error of kbuf::scope<Space>(owner) for an owner without a name, for the space
/// `Space::name()` names (libkbuf).
[[noreturn]] KBUF_IMPL_EXPORT void throw_scope_unnamed_owner(const char* space_name);
/// The kbuf::logic_error of kbuf::temporary for a null label (libkbuf).
[[noreturn]] KBUF_IMPL_EXPORT void throw_temporary_null_label();
/// The kbuf::logic_error of kbuf::temporary for an owner without a name (libkbuf).
[[noreturn]] KBUF_IMPL_EXPORT void throw_temporary_unnamed_owner(const char* label);
/// The kbuf::logic_error of kbuf::temporary for `n` extents that checked_byte_count refused
/// (libkbuf).
[[noreturn]] KBUF_IMPL_EXPORT void throw_temporary_bad_extents_text(const char* label,
                                                                    const ExtentValue* extents,
                                                                    std::size_t n,
                                                                    bool held_in_32_bits,
                                                                    std::size_t bytes_per_entry);

/// kbuf::temporary's kbuf::logic_error for refused extents: the text is made in libkbuf.
template <class DataType, class View, class... Extents>
[[noreturn]] KBUF_IMPL_COLD void throw_temporary_bad_extents(const char* label,
                                                             Extents... extents) {
  if constexpr (extents_fit_64_bits<Extents...>) {
    const ExtentValue values[] = {extent_value(extents)..., ExtentValue{}};
    throw_temporary_bad_extents_text(
        label, values, sizeof...(Extents), extents_held_in_32_bits<View>,
        static_extent_product<DataType>::value * sizeof(typename View::value_type));
  } else {
    throw_logic_error("kbuf::temporary(\"", label, "\", ", joined(", ", extents...),
                      "): ", bad_extents_reason_generic<DataType, View>(extents...));
  }
}

/// True when a scope of owner `a` serves a temporary of owner `b` (null: no owner): the same
/// object, or owners of the same name.
inline bool same_owner(const owner* a, const owner* b) noexcept {
  if (a == b) return true;
  return a != nullptr && b != nullptr && a->name() != nullptr && b->name() != nullptr &&
         std::strcmp(a->name(), b->name()) == 0;
}

/// What the drop-in's free functions reach inside the classes they serve.
struct CurrentAccess {
  /// The scope that serves a temporary of owner `o` (null for none): the thread's innermost open
  /// kbuf::scope of the space, if it belongs to `o`, has an allocator, and that allocator is
  /// still the current one; else null (the temporary is a plain View).
  template <class MemorySpace>
  KBUF_IMPL_ALWAYS_INLINE static CurrentScope<MemorySpace>* serving_scope(const owner* o) noexcept {
    ThreadSpaceState& state = current_state<MemorySpace>();
    auto* s = static_cast<CurrentScope<MemorySpace>*>(state.innermost_scope);
    if (s == nullptr || s->alloc_ == nullptr || s->serial_ != state.current_serial) {
      return nullptr;
    }
    if (KBUF_IMPL_UNLIKELY(s->owner_ != o) && !same_owner(s->owner_, o)) return nullptr;
    return s;
  }

  /// The allocator of a serving scope.
  template <class MemorySpace>
  static BufferAllocator<MemorySpace>& allocator(const CurrentScope<MemorySpace>& s) noexcept {
    return *s.alloc_;
  }

  /// A temporary of `nbytes` (checked: below 2^62) from the allocator `a` of the serving scope,
  /// as `allocate(label, extents...)` takes it; the hot path of `BufferAllocator::allocate`,
  /// without computing the size again.
  template <class DataType, class Layout, class MemorySpace, class... Extents>
  KBUF_IMPL_ALWAYS_INLINE static void* take(BufferAllocator<MemorySpace>& a, const char* label,
                                            std::size_t nbytes, Extents... extents) {
    using T = typename Kokkos::View<DataType, Layout, MemorySpace>::value_type;
    if (KBUF_IMPL_UNLIKELY(nbytes == 0))
      return take_general<DataType, Layout>(a, label, extents...);
    return a.template acquire<alignof(T)>(nbytes, label);
  }

  /// take() for a temporary that takes no bytes.
  template <class DataType, class Layout, class MemorySpace, class... Extents>
  KBUF_IMPL_COLD static void* take_general(BufferAllocator<MemorySpace>& a, const char* label,
                                           Extents... extents) {
    return a.template allocate<DataType, Layout>(label, extents...).data();
  }

  /// KBUF_ENABLE_DEBUG: `v`, a counted View in place of a temporary of `s`, which checks at its
  /// end that nothing else holds it.
  template <class MemorySpace, class V>
  static V hold(CurrentScope<MemorySpace>& s, const char* label, V v) {
    s.held_.push_back(std::make_unique<HeldView<V>>(label, v));
    return v;
  }

  /// Opens a scope of `a` (BufferAllocator::Scope's bookkeeping) and returns its index.
  template <class MemorySpace>
  static std::size_t open_scope(BufferAllocator<MemorySpace>& a) noexcept {
    return a.open_scope();
  }

  /// Ends the scope of `a` opened at `cp` with `index`, as BufferAllocator::Scope ends.
  template <class MemorySpace>
  static void end_scope(BufferAllocator<MemorySpace>& a,
                        const typename BufferAllocator<MemorySpace>::Checkpoint& cp,
                        std::size_t index) noexcept {
    a.end_scope(cp, index);
  }

  /// KBUF_ENABLE_DEBUG: counts the guards that make `alloc` current.
  template <class MemorySpace>
  static void count_use(BufferAllocator<MemorySpace>& alloc, int delta) noexcept {
    alloc.live_uses_ += static_cast<std::size_t>(delta);
  }
};

}  // namespace Impl

/// A guard that makes an allocator the calling thread's current allocator for `MemorySpace`
/// while it lives: `kbuf::current<MemorySpace>()` returns it, `kbuf::scope` opens scopes of it
/// and `kbuf::temporary` takes from it inside them. Guards nest: the newest live guard of a thread
/// wins (a `kbuf::use_process_allocators` guard among them), and when it ends the one made before
/// it is current again.
///
/// @code
/// kbuf::use current(alloc);  // MemorySpace deduced from the allocator
/// library_call();            // its kbuf::temporary buffers come from alloc
/// @endcode
///
/// Per thread: a guard changes nothing for other threads, which see their own guards (none,
/// unless they make one). Made from an `AllocatorPool`, it makes the calling thread's own
/// allocator of the pool (`pool.local()`) current, so each thread that makes such a guard
/// uses its own allocator and none shares one. One per process: a guard made in the executable
/// is seen inside every shared library of the process, also one built with hidden visibility.
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
      : alloc_(&alloc),
        state_(&Impl::current_state<MemorySpace>()),
        outer_(static_cast<use*>(state_->innermost_use)),
        serial_(state_->thread->new_serial()) {
    state_->innermost_use = this;
    state_->use_serial = serial_;
    state_->current_serial = serial_;
    state_->serve();
#if KBUF_ENABLE_DEBUG
    Impl::CurrentAccess::count_use(alloc, 1);
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
    Impl::CurrentAccess::count_use(*alloc_, -1);
#endif
    Impl::Chain::unlink(state_->innermost_use, this);
    const use* innermost = static_cast<const use*>(state_->innermost_use);
    state_->use_serial = innermost != nullptr ? innermost->serial_ : 0;
    state_->current_serial = state_->thread->current_of(*state_);
    state_->serve();
  }

  /// The allocator this guard makes current.
  [[nodiscard]] allocator_type& allocator() const noexcept {
    return *alloc_;
  }

 private:
  friend struct Impl::Chain;

  allocator_type* alloc_;
  Impl::ThreadSpaceState* state_;  // of the thread that made it
  use* outer_;                     // the thread's guard made before it, or null
  std::uint64_t serial_;           // its place among the thread's guards
};

/// A guard that makes, while it lives, the process allocator of every memory space
/// (`kbuf::process_allocator<Space>()`) the calling thread's current allocator for that space:
/// one line in `main` serves whatever memory space a library allocates in, chosen at run time or
/// not, in the setup phase as well as in the time loop.
/// @code
/// int main(int argc, char* argv[]) {
///   Kokkos::ScopeGuard kokkos(argc, argv);
///   kbuf::use_process_allocators guard;  // ends before the ScopeGuard finalizes Kokkos
///   ...
/// }
/// @endcode
/// It nests with `kbuf::use` guards: the newest live guard of the thread decides each space's
/// current allocator. A space's process allocator is made when a scope first asks for it, as
/// `kbuf::process_allocator` makes it. Per thread, like `kbuf::use`: it belongs to the thread
/// that made it, must be destroyed there (with `KBUF_ENABLE_DEBUG` a guard destroyed on another
/// thread aborts), and must end before `Kokkos::finalize`. Not copyable, not movable.
class use_process_allocators final {
 public:
  /// Makes every memory space's process allocator current on the calling thread.
  /// @throws kbuf::logic_error if Kokkos is not initialized (before `Kokkos::initialize`, after
  /// `Kokkos::finalize`).
  use_process_allocators()
      : states_(&Impl::thread_states()),
        outer_(states_->innermost_all),
        serial_(states_->new_serial()) {
    KBUF_EXPECTS(Kokkos::is_initialized(),
                 "kbuf::use_process_allocators: Kokkos is not initialized; the process "
                 "allocators exist between Kokkos::initialize and Kokkos::finalize");
    states_->innermost_all = this;
    states_->all_serial = serial_;
    states_->update_current();
  }
  use_process_allocators(const use_process_allocators&) = delete;
  use_process_allocators(use_process_allocators&&) = delete;
  use_process_allocators& operator=(const use_process_allocators&) = delete;
  use_process_allocators& operator=(use_process_allocators&&) = delete;

  /// Each space's allocator current before this guard is current again (if this is the newest
  /// live guard of the thread). Never throws.
  ~use_process_allocators() {
#if KBUF_ENABLE_DEBUG
    if (&Impl::thread_states() != states_) {
      Impl::debug_abort(
          "kbuf::use_process_allocators: the guard was destroyed on another thread than the one "
          "that made it; a guard belongs to the thread that made it");
    }
#endif
    Impl::Chain::unlink(states_->innermost_all, this);
    states_->all_serial = states_->innermost_all != nullptr ? states_->innermost_all->serial_ : 0;
    states_->update_current();
    if (states_->innermost_all == nullptr) {  // the thread's last: forget its process allocators
      for (std::size_t i = 0; i < states_->count; ++i) {
        Impl::ThreadSpaceState& s = states_->spaces[i];
        if (s.process_allocator != nullptr) s.forget_process_allocator(s);
      }
    }
  }

 private:
  friend struct Impl::Chain;

  Impl::ThreadStates* states_;     // of the thread that made it
  use_process_allocators* outer_;  // the thread's guard made before it, or null
  std::uint64_t serial_;           // its place among the thread's guards
};

namespace Impl {

/// Forgets the thread's process allocator of `MemorySpace` (its last use_process_allocators
/// guard ended).
template <class MemorySpace>
void forget_process_allocator(ThreadSpaceState& state) noexcept {
#if KBUF_ENABLE_DEBUG
  CurrentAccess::count_use(*static_cast<BufferAllocator<MemorySpace>*>(state.process_allocator),
                           -1);
#endif
  state.process_allocator = nullptr;
}

/// The thread's process allocator of `MemorySpace` while a use_process_allocators guard decides
/// its current allocator: found once per thread and guard, then kept. Null when it cannot be had
/// (Kokkos::finalize ended it, or its first allocator could not be made): plain Views then.
template <class MemorySpace>
KBUF_IMPL_COLD BufferAllocator<MemorySpace>* find_process_allocator(
    ThreadSpaceState& state) noexcept {
  try {
    BufferAllocator<MemorySpace>& alloc = process_allocator<MemorySpace>();
    state.process_allocator = &alloc;
    state.forget_process_allocator = &forget_process_allocator<MemorySpace>;
#if KBUF_ENABLE_DEBUG
    CurrentAccess::count_use(alloc, 1);
#endif
    return &alloc;
  } catch (...) {
    return nullptr;
  }
}

/// Says once per process, in debug builds, that a scope of `MemorySpace` found no current
/// allocator while another space has one: a caller's guard for the wrong space.
template <class MemorySpace>
KBUF_IMPL_COLD void note_no_current(const owner* o) noexcept {
  const ThreadStates& t = thread_states();
  const char* key = space_key<MemorySpace>();
  for (std::size_t i = 0; i < t.count; ++i) {
    const ThreadSpaceState& s = t.spaces[i];
    if (s.current_serial == 0 || std::strcmp(s.key, key) == 0) continue;
    if (process_state<MemorySpace>().said_no_current.exchange(true)) return;
    std::fprintf(stderr,
                 "kbuf::scope<Kokkos::%sSpace>%s%s%s: no allocator is current for this memory "
                 "space on this thread, while one is for Kokkos::%sSpace; the scope's "
                 "temporaries are plain Views (kbuf::use_process_allocators makes the process "
                 "allocator of every space current). Said once.\n",
                 MemorySpace::name(), o != nullptr ? " of '" : "", o != nullptr ? o->name() : "",
                 o != nullptr ? "'" : "", s.name);
    return;
  }
}

}  // namespace Impl

/// The calling thread's current allocator for `MemorySpace`: that of its newest live
/// `kbuf::use` guard, or the process allocator of the space when a `kbuf::use_process_allocators`
/// guard is newer; null when it has neither. The pointer is valid while that guard lives.
/// Lock-free; allocates nothing (but the process allocator's first use on a thread makes it).
template <class MemorySpace = default_memory_space>
[[nodiscard]] BufferAllocator<MemorySpace>* current() noexcept {
  Impl::ThreadSpaceState& state = Impl::current_state<MemorySpace>();
  if (state.current_serial == 0) return nullptr;
  if (state.current_serial == state.use_serial) {
    return &static_cast<const use<MemorySpace>*>(state.innermost_use)->allocator();
  }
  if (state.process_allocator != nullptr) {
    return static_cast<BufferAllocator<MemorySpace>*>(state.process_allocator);
  }
  return Impl::find_process_allocator<MemorySpace>(state);
}

/// What `kbuf::scope` returns: a scope of the allocator that was current when it was made, which
/// it resets when destroyed (also when an exception unwinds through it), or, when no allocator
/// was current, a scope that does nothing. It belongs to an owner (or to none, for
/// `kbuf::scope()`). While it is the calling thread's innermost open scope of its memory space and
/// its allocator is still current, `kbuf::temporary` calls that name the same owner take from
/// that allocator: so every temporary it gives out is released by a scope of its own owner, and
/// temporaries taken anywhere else (outside every scope, under another owner's scope, or under a
/// guard made inside the scope) are plain Views. It keeps to the allocator it was opened on: a
/// guard made inside it changes nothing of what it releases.
///
/// With `KBUF_ENABLE_DEBUG`, the temporaries it serves are Views with a reference count of their
/// own (the allocator still accounts for them; their `label()` is empty, as in a release build;
/// each is a Kokkos allocation of its own, which Kokkos Tools see, unlabelled), and when it ends
/// while something still holds one of them (a member of an object that outlives the call), the
/// program aborts with a message naming the temporary's label and the scope's owner; in
/// pass-through mode without debug checks, the temporary's memory is freed when the scope ends, so
/// AddressSanitizer reports a later use.
///
/// Like a guard it belongs to the thread that made it. Scopes of one allocator end in LIFO
/// order, as `BufferAllocator::Scope`s do. Not copyable, not movable: `auto s = kbuf::scope();`
/// holds it where it is made.
template <class MemorySpace>
class CurrentScope final {
 public:
  /// The allocator of its scopes.
  using allocator_type = BufferAllocator<MemorySpace>;

  /// A scope of `*alloc` (its checkpoint now) belonging to `*o` (none for null), or, for a null
  /// `alloc`, a scope that does nothing; the calling thread's innermost scope from now on.
  CurrentScope(allocator_type* alloc, const owner* o) noexcept
      : alloc_(alloc),
        owner_(o),
        state_(&Impl::current_state<MemorySpace>()),
        outer_(static_cast<CurrentScope*>(state_->innermost_scope)),
        serial_(state_->current_serial) {
    state_->innermost_scope = this;
    set_innermost(*state_, this);
    if (alloc != nullptr) {
      checkpoint_ = alloc->checkpoint();
      index_ = Impl::CurrentAccess::open_scope(*alloc);
    }
  }
  /// As above, belonging to no owner (`kbuf::scope()`).
  explicit CurrentScope(allocator_type* alloc) noexcept : CurrentScope(alloc, nullptr) {}
  CurrentScope(const CurrentScope&) = delete;
  CurrentScope(CurrentScope&&) = delete;
  CurrentScope& operator=(const CurrentScope&) = delete;
  CurrentScope& operator=(CurrentScope&&) = delete;
  /// Resets its allocator to the checkpoint taken when it was made (nothing if none).
  KBUF_IMPL_ALWAYS_INLINE ~CurrentScope() {
#if KBUF_ENABLE_DEBUG
    if (&Impl::current_state<MemorySpace>() != state_) {
      Impl::debug_abort(Impl::concat("kbuf::scope: a scope of allocator '",
                                     alloc_ != nullptr ? alloc_->label() : std::string("(none)"),
                                     "' was destroyed on another thread than the one that made "
                                     "it; a scope belongs to the thread that made it"));
    }
    for (const auto& h : held_) {
      if (h->use_count() > 1) {
        Impl::debug_abort(Impl::concat(
            "kbuf::scope", owner_ != nullptr ? " of '" : "",
            owner_ != nullptr ? owner_->name() : "", owner_ != nullptr ? "'" : "",
            " on allocator '", alloc_->label(), "': the temporary '", h->label, "' (", h->bytes(),
            " bytes) is still referenced (", h->use_count() - 1,
            " more reference(s)) when the scope that served it ends; something kept it past the "
            "call (a member of an object built inside the scope and kept by its caller?)"));
      }
    }
#endif
    Impl::Chain::unlink(state_->innermost_scope, this);
    set_innermost(*state_, static_cast<const CurrentScope*>(state_->innermost_scope));
    if (alloc_ != nullptr) Impl::CurrentAccess::end_scope(*alloc_, checkpoint_, index_);
  }

  /// The allocator it resets, or null for a scope that does nothing.
  [[nodiscard]] allocator_type* allocator() const noexcept {
    return alloc_;
  }
  /// The owner it belongs to, or null for none.
  [[nodiscard]] const owner* owner_of() const noexcept {
    return owner_;
  }

 private:
  friend struct Impl::Chain;
  friend struct Impl::CurrentAccess;

  // Copies what kbuf::temporary reads of the thread's innermost scope `s` (null: none) into
  // `state`.
  static void set_innermost(Impl::ThreadSpaceState& state, const CurrentScope* s) noexcept {
    state.scope_alloc = s != nullptr ? s->alloc_ : nullptr;
    state.scope_owner = s != nullptr ? s->owner_ : nullptr;
    state.scope_serial = s != nullptr ? s->serial_ : 0;
    state.serve();
  }

  allocator_type* alloc_;
  const owner* owner_;
  Impl::ThreadSpaceState* state_;                   // of the thread that made it
  CurrentScope* outer_;                             // the thread's scope made before it, or null
  std::uint64_t serial_;                            // the thread's current_serial when it was made
  typename allocator_type::Checkpoint checkpoint_;  // what it resets to (with an allocator)
  std::size_t index_ = 0;                           // its place among the allocator's scopes
  // KBUF_ENABLE_DEBUG: the temporaries it served, reference-counted (empty otherwise).
  std::vector<std::unique_ptr<Impl::HeldTemporary>> held_;
};

/// A scope of the calling thread's current allocator for `MemorySpace`, belonging to `o`: every
/// temporary taken from it after this call is released when the scope ends, and only inside
/// such a scope do `kbuf::temporary` calls naming `o` take from the allocator. With no current
/// allocator, a scope that does nothing (`kbuf::temporary` makes plain Views, which free
/// themselves); with `KBUF_ENABLE_DEBUG` that case says once on stderr when another memory space
/// has a current allocator. Open it where a call begins, before its temporaries:
/// @code
/// auto scope = kbuf::scope<memory_space>(my_owner);
/// @endcode
/// @throws kbuf::logic_error if `o` has a null name.
template <class Space = default_memory_space, class MemorySpace = Impl::memory_space_of_t<Space>>
[[nodiscard]] KBUF_IMPL_ALWAYS_INLINE CurrentScope<MemorySpace> scope(const owner& o) {
  static_assert(
      Impl::is_memory_space_or_device<Space>,
      "kbuf::scope<Space>(owner): Space must be a Kokkos memory space (Kokkos::HostSpace, "
      "Kokkos::CudaSpace, ...) or a Kokkos::Device<ExecutionSpace, MemorySpace>");
  if (KBUF_IMPL_UNLIKELY(o.name() == nullptr)) {
    Impl::throw_scope_unnamed_owner(MemorySpace::name());
  }
  BufferAllocator<MemorySpace>* alloc = current<MemorySpace>();
#if KBUF_ENABLE_DEBUG
  if (alloc == nullptr) Impl::note_no_current<MemorySpace>(&o);
#endif
  return CurrentScope<MemorySpace>(alloc, &o);
}

/// As above, for a scope that belongs to no owner: it serves only `kbuf::temporary` calls that
/// name no owner either. For code that is both the caller and the library (an application's own
/// functions); a library names its owner, so that no scope of its callers can serve it.
template <class Space = default_memory_space, class MemorySpace = Impl::memory_space_of_t<Space>>
[[nodiscard]] KBUF_IMPL_ALWAYS_INLINE CurrentScope<MemorySpace> scope() noexcept {
  static_assert(Impl::is_memory_space_or_device<Space>,
                "kbuf::scope<Space>(): Space must be a Kokkos memory space (Kokkos::HostSpace, "
                "Kokkos::CudaSpace, ...) or a Kokkos::Device<ExecutionSpace, MemorySpace>");
  BufferAllocator<MemorySpace>* alloc = current<MemorySpace>();
#if KBUF_ENABLE_DEBUG
  if (alloc == nullptr) Impl::note_no_current<MemorySpace>(nullptr);
#endif
  return CurrentScope<MemorySpace>(alloc, nullptr);
}

namespace Impl {

/// kbuf::temporary's checks for every case the hot path leaves: a null label, an owner without
/// a name, extents that fast_byte_count cannot decide (bad ones raise kbuf::logic_error), debug
/// builds. The rest as temporary_of.
template <class DataType, class Layout, class MemorySpace, class... Extents>
KBUF_IMPL_COLD Kokkos::View<DataType, Layout, MemorySpace> temporary_slow(const owner* o,
                                                                          const char* label,
                                                                          Extents... extents) {
  using V = Kokkos::View<DataType, Layout, MemorySpace>;
  using U = typename BufferAllocator<MemorySpace>::template view<DataType, Layout>;
  if (KBUF_IMPL_UNLIKELY(label == nullptr)) throw_temporary_null_label();
  if (KBUF_IMPL_UNLIKELY(o != nullptr && o->name() == nullptr))
    throw_temporary_unnamed_owner(label);
  (void)Impl::checked_byte_count<DataType, U>(
      [label](auto... e) { throw_temporary_bad_extents<DataType, U>(label, e...); }, extents...);
  if (CurrentScope<MemorySpace>* s = CurrentAccess::serving_scope<MemorySpace>(o)) {
    const U u = CurrentAccess::allocator(*s).template allocate<DataType, Layout>(label, extents...);
#if KBUF_ENABLE_DEBUG
    if (u.size() != 0) {  // no label of its own: label() is empty, as in every build
      return CurrentAccess::hold(*s, label,
                                 V(Kokkos::view_alloc(std::string(), Kokkos::WithoutInitializing),
                                   static_cast<std::size_t>(extents)...));
    }
#endif
    return Impl::unmanaged_view<V>(u.data(), extents...);
  }
  return V(Kokkos::view_alloc(std::string(label), Kokkos::WithoutInitializing),
           static_cast<std::size_t>(extents)...);
}

/// kbuf::temporary when the serving scope's owner is not `o` by address: served still when it is
/// `o` by name, else a plain View.
template <class DataType, class Layout, class MemorySpace, class... Extents>
KBUF_IMPL_COLD Kokkos::View<DataType, Layout, MemorySpace> other_owner_temporary(
    const owner* o, const char* label, Extents... extents);

/// kbuf::temporary when no scope serves it: a plain View (after the owner's check).
template <class DataType, class Layout, class MemorySpace, class... Extents>
KBUF_IMPL_COLD Kokkos::View<DataType, Layout, MemorySpace> plain_temporary(const owner* o,
                                                                           const char* label,
                                                                           Extents... extents) {
  if (KBUF_IMPL_UNLIKELY(o != nullptr && o->name() == nullptr))
    throw_temporary_unnamed_owner(label);
  return Kokkos::View<DataType, Layout, MemorySpace>(
      Kokkos::view_alloc(std::string(label), Kokkos::WithoutInitializing),
      static_cast<std::size_t>(extents)...);
}

template <class DataType, class Layout, class MemorySpace, class... Extents>
Kokkos::View<DataType, Layout, MemorySpace> other_owner_temporary(const owner* o, const char* label,
                                                                  Extents... extents) {
  if (CurrentAccess::serving_scope<MemorySpace>(o) != nullptr) {
    return temporary_slow<DataType, Layout, MemorySpace>(o, label, extents...);
  }
  return plain_temporary<DataType, Layout, MemorySpace>(o, label, extents...);
}

/// kbuf::temporary of owner `o` (null for none) for a label given as a C string. Its hot path (a
/// serving scope, extents below the bound that makes every check moot) is a few loads and
/// compares beside BufferAllocator::allocate's own; everything else is out of line. A scope
/// never belongs to an owner without a name (kbuf::scope refuses one), so the pointer compare
/// that finds the serving scope needs no check of the name.
template <class DataType, class Layout, class MemorySpace, class... Extents>
KBUF_IMPL_ALWAYS_INLINE Kokkos::View<DataType, Layout, MemorySpace> temporary_of(
    const owner* o, const char* label, Extents... extents) {
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
  std::size_t nbytes = 0;  // set by fast_byte_count when it returns true
  const bool fast = label != nullptr && Impl::fast_byte_count<DataType, U>(nbytes, extents...);
  if (KBUF_ENABLE_DEBUG || KBUF_IMPL_UNLIKELY(!fast)) {
    return temporary_slow<DataType, Layout, MemorySpace>(o, label, extents...);
  }
  const ThreadSpaceState& state = current_state<MemorySpace>();
  if (KBUF_IMPL_UNLIKELY(state.serving_owner != o)) {
    return other_owner_temporary<DataType, Layout, MemorySpace>(o, label, extents...);
  }
  return Impl::unmanaged_view<V>(
      CurrentAccess::take<DataType, Layout>(
          *static_cast<BufferAllocator<MemorySpace>*>(state.serving_alloc), label, nbytes,
          extents...),
      extents...);
}

}  // namespace Impl

/// A buffer of `DataType` in `Layout` (LayoutRight or LayoutLeft), one extent per runtime
/// dimension, uninitialised, of the plain type `Kokkos::View<DataType, Layout, MemorySpace>`, so
/// that it assigns to a library's own View members; `label` names it in Kokkos Tools' records
/// either way.
/// - Inside a `kbuf::scope` of `o` (the calling thread's innermost scope of `MemorySpace`) whose
///   allocator is still the thread's current one: a temporary of that allocator, released when
///   that scope ends. The View holds no reference count (Kokkos treats it as unmanaged:
///   `use_count()` is 0, `label()` empty; with `KBUF_ENABLE_DEBUG` it is counted, see
///   `kbuf::CurrentScope`, and its `label()` is empty too) and dangles after that, like every
///   kbuf temporary. `label` names it in kbuf's own records (Kokkos Tools' `kbuf:` spaces,
///   kbuf-advisor, debug checks' messages); derive no allocation's label from `label()`.
/// - Otherwise (no scope of `o` innermost, or no allocator current): a View allocated
///   `Kokkos::view_alloc(label, Kokkos::WithoutInitializing)`, exactly what the library made
///   before it adopted kbuf. So an object made outside the library's own per-call scopes, which
///   may outlive them, never holds a temporary, whatever scopes its caller opened.
/// A zero extent gives an empty View that holds no memory from the allocator. The value type
/// must be trivially destructible.
/// @throws kbuf::logic_error for a negative extent or a size that overflows `size_t`, naming
/// the call, the label and the value, or for an owner with a null name; nothing is allocated
/// then.
/// @throws kbuf::out_of_memory as `BufferAllocator::allocate`; without a current allocator,
/// what Kokkos throws when an allocation fails.
template <class DataType, class Layout = Kokkos::LayoutRight, class Space = default_memory_space,
          class... Extents>
[[nodiscard]] KBUF_IMPL_ALWAYS_INLINE Impl::temporary_view_t<DataType, Layout, Space> temporary(
    const owner& o, const std::string& label, Extents... extents) {
  return temporary<DataType, Layout, Space>(o, label.c_str(), extents...);
}

/// As above, for a label given as a string literal: the same, without making a `std::string`
/// (and so no heap allocation for a long label) unless a plain View is made.
template <class DataType, class Layout = Kokkos::LayoutRight, class Space = default_memory_space,
          class... Extents>
[[nodiscard]] KBUF_IMPL_ALWAYS_INLINE Impl::temporary_view_t<DataType, Layout, Space> temporary(
    const owner& o, const char* label, Extents... extents) {
  static_assert(Impl::is_memory_space_or_device<Space>,
                "kbuf::temporary<DataType, Layout, Space>: Space must be a Kokkos memory space "
                "(Kokkos::HostSpace, Kokkos::CudaSpace, ...) or a Kokkos::Device<ExecutionSpace, "
                "MemorySpace>");
  return Impl::temporary_of<DataType, Layout, Impl::memory_space_of_t<Space>>(&o, label,
                                                                              extents...);
}

/// As above, for a temporary of no owner: served only by a `kbuf::scope()` that names no owner
/// either (code that is both the caller and the library; a library names its owner).
template <class DataType, class Layout = Kokkos::LayoutRight, class Space = default_memory_space,
          class... Extents>
[[nodiscard]] KBUF_IMPL_ALWAYS_INLINE Impl::temporary_view_t<DataType, Layout, Space> temporary(
    const char* label, Extents... extents) {
  static_assert(Impl::is_memory_space_or_device<Space>,
                "kbuf::temporary<DataType, Layout, Space>: Space must be a Kokkos memory space "
                "(Kokkos::HostSpace, Kokkos::CudaSpace, ...) or a Kokkos::Device<ExecutionSpace, "
                "MemorySpace>");
  return Impl::temporary_of<DataType, Layout, Impl::memory_space_of_t<Space>>(nullptr, label,
                                                                              extents...);
}

/// As above, for a label given as a `std::string`.
template <class DataType, class Layout = Kokkos::LayoutRight, class Space = default_memory_space,
          class... Extents>
[[nodiscard]] KBUF_IMPL_ALWAYS_INLINE Impl::temporary_view_t<DataType, Layout, Space> temporary(
    const std::string& label, Extents... extents) {
  return temporary<DataType, Layout, Space>(label.c_str(), extents...);
}

/// A temporary of the View type `ViewType` (`decltype(member)`, `Kokkos::View<T*, device_type>`,
/// a caller's View type): its data type without const, its layout (LayoutRight or LayoutLeft)
/// and its memory space (from a `Kokkos::Device` too), as
/// `kbuf::temporary<DataType, Layout, Space>` takes them, returned as `ViewType` itself (as
/// `ViewType::non_const_type` when its data type is const), so that it assigns to a member of
/// that type:
/// @code
/// buffer = kbuf::temporary<decltype(buffer)>(my_owner, "buffer", n);
/// @endcode
/// `ViewType` must be a managed View type (the plain View made outside a scope owns its memory).
/// @throws as above.
template <class ViewType, class... Extents>
[[nodiscard]] KBUF_IMPL_ALWAYS_INLINE Impl::temporary_like_t<ViewType> temporary(
    const owner& o, const char* label, Extents... extents) {
  static_assert(!ViewType::memory_traits::is_unmanaged,
                "kbuf::temporary<ViewType>: ViewType must be a managed View type: outside a scope "
                "the temporary is a plain View that owns its memory");
  return Impl::temporary_of<typename ViewType::non_const_data_type, typename ViewType::array_layout,
                            typename ViewType::memory_space>(&o, label, extents...);
}

/// As above, for a label given as a `std::string`.
template <class ViewType, class... Extents>
[[nodiscard]] KBUF_IMPL_ALWAYS_INLINE Impl::temporary_like_t<ViewType> temporary(
    const owner& o, const std::string& label, Extents... extents) {
  return temporary<ViewType>(o, label.c_str(), extents...);
}

/// As above, for a temporary of no owner (served only by a `kbuf::scope()` of no owner).
template <class ViewType, class... Extents>
[[nodiscard]] KBUF_IMPL_ALWAYS_INLINE Impl::temporary_like_t<ViewType> temporary(
    const char* label, Extents... extents) {
  static_assert(!ViewType::memory_traits::is_unmanaged,
                "kbuf::temporary<ViewType>: ViewType must be a managed View type: outside a scope "
                "the temporary is a plain View that owns its memory");
  return Impl::temporary_of<typename ViewType::non_const_data_type, typename ViewType::array_layout,
                            typename ViewType::memory_space>(nullptr, label, extents...);
}

/// As above, for a label given as a `std::string`.
template <class ViewType, class... Extents>
[[nodiscard]] KBUF_IMPL_ALWAYS_INLINE Impl::temporary_like_t<ViewType> temporary(
    const std::string& label, Extents... extents) {
  return temporary<ViewType>(label.c_str(), extents...);
}

namespace Impl {

/// kbuf::temporary's plain View when no scope serves it, made on `exec` where that is a Kokkos
/// execution space.
template <class V, class ExecSpace, class... Extents>
V plain_temporary_on(const ExecSpace& exec, const char* label, Extents... extents) {
  if constexpr (Kokkos::is_execution_space<ExecSpace>::value) {
    return V(Kokkos::view_alloc(exec, std::string(label), Kokkos::WithoutInitializing),
             static_cast<std::size_t>(extents)...);
  } else {
    (void)exec;
    return V(Kokkos::view_alloc(std::string(label), Kokkos::WithoutInitializing),
             static_cast<std::size_t>(extents)...);
  }
}

/// kbuf::temporary(exec, ...): as temporary_slow, the allocator's temporary used on `exec`.
template <class DataType, class Layout, class MemorySpace, class ExecSpace, class... Extents>
KBUF_IMPL_COLD Kokkos::View<DataType, Layout, MemorySpace> temporary_on(const ExecSpace& exec,
                                                                        const owner* o,
                                                                        const char* label,
                                                                        Extents... extents) {
  using V = Kokkos::View<DataType, Layout, MemorySpace>;
  using U = typename BufferAllocator<MemorySpace>::template view<DataType, Layout>;
  static_assert(sizeof...(Extents) == static_cast<std::size_t>(V::rank_dynamic),
                "kbuf::temporary: pass exactly one extent per runtime dimension of DataType "
                "(one per '*')");
  static_assert((std::is_integral<Extents>::value && ...),
                "kbuf::temporary: extents must be integers");
  if (KBUF_IMPL_UNLIKELY(label == nullptr)) throw_temporary_null_label();
  if (KBUF_IMPL_UNLIKELY(o != nullptr && o->name() == nullptr))
    throw_temporary_unnamed_owner(label);
  (void)Impl::checked_byte_count<DataType, U>(
      [label](auto... e) { throw_temporary_bad_extents<DataType, U>(label, e...); }, extents...);
  if (CurrentScope<MemorySpace>* s = CurrentAccess::serving_scope<MemorySpace>(o)) {
    const U u =
        CurrentAccess::allocator(*s).template allocate<DataType, Layout>(exec, label, extents...);
#if KBUF_ENABLE_DEBUG
    if (u.size() != 0) {  // no label of its own: label() is empty, as in every build
      return CurrentAccess::hold(*s, label, plain_temporary_on<V>(exec, "", extents...));
    }
#endif
    return Impl::unmanaged_view<V>(u.data(), extents...);
  }
  return plain_temporary_on<V>(exec, label, extents...);
}

}  // namespace Impl

/// As `kbuf::temporary(o, label, extents...)`, for a temporary used on the execution space
/// instance `exec` (the caller's, in a library that runs on the instance it is given): served
/// by a scope, its memory is handed out again only in order after `exec`'s work submitted before
/// the scope's end (`BufferAllocator::allocate(exec, ...)`), so the scope ends without a fence;
/// a plain View is allocated on `exec`.
/// @code
/// void query(const ExecutionSpace& space, ...) {
///   auto scope = kbuf::scope<memory_space>(my_owner);
///   auto offsets = kbuf::temporary<int*, Kokkos::LayoutRight, memory_space>(space, my_owner,
///                                                                          "offsets", n + 1);
///   Kokkos::parallel_scan(Kokkos::RangePolicy<ExecutionSpace>(space, 0, n), ...);
/// }  // no fence: the next user of this memory waits for `space`'s work
/// @endcode
/// @throws as `kbuf::temporary(o, label, extents...)`.
template <class DataType, class Layout = Kokkos::LayoutRight, class Space = default_memory_space,
          class ExecSpace, class... Extents,
          std::enable_if_t<is_instance<ExecSpace>::value, int> = 0>
[[nodiscard]] Impl::temporary_view_t<DataType, Layout, Space> temporary(const ExecSpace& exec,
                                                                        const owner& o,
                                                                        const char* label,
                                                                        Extents... extents) {
  static_assert(Impl::is_memory_space_or_device<Space>,
                "kbuf::temporary<DataType, Layout, Space>: Space must be a Kokkos memory space "
                "(Kokkos::HostSpace, Kokkos::CudaSpace, ...) or a Kokkos::Device<ExecutionSpace, "
                "MemorySpace>");
  return Impl::temporary_on<DataType, Layout, Impl::memory_space_of_t<Space>>(exec, &o, label,
                                                                              extents...);
}

/// As above, for a label given as a `std::string`.
template <class DataType, class Layout = Kokkos::LayoutRight, class Space = default_memory_space,
          class ExecSpace, class... Extents,
          std::enable_if_t<is_instance<ExecSpace>::value, int> = 0>
[[nodiscard]] Impl::temporary_view_t<DataType, Layout, Space> temporary(const ExecSpace& exec,
                                                                        const owner& o,
                                                                        const std::string& label,
                                                                        Extents... extents) {
  return temporary<DataType, Layout, Space>(exec, o, label.c_str(), extents...);
}

/// As above, for a temporary of no owner (served only by a `kbuf::scope()` of no owner).
template <class DataType, class Layout = Kokkos::LayoutRight, class Space = default_memory_space,
          class ExecSpace, class... Extents,
          std::enable_if_t<is_instance<ExecSpace>::value, int> = 0>
[[nodiscard]] Impl::temporary_view_t<DataType, Layout, Space> temporary(const ExecSpace& exec,
                                                                        const char* label,
                                                                        Extents... extents) {
  static_assert(Impl::is_memory_space_or_device<Space>,
                "kbuf::temporary<DataType, Layout, Space>: Space must be a Kokkos memory space "
                "(Kokkos::HostSpace, Kokkos::CudaSpace, ...) or a Kokkos::Device<ExecutionSpace, "
                "MemorySpace>");
  return Impl::temporary_on<DataType, Layout, Impl::memory_space_of_t<Space>>(exec, nullptr, label,
                                                                              extents...);
}

/// A temporary of the View type `ViewType` used on `exec` (as `kbuf::temporary<ViewType>(o,
/// label, extents...)` and `kbuf::temporary(exec, o, label, extents...)` together).
template <class ViewType, class ExecSpace, class... Extents,
          std::enable_if_t<is_instance<ExecSpace>::value, int> = 0>
[[nodiscard]] Impl::temporary_like_t<ViewType> temporary(const ExecSpace& exec, const owner& o,
                                                         const char* label, Extents... extents) {
  static_assert(!ViewType::memory_traits::is_unmanaged,
                "kbuf::temporary<ViewType>: ViewType must be a managed View type: outside a scope "
                "the temporary is a plain View that owns its memory");
  return Impl::temporary_on<typename ViewType::non_const_data_type, typename ViewType::array_layout,
                            typename ViewType::memory_space>(exec, &o, label, extents...);
}

namespace Impl {

/// kbuf::shrink: the serving scope's allocator gives the tail back where `v` is one of its
/// temporaries; a plain View (or a debug build's counted one) becomes a View of its first `n`
/// elements in the same allocation.
template <class V>
void shrink_temporary(const owner* o, V& v, std::size_t n) {
  static_assert(Kokkos::is_view<V>::value && V::rank == 1,
                "kbuf::shrink(view, n): a View of rank 1 (a temporary sized by an upper bound)");
  using MemorySpace = typename V::memory_space;
  if (KBUF_IMPL_UNLIKELY(n > v.extent(0))) {
    throw_logic_error("kbuf::shrink(view, ", n, "): ", n, " elements are more than the view's ",
                      v.extent(0), "; a temporary only shrinks");
  }
  if (v.use_count() == 0 && v.data() != nullptr) {  // unmanaged: a temporary kbuf served
    if (CurrentScope<MemorySpace>* s = CurrentAccess::serving_scope<MemorySpace>(o)) {
      typename BufferAllocator<MemorySpace>::template view<typename V::non_const_data_type,
                                                           typename V::array_layout>
          u(v.data(), v.extent(0));
      CurrentAccess::allocator(*s).shrink(u, n);
      v = unmanaged_view<V>(v.data(), n);
      return;
    }
  }
  v = V(v, std::make_pair(std::size_t{0}, n));
}

}  // namespace Impl

/// Gives back the tail of the newest temporary of `o`'s serving scope: `v` (rank 1, from
/// `kbuf::temporary`) becomes a View of its first `n` elements, which keep their values, and
/// the bytes after them are free for the next temporary (`BufferAllocator::shrink`). For a
/// temporary sized by an upper bound before a scan told its size, in place of a subview of the
/// bound or `Kokkos::resize` (which makes a plain allocation and copies):
/// @code
/// auto offsets = kbuf::temporary<int*, Kokkos::LayoutRight, memory_space>(my_owner, "offsets", n +
/// 1); int count = 0;  // ... a scan over offsets that counts ... kbuf::shrink(my_owner, offsets,
/// count);
/// @endcode
/// A plain View (no scope served it) becomes a View of its first `n` elements in the same
/// allocation.
/// @throws kbuf::logic_error (naming the call and the values) if `n` exceeds the extent or `v`
/// is a temporary of the scope's allocator but not its newest; nothing changes then.
template <class V>
void shrink(const owner& o, V& v, std::size_t n) {
  Impl::shrink_temporary(&o, v, n);
}

/// As above, for a temporary of no owner.
template <class V>
void shrink(V& v, std::size_t n) {
  Impl::shrink_temporary(nullptr, v, n);
}

/// The process's allocator for `MemorySpace`, for code that has no `main` to own one: the
/// calling host thread's allocator (`local()`) of one `AllocatorPool` per process and memory
/// space, labelled "kbuf::process_allocator". The pool is made by the first call after
/// `Kokkos::initialize` and destroyed, with its allocators and their buffers, by
/// `Kokkos::finalize` (through `Kokkos::push_finalize_hook`). Any host thread may call it; each
/// gets its own allocator, as from `AllocatorPool::local()` (lock-free after a thread's first
/// call). One per process, also across shared libraries built with hidden visibility. Make it
/// current with `kbuf::use current(kbuf::process_allocator());`, or every space's with
/// `kbuf::use_process_allocators guard;`.
///
/// The reference is valid until `Kokkos::finalize`. By then every thread must be done with it:
/// no live temporary, scope or guard (with `KBUF_ENABLE_DEBUG`, `Kokkos::finalize` aborts naming
/// the allocator otherwise), and no call of it during `Kokkos::finalize` (a finalize hook must
/// not call it).
/// @throws kbuf::logic_error before `Kokkos::initialize` or after `Kokkos::finalize`, naming the
/// call.
/// @throws kbuf::out_of_memory if a thread's first call cannot make its allocator.
template <class MemorySpace>
[[nodiscard]] BufferAllocator<MemorySpace>& process_allocator() {
  AllocatorPool<MemorySpace>* pool = static_cast<AllocatorPool<MemorySpace>*>(
      Impl::process_state<MemorySpace>().pool.load(std::memory_order_acquire));
  if (KBUF_IMPL_UNLIKELY(pool == nullptr)) pool = &Impl::make_process_pool<MemorySpace>();
  return pool->local();
}

}  // namespace kbuf

// libkbuf holds the cold paths of the current allocator and the process allocators for HostSpace
// and the backend's device space (src/current.cpp); a translation unit instantiates the hot path.
#if KBUF_ENABLE_DEBUG == KBUF_IMPL_LIBRARY_DEBUG
#define KBUF_IMPL_CURRENT_EXTERN(SPACE)                                  \
  extern template class AllocatorPool<SPACE>;                            \
  extern template BufferAllocator<SPACE>& process_allocator<SPACE>();    \
  namespace Impl {                                                       \
  extern template BufferAllocator<SPACE>* find_process_allocator<SPACE>( \
      ThreadSpaceState&) noexcept;                                       \
  extern template void note_no_current<SPACE>(const owner*) noexcept;    \
  }
namespace kbuf {
KBUF_IMPL_CURRENT_EXTERN(Kokkos::HostSpace)
#if !defined(KBUF_BACKEND_SERIAL)
KBUF_IMPL_CURRENT_EXTERN(default_memory_space)
#endif
}  // namespace kbuf
#undef KBUF_IMPL_CURRENT_EXTERN
#endif

#endif  // KBUF_CURRENT_HPP
