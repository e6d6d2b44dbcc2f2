#ifndef KBUF_IMPL_PROCESS_REGISTRY_HPP
#define KBUF_IMPL_PROCESS_REGISTRY_HPP

/// @file
/// The state that must be one per process (and one per thread of it) whatever shared objects
/// compile kbuf's headers: each thread's current allocators, guards and scopes per memory space,
/// and the process allocators' pools. A library built with -fvisibility=hidden gets its own copy
/// of every function-local static of a header it compiles; a `kbuf::use` made in the executable
/// would then be invisible inside it. So this state lives in a few non-template functions with
/// default visibility (KBUF_IMPL_EXPORT), which every shared object binds to the same definition,
/// and memory spaces are told apart by their type's mangled name, which is the same string in
/// every shared object. Templates reach it through per-shared-object caches. Not part of the API.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <typeinfo>

#include <kbuf/impl/macros.hpp>

namespace kbuf {

class use_process_allocators;

namespace Impl {

/// The name of `MemorySpace` in the registries: its mangled type name, the same string in every
/// shared object (the pointer may differ: compare with strcmp).
template <class MemorySpace>
const char* space_key() noexcept {
  return typeid(MemorySpace).name();
}

struct ThreadStates;

/// One thread's drop-in state for one memory space. Its fields are written only by the thread.
struct ThreadSpaceState {
  const char* key = nullptr;        // space_key() of its memory space; null while unused
  const char* name = nullptr;       // MemorySpace::name(), for messages
  ThreadStates* thread = nullptr;   // the thread's states, this among them
  void* innermost_use = nullptr;    // the thread's newest live kbuf::use<Space>, or null
  void* innermost_scope = nullptr;  // the thread's newest live kbuf::CurrentScope<Space>, or null
  std::uint64_t use_serial = 0;     // innermost_use's serial, 0 for none
  // The serial of the guard that makes the current allocator current: the newer of the newest
  // kbuf::use<Space> and the newest kbuf::use_process_allocators; 0 when none is current. A
  // scope remembers it: its temporaries come from its allocator only while it is unchanged.
  std::uint64_t current_serial = 0;
  // What kbuf::temporary reads first: the owner and the allocator of the innermost scope while
  // it serves (it has an allocator, still the current one), else this slot's own address as the
  // owner (no owner's address) and null. Kept by serve() whenever the innermost scope or the
  // current allocator changes.
  const void* serving_owner = nullptr;
  void* serving_alloc = nullptr;
  // The innermost scope's allocator, owner and current_serial when it was made (copied, so that
  // serve() needs no type).
  void* scope_alloc = nullptr;
  const void* scope_owner = nullptr;
  std::uint64_t scope_serial = 0;
  // The thread's process allocator of the space, found on first use while a
  // use_process_allocators guard lives; null otherwise.
  void* process_allocator = nullptr;
  // Forgets the process allocator when the last use_process_allocators guard ends.
  void (*forget_process_allocator)(ThreadSpaceState&) noexcept = nullptr;

  /// Decides serving_owner and serving_alloc again.
  void serve() noexcept {
    if (scope_alloc != nullptr && scope_serial == current_serial) {
      serving_owner = scope_owner;
      serving_alloc = scope_alloc;
    } else {
      serving_owner = this;
      serving_alloc = nullptr;
    }
  }
};

/// One thread's drop-in state: a slot per memory space it used, and its
/// use_process_allocators guards. Trivially destructible and constant-initialised, so its
/// `thread_local` costs no guard and no exit hook.
struct ThreadStates {
  static constexpr std::size_t max_spaces = 32;
  ThreadSpaceState spaces[max_spaces] = {};
  std::size_t count = 0;
  use_process_allocators* innermost_all = nullptr;  // the newest live guard, or null
  std::uint64_t all_serial = 0;                     // its serial, 0 for none
  std::uint64_t next_serial = 0;                    // the last serial given to a guard

  /// The serial of a guard made now.
  std::uint64_t new_serial() noexcept { return ++next_serial; }

  /// Decides every space's current_serial again after a guard came or went.
  void update_current() noexcept {
    for (std::size_t i = 0; i < count; ++i) {
      spaces[i].current_serial = current_of(spaces[i]);
      spaces[i].serve();
    }
  }

  /// The serial that decides `s`'s current allocator.
  std::uint64_t current_of(const ThreadSpaceState& s) const noexcept {
    return s.use_serial > all_serial ? s.use_serial : all_serial;
  }
};

/// The calling thread's drop-in state: one per thread of the process.
KBUF_IMPL_EXPORT ThreadStates& thread_states() noexcept;

/// A thread or the process used more memory spaces than the registries hold: no Kokkos build
/// has that many.
[[noreturn]] KBUF_IMPL_EXPORT void too_many_spaces(const char* key) noexcept;

/// The calling thread's slot for the memory space named `key`, made on first use.
KBUF_IMPL_EXPORT ThreadSpaceState& thread_space_state(const char* key, const char* name) noexcept;

/// The calling thread's slot for `MemorySpace`. The cache is per shared object where kbuf's
/// headers are compiled with hidden visibility; the slot is the thread's one.
template <class MemorySpace>
KBUF_IMPL_ALWAYS_INLINE ThreadSpaceState& current_state() noexcept {
  thread_local ThreadSpaceState* state = nullptr;
  if (KBUF_IMPL_UNLIKELY(state == nullptr)) {
    state = &thread_space_state(space_key<MemorySpace>(), MemorySpace::name());
  }
  return *state;
}

/// The process's state for one memory space: its process allocator's pool.
struct ProcessSpaceState {
  const char* key = nullptr;
  std::atomic<void*> pool{nullptr};  // the AllocatorPool<Space>, or null
  bool ended = false;                // a Kokkos::finalize ended one (under the registry's mutex)
  std::atomic<bool> said_no_current{false};  // the debug note of kbuf::scope, said once
};

/// The process's states, one per memory space used, under one mutex.
struct ProcessStates {
  std::mutex mutex;
  ProcessSpaceState spaces[ThreadStates::max_spaces];
  std::size_t count = 0;
};

/// The process's state: one per process.
KBUF_IMPL_EXPORT ProcessStates& process_states() noexcept;

/// The process's state for the memory space named `key`, made on first use.
KBUF_IMPL_EXPORT ProcessSpaceState& process_space_state(const char* key) noexcept;

/// The process's state for `MemorySpace`.
template <class MemorySpace>
ProcessSpaceState& process_state() noexcept {
  static ProcessSpaceState& state = process_space_state(space_key<MemorySpace>());
  return state;
}

}  // namespace Impl
}  // namespace kbuf

#endif  // KBUF_IMPL_PROCESS_REGISTRY_HPP
