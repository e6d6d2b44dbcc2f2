#ifndef KBUF_BUFFER_ALLOCATOR_HPP
#define KBUF_BUFFER_ALLOCATOR_HPP

/// @file
/// `kbuf::BufferAllocator`: short-lived temporaries as unmanaged Kokkos Views carved out of one
/// preallocated, growable buffer, released in LIFO order through checkpoints and scopes.

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <new>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <Kokkos_Core.hpp>

#include <kbuf/config.hpp>
#include <kbuf/debug.hpp>
#include <kbuf/errors.hpp>
#include <kbuf/impl/allocator_records.hpp>
#include <kbuf/impl/budget.hpp>
#include <kbuf/impl/buffer_policy.hpp>
#include <kbuf/impl/errors.hpp>
#include <kbuf/impl/extents.hpp>
#include <kbuf/impl/instance_records.hpp>
#include <kbuf/impl/macros.hpp>
#include <kbuf/impl/view_traits.hpp>
#include <kbuf/impl/virtual_memory_fwd.hpp>
#include <kbuf/sizes.hpp>
#include <kbuf/statistics.hpp>

namespace kbuf {

template <class MemorySpace>
class AllocatorPool;
template <class MemorySpace>
class Workspace;
struct per_team;
struct per_thread;

namespace Impl {
struct CurrentAccess;
// The features build on the allocator; it holds their state by pointer and calls them from its
// compiled members (src/, kbuf/impl/allocator_definitions.hpp), so this header needs none of
// their definitions.
template <class MemorySpace>
class SizesLink;  // saved sizes (kbuf/impl/sizes_file_impl.hpp)
template <class MemorySpace>
struct SizesHooks;
class TemporaryReporter;  // Kokkos Tools reports (kbuf/impl/tools.hpp)
struct WorkspaceRecords;  // what workspaces learned, per label (kbuf/workspace.hpp)
struct WorkspaceNeeds;

/// True for the memory spaces libkbuf holds the allocator's compiled members for: HostSpace and
/// the configured backend's device space. Any other space (a user's own) includes
/// <kbuf/any_space.hpp>, which makes the definitions reachable.
template <class MemorySpace>
struct compiled_space
    : std::integral_constant<bool, std::is_same<MemorySpace, Kokkos::HostSpace>::value ||
                                       std::is_same<MemorySpace, default_memory_space>::value> {};

/// Made true for every space by <kbuf/any_space.hpp>.
template <class MemorySpace, class = void>
struct definitions_reachable : std::false_type {};
}  // namespace Impl

template <class MemorySpace>
class use;

/// A buffer allocator for temporaries in the memory space `MemorySpace`.
///
/// Every temporary is an unmanaged `Kokkos::View` over the allocator's buffer at an offset whose
/// absolute address is aligned to `max(alignment(), alignof(value_type))`. Its contents are
/// uninitialised. It stays valid until the allocator is reset to a checkpoint taken before it
/// (or to empty), resized, or destroyed; after that it dangles. A temporary that does not fit
/// is served by a fallback allocation (a managed View in the same space, held until the reset
/// that releases it) and looks the same to the caller. The high-water mark remembers the peak
/// need, fallbacks included, and the next `allocate` on an empty allocator regrows the buffer
/// to it, so the second run of a workload needs no fallback. With growth in place
/// (`grows_in_place()`: `KBUF_GROW_IN_PLACE=1`, on the host and CUDA or HIP device memory) the
/// buffer is one reservation of addresses instead, and a temporary that does not fit commits
/// memory at its end: nothing moves, and even the first run needs no fallback.
///
/// Device order: reuse after `reset` is safe for work submitted to the allocator's execution
/// space instance (stream order). Before it frees or regrows memory the allocator fences that
/// instance only. A temporary used on another instance names it (`allocate(exec, ...)`): its
/// memory is handed on only after that instance's work submitted before the release, with no
/// host block on CUDA and HIP. Work on another instance with a temporary taken without one is
/// the caller's to order: fence it, or use `reset(checkpoint, other_instance)`. The hot path
/// (`allocate` and `reset` of temporaries that fit, scopes) neither fences nor allocates. Releasing
/// memory (a fallback at its reset, the buffer at regrowth, `resize` or destruction) costs what
/// Kokkos' free costs: `cudaFree` and `hipFree` synchronise the device, and Kokkos 4's HostSpace
/// fences all host instances before every free. That is the price the high-water mark makes rare,
/// not one kbuf adds.
///
/// Not thread-safe (like `std::pmr::unsynchronized_pool_resource`): use one allocator per host
/// thread or per execution space instance. Not copyable and not movable: temporaries and
/// checkpoints refer to it.
template <class MemorySpace = default_memory_space>
class BufferAllocator final : private Impl::BufferPolicy {
  static_assert(Kokkos::is_memory_space<MemorySpace>::value,
                "kbuf::BufferAllocator<MemorySpace>: MemorySpace must be a Kokkos memory space "
                "such as Kokkos::HostSpace or Kokkos::CudaSpace");

  using raw_view = Kokkos::View<unsigned char*, MemorySpace>;

 public:
  /// The Kokkos memory space of the buffer, the fallbacks and every temporary.
  using memory_space = MemorySpace;
  /// The execution space whose instance the allocator is bound to and fences.
  using execution_space = typename MemorySpace::execution_space;
  /// The type of every temporary: an unmanaged View in `MemorySpace`.
  template <class DataType, class Layout = Kokkos::LayoutRight>
  using view = Kokkos::View<DataType, Layout, MemorySpace, Kokkos::MemoryUnmanaged>;

  /// Alignment of every temporary's address unless the constructor names another: 64 bytes in
  /// `Kokkos::HostSpace` (a cache line), 256 in every other space (GPU memory transactions).
  static constexpr std::size_t default_alignment =
      std::is_same<MemorySpace, Kokkos::HostSpace>::value ? 64 : 256;

  /// A point in the allocator's LIFO history: its offset and its live fallbacks. Cheap to copy.
  /// It stays valid until a reset goes back past it.
  class Checkpoint {
   public:
    Checkpoint() = default;  ///< belongs to no allocator; resetting to it throws
    /// Bytes in use at this point.
    [[nodiscard]] std::size_t used() const noexcept { return used_; }
    /// Live temporaries (zero-sized ones aside) at this point.
    [[nodiscard]] std::size_t depth() const noexcept { return depth_; }

   private:
    friend class BufferAllocator;
    Checkpoint(const BufferAllocator* owner, std::uint64_t id, std::size_t depth,
               std::size_t used) noexcept
        : owner_(owner), id_(id), depth_(depth), used_(used) {}
    // Four words: what else a reset restores (the need, the fallbacks) is recorded with the
    // temporaries that changed it (Record, Fallback).
    const BufferAllocator* owner_ = nullptr;
    std::uint64_t id_ = 0;  // number of the newest live temporary (1, 2, ...), 0 for none
    std::size_t depth_ = 0;
    std::size_t used_ = 0;
  };

  /// RAII: takes a checkpoint when made and resets to it when destroyed, also when an exception
  /// unwinds through it. Movable, not copyable; a moved-from scope does nothing. Scopes must end
  /// in LIFO order; a scope whose checkpoint an explicit reset already released does nothing.
  class Scope {
   public:
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
    Scope& operator=(Scope&&) = delete;
    /// Takes over `other`'s checkpoint; `other` then does nothing when destroyed.
    Scope(Scope&& other) noexcept
        : checkpoint_(other.checkpoint_), index_(std::exchange(other.index_, moved_from)) {}
    ~Scope() {
      if (index_ != moved_from) {
        // The scope was made from a non-const allocator: scope() is not const.
        const_cast<BufferAllocator*>(checkpoint_.owner_)->end_scope(checkpoint_, index_);
      }
    }
    /// The checkpoint this scope resets to.
    [[nodiscard]] Checkpoint checkpoint() const noexcept { return checkpoint_; }

   private:
    friend class BufferAllocator;
    static constexpr std::size_t moved_from = std::numeric_limits<std::size_t>::max();
    explicit Scope(BufferAllocator& alloc) noexcept
        : checkpoint_(alloc.checkpoint()), index_(alloc.open_scope()) {}
    Checkpoint checkpoint_;  // its owner is the scope's allocator
    // The allocator's live scopes before this one (LIFO check, debug only: 0 otherwise), or
    // moved_from.
    std::size_t index_;
  };

  /// An allocator bound to the default instance of `execution_space` whose buffer holds
  /// `buffer_size(sizehint)` bytes (none for 0: it grows on first use). Every allocator must be
  /// made after `Kokkos::initialize` and destroyed before `Kokkos::finalize`: it holds an
  /// execution space instance, and Kokkos 5.1 refuses instances outside that window. A global
  /// or function-`static` allocator therefore does not work; make it inside `main`, under a
  /// `Kokkos::ScopeGuard`.
  /// @throws kbuf::logic_error if Kokkos is not initialized (before initialize, after finalize).
  /// @throws kbuf::out_of_memory if the buffer cannot be allocated.
  explicit BufferAllocator(std::size_t sizehint = 0)
      : BufferAllocator(default_instance("kbuf::BufferAllocator(sizehint)"), sizehint,
                        default_alignment) {}

  /// As above, with every temporary aligned to `alignment` bytes (a power of two).
  /// @throws kbuf::logic_error if `alignment` is not a power of two, or if Kokkos is not
  /// initialized.
  /// @throws kbuf::out_of_memory if the buffer cannot be allocated.
  BufferAllocator(std::size_t sizehint, std::size_t alignment)
      : BufferAllocator(default_instance("kbuf::BufferAllocator(sizehint, alignment)"), sizehint,
                        alignment) {}

  /// An allocator bound to the execution space instance `exec`: its buffer and fallbacks are
  /// allocated on it without initialisation, and it fences `exec` (only) before it frees or
  /// regrows memory. `label` names its allocations for Kokkos Tools.
  /// Like every allocator, it must be made after `Kokkos::initialize` (and so must `exec`).
  /// @throws kbuf::logic_error if `alignment` is not a power of two, or if Kokkos is not
  /// initialized.
  /// @throws kbuf::out_of_memory if the buffer cannot be allocated.
  explicit BufferAllocator(const execution_space& exec, std::size_t sizehint = 0,
                           std::size_t alignment = default_alignment, std::string label = "kbuf");

  BufferAllocator(const BufferAllocator&) = delete;
  BufferAllocator(BufferAllocator&&) = delete;
  BufferAllocator& operator=(const BufferAllocator&) = delete;
  BufferAllocator& operator=(BufferAllocator&&) = delete;

  /// Fences the bound instance, then frees the buffer and all fallbacks. Must run before
  /// `Kokkos::finalize`. Never throws. With `KBUF_ENABLE_DEBUG`, aborts if scopes are live or a
  /// `kbuf::use` guard still makes it a thread's current allocator.
  ~BufferAllocator();

  /// One temporary of `DataType` (e.g. `double**`, `float*[3]`, `Kokkos::complex<double>***`)
  /// in `Layout` (LayoutRight or LayoutLeft), one extent per runtime dimension. The memory is
  /// uninitialised; the view is valid until a reset releases it.
  /// @throws kbuf::logic_error for a negative extent or a byte count that overflows `size_t`.
  /// @throws kbuf::out_of_memory if a regrowth or a fallback allocation fails.
  template <class DataType, class Layout = Kokkos::LayoutRight, class... Extents>
  view<DataType, Layout> allocate(Extents... extents) {
    using V = view<DataType, Layout>;
    using T = typename V::value_type;
    check_types<DataType, Layout, Extents...>();

    // Extents below a bound that makes every check moot take one test (fast_byte_count); the
    // others go to the cold path: negative extents, extents V cannot hold, a size that
    // overflows (kbuf::logic_error), and whatever the exact check lets through.
    std::size_t nbytes = 0;  // set by fast_byte_count when it returns true
    void* p;
    const bool fast = Impl::fast_byte_count<DataType, V>(nbytes, extents...);
    if (KBUF_IMPL_UNLIKELY(!fast)) {
      p = allocate_checked<DataType, V>(extents...);
    } else if (KBUF_IMPL_UNLIKELY(nbytes == 0)) {
      ++stats_.empty;  // a zero-sized temporary: an empty view, nothing moves
      p = nullptr;
    } else {
      p = acquire<alignof(T)>(nbytes);
    }
    return Impl::unmanaged_view<V>(p, extents...);  // the extents were checked above
  }

  /// As `allocate(extents...)`, naming the temporary `label` in its Kokkos Tools records (see
  /// `reports_to_tools()`: the record's name is the label, where an unnamed temporary's is
  /// "temporary"). Without records the label costs nothing; it must live until the call returns.
  /// @throws as `allocate(extents...)`.
  template <class DataType, class Layout = Kokkos::LayoutRight, class... Extents>
  view<DataType, Layout> allocate(const char* label, Extents... extents) {
    if (KBUF_IMPL_UNLIKELY(reporter_ != nullptr)) {
      return allocate_reported<DataType, Layout>(label, extents...);
    }
    return allocate<DataType, Layout>(extents...);
  }

  /// As above, for a label given as a `std::string`.
  template <class DataType, class Layout = Kokkos::LayoutRight, class... Extents>
  view<DataType, Layout> allocate(const std::string& label, Extents... extents) {
    return allocate<DataType, Layout>(label.c_str(), extents...);
  }

  /// As `allocate(extents...)`, for a temporary used on the execution space instance `exec`
  /// rather than the allocator's own. Its memory is handed out only in order after the work that
  /// used it before: `exec` waits for the work of the instances that used it last, submitted
  /// before their temporaries were released (on CUDA and HIP an event recorded on their stream
  /// and waited on by `exec`'s stream, no host block; see kbuf/instance_order.hpp), and when it
  /// is released, its memory goes to another instance's temporary only after `exec`'s work
  /// submitted before the release. So a library that runs on its caller's instance releases its
  /// temporaries at a scope's end without a fence. `exec` must be able to access the memory
  /// space. While such temporaries are live or their released memory is not yet handed on, the
  /// allocator takes its cold path (a few hundred instructions a temporary). With
  /// `KBUF_ENABLE_DEBUG` the released memory is filled in `exec`'s order and checked when it is
  /// handed to another instance: a write after the release (late work, or a temporary used on an
  /// instance it was not given) aborts, naming the label and both instances (docs/gpu.md says
  /// what this can and cannot see).
  /// @throws as `allocate(extents...)`.
  template <class DataType, class Layout = Kokkos::LayoutRight, class ExecSpace, class... Extents,
            std::enable_if_t<is_instance<ExecSpace>::value, int> = 0>
  view<DataType, Layout> allocate(const ExecSpace& exec, Extents... extents) {
    return allocate_on<DataType, Layout>(exec, nullptr, extents...);
  }

  /// As above, naming the temporary `label` (as `allocate(label, extents...)`).
  template <class DataType, class Layout = Kokkos::LayoutRight, class ExecSpace, class... Extents,
            std::enable_if_t<is_instance<ExecSpace>::value, int> = 0>
  view<DataType, Layout> allocate(const ExecSpace& exec, const char* label, Extents... extents) {
    return allocate_on<DataType, Layout>(exec, label, extents...);
  }

  /// As above, for a label given as a `std::string`.
  template <class DataType, class Layout = Kokkos::LayoutRight, class ExecSpace, class... Extents,
            std::enable_if_t<is_instance<ExecSpace>::value, int> = 0>
  view<DataType, Layout> allocate(const ExecSpace& exec, const std::string& label,
                                  Extents... extents) {
    return allocate_on<DataType, Layout>(exec, label.c_str(), extents...);
  }

  /// The current point of the LIFO history. Taking one records it (in memory reserved
  /// beforehand: it never allocates), so that `reset` can tell whether it is still valid.
  [[nodiscard]] Checkpoint checkpoint() const noexcept {
    if (depth_ == 0) return Checkpoint(this, 0, 0, 0);  // empty: used() is 0
    return Checkpoint(this, mark(), depth_, used());
  }

  /// Releases every temporary allocated after `cp` (fallbacks are freed after a fence of the
  /// bound instance). Never resizes the buffer.
  /// @throws kbuf::logic_error if `cp` belongs to another allocator or was already released by
  /// a reset to an earlier point; nothing changes then.
  void reset(Checkpoint cp) {
    check_checkpoint(cp, "kbuf::BufferAllocator::reset");
    release_to(cp);
  }

  /// As `reset(cp)`, after fencing `other`: for temporaries that were used on another execution
  /// space instance, whose work must end before their memory is handed out again. The bound
  /// instance is fenced too only when fallbacks are freed. Writing on the bound instance and
  /// reading on `other` also needs the opposite order, which is the caller's:
  /// @code
  /// const auto cp = alloc.checkpoint();
  /// auto tmp = alloc.allocate<double*>(n);
  /// const auto& own = alloc.execution_space_instance();
  /// Kokkos::parallel_for(Kokkos::RangePolicy<Exec>(own, 0, n), Fill{tmp});
  /// own.fence();  // `other` must not read `tmp` before `own` has written it
  /// Kokkos::parallel_for(Kokkos::RangePolicy<Exec>(other, 0, n), Use{tmp, out});
  /// alloc.reset(cp, other);  // not reset(cp) or a Scope: `other` may still read `tmp`
  /// @endcode
  /// (examples/other_instance.cpp, which the build compiles and runs.)
  /// @throws kbuf::logic_error as `reset(cp)`, before anything is fenced.
  template <class ExecSpace>
  void reset(Checkpoint cp, const ExecSpace& other) {
    static_assert(Kokkos::is_execution_space<ExecSpace>::value,
                  "kbuf::BufferAllocator::reset(checkpoint, other): other must be a Kokkos "
                  "execution space instance");
    check_checkpoint(cp, "kbuf::BufferAllocator::reset");
#if KOKKOS_VERSION >= 30500
    other.fence("kbuf::BufferAllocator::reset: fence of the other instance [" + label_ + "]");
#else
    other.fence();
#endif
    release_to(cp);
  }

  /// Gives back the tail of the allocator's newest temporary: `v` becomes a View of its first
  /// `n` elements (the same data; those elements keep their values) and the bytes after them
  /// are free for the next temporary. For a temporary sized by an upper bound before a scan
  /// told its size (`n + 1`, a scan, then the count). `v` must be the newest temporary in the
  /// buffer (no temporary carved after it is live) and of rank 1; a fallback gives nothing back,
  /// and its view shrinks all the same. A temporary of another instance (`allocate(exec, ...)`)
  /// gives its tail back in that instance's order, as a release does.
  /// @throws kbuf::logic_error (naming the call and the values) if `n` exceeds `v`'s extent,
  /// `v` is not the newest temporary, or a checkpoint or a scope was taken after it; nothing
  /// changes then.
  template <class DataType, class Layout>
  void shrink(view<DataType, Layout>& v, std::size_t n) {
    using V = view<DataType, Layout>;
    static_assert(V::rank == 1, "kbuf::BufferAllocator::shrink: a temporary of rank 1");
    using T = typename V::value_type;
    const std::size_t extent = v.extent(0);
    give_back_tail(v.data(), extent * sizeof(T), n, extent, sizeof(T),
                   "kbuf::BufferAllocator::shrink");
    v = V(v.data(), n);
  }

  /// Releases every temporary. The buffer keeps its size; a pending regrowth happens at the
  /// next `allocate`.
  void reset() {
    release_to(Checkpoint(this, 0, 0, 0));
  }

  /// A scope that resets to the current checkpoint when it is destroyed:
  /// `{ auto s = alloc.scope(); auto t = alloc.allocate<double*>(n); ... }`.
  [[nodiscard]] Scope scope() noexcept {
    return Scope(*this);
  }

  /// Bytes in the buffer.
  [[nodiscard]] std::size_t capacity() const noexcept {
    return capacity_;
  }
  /// Bytes of the buffer in use, alignment padding included.
  [[nodiscard]] std::size_t used() const noexcept {
    return BufferPolicy::used();
  }
  /// The peak need: the most bytes the live temporaries (fallbacks included, each with its
  /// worst-case alignment padding) would have taken in the buffer. The next growth target.
  [[nodiscard]] std::size_t high_water_mark() const noexcept {
    return BufferPolicy::high_water_mark();
  }
  /// True when no temporary is live (fallbacks included).
  [[nodiscard]] bool empty() const noexcept {
    return depth_ == 0;
  }
  /// The minimum alignment of every temporary's address, in bytes.
  [[nodiscard]] std::size_t alignment() const noexcept {
    return alignment_;
  }
  /// The execution space instance the allocator is bound to.
  [[nodiscard]] const execution_space& execution_space_instance() const noexcept {
    return exec_;
  }
  /// The label of the allocator's Kokkos allocations.
  [[nodiscard]] const std::string& label() const noexcept {
    return label_;
  }
  /// Number of live fallback allocations.
  [[nodiscard]] std::size_t live_fallbacks() const noexcept {
    return fallbacks_.size() - replaced_buffers_;
  }

  /// True when the buffer grows in place: it is one reservation of addresses
  /// (`statistics().reserved_bytes`) in which memory is committed at its end as temporaries
  /// need it, so that the buffer never moves and a temporary that does not fit is served by
  /// committing more, not by a fallback. Decided when the allocator was made: the environment
  /// variable `KBUF_GROW_IN_PLACE=1` (or `0`), else the CMake option of the same name; and its
  /// memory space must have a virtual memory API (the host, CUDA and HIP device memory; not a
  /// foreign space, managed or pinned memory) and the reservation must be made. Off in
  /// pass-through mode. `growth()` says which, and why.
  [[nodiscard]] bool grows_in_place() const noexcept {
    return in_place_;
  }
  /// How the buffer grows, in words: "in place (...)" or "by regrowth (...)", with the reason
  /// growth in place is off.
  [[nodiscard]] const std::string& growth() const noexcept {
    return growth_;
  }

  /// Gives back memory that no live temporary uses, and returns its bytes. With growth in
  /// place: every chunk committed wholly above `used()`, whatever is live (the bound instance
  /// is fenced first); the buffer keeps its address. Otherwise: the whole buffer, when the
  /// allocator is empty (after a fence), and nothing while temporaries are live. Either way the
  /// high-water mark comes down to what is held, so the memory returns only when temporaries
  /// need it again.
  std::size_t trim();

  /// True when the memory of `v` (any view, subviews included) lies inside memory this
  /// allocator holds for live temporaries: the used part of the buffer or a live fallback.
  /// False for a temporary that a reset released, or for memory the allocator does not hold;
  /// true for a view that holds no memory (it cannot dangle). The range is the bytes from
  /// `v.data()` to its last reachable element, from its extents and strides (the same on every
  /// Kokkos version; a strided subview covers less than its span). Decided by address range, in
  /// O(1 + live fallbacks) and with no bookkeeping at allocation time, so it costs nothing
  /// unless called. Its limit: once released memory is handed out again, a stale view over it
  /// reads as live (the memory is); debug fills and ASan poisoning cover the time before that.
  template <class View>
  [[nodiscard]] bool is_live(const View& v) const noexcept {
    static_assert(Kokkos::is_view<View>::value,
                  "kbuf::BufferAllocator::is_live: the argument must be a Kokkos::View");
    // Not v.span(): it means different things on the legacy and the mdspan View.
    const std::size_t nbytes = Impl::view_bytes_touched(v);
    if (nbytes == 0 || v.data() == nullptr) return true;
    const auto inside = [&](const void* begin, std::size_t size) {
      const std::uintptr_t b = reinterpret_cast<std::uintptr_t>(begin);
      const std::uintptr_t p = reinterpret_cast<std::uintptr_t>(v.data());
      return begin != nullptr && p >= b && p - b <= size && nbytes <= size - (p - b);
    };
    if (inside(base_, used())) return true;
    for (const Fallback& f : fallbacks_) {
      if (inside(f.memory.data(), f.memory.size())) return true;
    }
    return false;
  }

  /// Replaces the buffer by one of `buffer_size(nbytes)` bytes (the old one is released first,
  /// after a fence of the bound instance) and lowers the high-water mark to the new capacity
  /// if it was above it.
  /// @throws kbuf::logic_error unless `empty()`.
  /// @throws kbuf::out_of_memory if the new buffer would pass `limit()` (or its pool's
  /// combined limit; nothing changes then) or cannot be allocated (the allocator then keeps a
  /// buffer of its old capacity where memory allows).
  void resize(std::size_t nbytes);

  /// Raises the high-water mark to `nbytes`, so the next regrowth makes room for it. With
  /// `shrink`, sets it to `nbytes` (but not below what is live now), and the next regrowth may
  /// shrink the buffer to `buffer_size(nbytes)`.
  void sizehint(std::size_t nbytes, bool shrink = false) noexcept {
    const std::size_t need = used() + extra_;
    if (shrink) {
      hwm_ = nbytes > need ? nbytes : need;
      shrink_ = true;
    } else if (nbytes > hwm_) {
      hwm_ = nbytes;
    }
    update_fast_end();  // a regrowth may be pending now
  }

  /// The buffer: a managed View of `capacity()` bytes, starting at an address aligned to
  /// `alignment()`. Empty until the first growth. Each buffer is one allocation of `capacity()`
  /// plus `alignment() - 1` bytes of slack, on every space. With growth in place, an unmanaged
  /// View of the committed part of the reservation (its data pointer stays the same).
  [[nodiscard]] const Kokkos::View<unsigned char*, MemorySpace>& buffer() const noexcept {
    return buffer_;
  }

  /// The allocator's counters.
  [[nodiscard]] Statistics statistics() const noexcept {
    return current_statistics();
  }

  /// Sets the most bytes the allocator may hold: its buffer (`capacity()`) and its live
  /// fallbacks (the bytes their temporaries take) together. A fallback or a `resize` that would
  /// pass it raises `kbuf::out_of_memory` naming the limit, the request and what is held, and
  /// changes nothing but the high-water mark (which records the need all the same) and
  /// `statistics().limit_refusals`. Growth stops at the limit: a regrowth makes the buffer as
  /// large as the high-water mark asks, or the largest `buffer_size` the limit leaves room
  /// for. Alignment slack and Kokkos' allocation headers are not counted. `SIZE_MAX` (the
  /// default) is no limit. A request of more than 2^62 bytes is refused as more than any
  /// address space holds before the limit is asked, and changes nothing.
  /// Where the buffer was taken at a saved size (kbuf/sizes_file.hpp) and is still that size,
  /// and the allocator is empty, the buffer shrinks to the largest `buffer_size` under `nbytes`
  /// instead: saved sizes never pass a limit.
  /// @throws kbuf::logic_error if the allocator holds more than `nbytes` now; nothing changes.
  void limit(std::size_t nbytes);
  /// The most bytes the allocator may hold (`SIZE_MAX`: no limit).
  [[nodiscard]] std::size_t limit() const noexcept {
    return limit_;
  }
  /// The bytes held against the limit: `capacity()` plus the bytes of the live fallbacks.
  [[nodiscard]] std::size_t held() const noexcept {
    return capacity_ + fallback_held_;
  }

  /// True in pass-through mode, chosen when the allocator was made: the environment variable
  /// `KBUF_PASSTHROUGH=1` (or `0`), else the CMake option of the same name. Every temporary is
  /// then its own allocation (a fallback), freed by the reset that releases it, and placed so
  /// that it ends where its allocation ends wherever the space's alignment allows (on the host
  /// always; Kokkos 3.4 to 4.6 round allocations to 8 bytes). AddressSanitizer, valgrind and
  /// compute-sanitizer then see each temporary's own bounds, which inside the buffer they
  /// cannot; ASan builds also poison any alignment slack around it. Same API and results,
  /// slower: there is no buffer (`capacity()` stays 0, `resize` keeps none), and
  /// `statistics()` counts every temporary as a fallback. The high-water mark and limits work
  /// as usual.
  [[nodiscard]] bool passthrough() const noexcept {
    return passthrough_;
  }

  /// True when the allocator reports each temporary and its release to Kokkos Tools (in the
  /// space `kbuf:<label>`): decided when it was made, from whether a tool was loaded then and
  /// the switch `KBUF_TOOLS_REPORT` (environment variable `0`/`1`, else the CMake option of the
  /// same name, ON by default).
  [[nodiscard]] bool reports_to_tools() const noexcept {
    return reporter_ != nullptr;
  }

  /// Starts a new measurement region: every counter of `statistics()` restarts from zero and
  /// the peaks from what is live now. The high-water mark (the growth target) is kept.
  void reset_peaks() noexcept {
    stats_ = Statistics{};
    stats_.peak_used = used();
    stats_.peak_live = depth_;
    numbered_base_ = released_ + depth_;
    update_fast_end();  // the hot path stops at the peak of used(), restarted here
  }

  /// Fences the bound execution space instance (only that one, never the whole device). Kokkos
  /// Tools see it as "kbuf::BufferAllocator::fence [<label>]" (Kokkos 3.5 and later).
  /// With temporaries of other instances released and not yet handed on, the host first waits
  /// for those instances' work on them (their events), so that their memory can be freed.
  void fence() {
    if (KBUF_IMPL_UNLIKELY(ordered_)) settle_instances(false);
#if KOKKOS_VERSION >= 30500
    exec_.fence("kbuf::BufferAllocator::fence [" + label_ + "]");
#else
    exec_.fence();
#endif
    ++stats_.fences;
  }

  /// Temporaries inside kernels, per team of a `TeamPolicy` (docs/workspace.md): a temporary
  /// of the current scope (released with it) holding a slot of `size.bytes` for each team that
  /// can be in flight at once (the execution space's concurrency over the team's threads, at
  /// most the teams a GPU keeps resident, at most the league), spill lanes and counters, zeroed
  /// by a kernel on the bound instance. A workspace made again with the same `label` is sized
  /// from what the last `finish()` under it saw, for its own slots: the slot size, lanes and
  /// lane size that hold the fewest bytes (the size asked is then a first guess only).
  /// @throws kbuf::logic_error if the policy's execution space is not the allocator's or cannot
  /// access its memory space, if the policy runs on another instance of it, or if the size
  /// overflows; nothing changes then.
  /// @throws kbuf::out_of_memory as `allocate`.
  template <class ExecPolicy>
  Workspace<MemorySpace> workspace(const ExecPolicy& policy, per_team size,
                                   std::string label = "workspace");

  /// As above, per concurrent thread of any policy: one slot per value of the policy's
  /// execution space's `Kokkos::Experimental::UniqueToken` (global scope: its concurrency), at
  /// most the threads the policy can use (a range's iterations): take tokens from a
  /// `UniqueToken` of `slots()` values when that is fewer.
  template <class ExecPolicy>
  Workspace<MemorySpace> workspace(const ExecPolicy& policy, per_thread size,
                                   std::string label = "workspace");

 private:
  template <class>
  friend class Workspace;

  // The common part of both workspace() calls, for `slots` slots of `bytes` (a first guess, as
  // `spill` and `fallback` are), for a policy on `instance`.
  template <class ExecSpace>
  Workspace<MemorySpace> make_workspace(const char* call, const ExecSpace& instance,
                                        std::size_t slots, std::size_t bytes, std::size_t spill,
                                        std::size_t fallback, bool team, std::string label,
                                        bool saved = true);

  // What each workspace label learned (stable addresses: workspaces point at their record);
  // made by the first workspace (kbuf/workspace.hpp).
  std::unique_ptr<Impl::WorkspaceRecords> learned_;
  // learned_, made on first use (kbuf/impl/workspace_impl.hpp).
  Impl::WorkspaceRecords& workspace_records();

  // KBUF_SIZES: the needs an earlier run saved for the workspace label `label`, for `slots`
  // slots rounded to `unit`; false when there are none (Impl::SizesHooks::saved_needs).
  bool saved_workspace_needs(const std::string& label, std::size_t slots, std::size_t unit,
                             Impl::WorkspaceNeeds& needs);
  // Whether a workspace of `bytes` taken from saved needs fits (Impl::SizesHooks::room_for).
  bool room_for_saved(std::size_t bytes);

  static constexpr std::size_t initial_mark_capacity = 32;

  // statistics(), always inlined: AllocatorPool::local() publishes it on every call.
  KBUF_IMPL_ALWAYS_INLINE Statistics current_statistics() const noexcept {
    Statistics s = stats_;
    // released_ + depth_: every temporary that holds memory since construction, numbered_base_
    // of them before the measurement region (zero-sized ones are stats_.empty).
    s.temporaries = released_ + depth_ - numbered_base_ - stats_.fallbacks;
    if (used() > s.peak_used) s.peak_used = used();  // peaks still under way
    if (depth_ > s.peak_live) s.peak_live = depth_;
    s.reserved_bytes = reserved_;
    s.committed_bytes = in_place_ ? capacity_ : 0;
    return s;
  }

  // The least alignment the hot path serves (types aligned up to it need no check there); every
  // default alignment is above it. Allocators with a smaller one take acquire_slow throughout.
  static constexpr std::size_t fast_alignment = 16;
  // Live temporaries the Kokkos Tools reporter has room for at first (it grows in acquire_slow).
  static constexpr std::size_t initial_report_capacity = 64;

  template <class>
  friend class AllocatorPool;
  template <class>
  friend class use;
  friend struct Impl::SizesHooks<MemorySpace>;  // saved sizes (kbuf/sizes_file.hpp)
  friend struct Impl::CurrentAccess;

  // A labelled temporary while a Kokkos Tools reporter is set: the label names its record.
  template <class DataType, class Layout, class... Extents>
  KBUF_IMPL_COLD view<DataType, Layout> allocate_reported(const char* label, Extents... extents) {
    name_next(label);
    try {
      return allocate<DataType, Layout>(extents...);
    } catch (...) {
      name_next(nullptr);  // the next temporary is not this one
      throw;
    }
  }

  // The Kokkos Tools record of the next temporary is named `label` (null: "temporary").
  void name_next(const char* label) noexcept;

  // An allocator of a pool: its memory counts against the pool's combined limit `budget`.
  BufferAllocator(Impl::SharedBudget& budget, const execution_space& exec, std::size_t sizehint,
                  std::size_t alignment, std::string label);

  // The constructors' common part: checks the alignment, sets up the reporter and the marks,
  // and takes the first buffer of buffer_size(sizehint) bytes, charged against the limits.
  void init(std::size_t sizehint);

  // The constructors' first step: reads the pass-through switch, makes the holders of the
  // reservation and of the saved sizes' link, then init(sizehint).
  void start(std::size_t sizehint);

  // Takes `bytes` more against the limits (the allocator's and its pool's); false, with nothing
  // taken, when one of them refuses. Cold paths only.
  bool try_charge(std::size_t bytes) noexcept;

  // Gives back to the pool's budget what try_charge took. (The allocator's own limit is
  // checked against its state, which needs no giving back.)
  void uncharge(std::size_t bytes) noexcept;

  // try_charge, or kbuf::out_of_memory naming the limit, `what` (with its `requested` bytes,
  // for `call`) and what is held.
  void charge(std::size_t bytes, const char* call, const char* what, std::size_t requested);

  // Counts a limit's refusal and raises kbuf::out_of_memory naming the limit that refused.
  [[noreturn]] KBUF_IMPL_COLD void refuse_limit(std::size_t bytes, const char* call,
                                                const char* what, std::size_t requested);

  // The largest buffer the limits leave room for, given the fallbacks held.
  std::size_t largest_buffer() const noexcept;

  // A live fallback (kbuf/impl/allocator_records.hpp).
  using Fallback = Impl::FallbackRecord<raw_view>;

  // Pass-through in HostSpace takes memory from the aligned operator new, whose bounds are
  // exact (Kokkos 3's HostSpace pads every allocation), and frees it itself; `memory` is then
  // an unmanaged View of it.
  static constexpr bool passthrough_owns_memory =
      std::is_same<MemorySpace, Kokkos::HostSpace>::value;

  // Frees a fallback's memory if it came from operator new (pass-through in HostSpace).
  static void free_owned(const Fallback& f) noexcept;

  // A recorded checkpoint (kbuf/impl/allocator_records.hpp).
  using Mark = Impl::CheckpointMark;

  // How the hot path stays short, with every guarantee kept:
  // - It runs only while fast_end_ != 0, which update_fast_end() decides whenever the state changes
  //   otherwise than by the hot path itself: no live temporary has made the need differ from
  //   the offset (records_ is empty: no fallback, no over-aligned temporary, so extra_ == 0),
  //   no regrowth is pending, the alignment is at least fast_alignment, a checkpoint can be
  //   recorded without allocating (marks_ is not full), the allocator is not in pass-through
  //   mode, and no Kokkos Tools reporter is set (it reports in the cold paths only). The rest
  //   goes to the cold acquire_slow.
  // - It never sets a new peak: fast_end_ is the lowest of the buffer's end, the high-water mark
  //   and the peak of used() (the need equals the offset here), so the peaks and the high-water
  //   mark only move in acquire_slow, which updates them at once. A reset has none to fold.
  // - Checkpoints are validated by what checkpoint() records (marks_), not by numbering every
  //   temporary: temporaries' numbers are derived (released_ + depth_ for the newest).
  // - The extent checks are one test (Impl::fast_byte_count), which also bounds the byte count
  //   below 2^62 so that no address computed here can overflow.
  // What is left per temporary: align the top, compare with the limit, store it, count it.
  // `label` names the temporary's Kokkos Tools record (null: "temporary"); a reporter sends every
  // temporary to acquire_slow, which hands it over.
  template <std::size_t TypeAlignment>
  KBUF_IMPL_ALWAYS_INLINE void* acquire(std::size_t nbytes, const char* label = nullptr) {
    // Below fast_alignment, fast_end_ is 0; beyond it, a type may be aligned beyond alignment_
    // and pad more than the need's formula here assumes.
    if constexpr (TypeAlignment > fast_alignment) {
      if (KBUF_IMPL_UNLIKELY(align_mask_ < TypeAlignment - 1)) {
        return acquire_slow(nbytes, TypeAlignment, label);
      }
    }
    // The base is aligned to alignment_, so aligning the address aligns the offset too.
    const std::uintptr_t p = (top_ + align_mask_) & align_neg_;
    const std::uintptr_t end = p + nbytes;
    if (KBUF_IMPL_UNLIKELY(end > fast_end_)) return acquire_slow(nbytes, TypeAlignment, label);
    top_ = end;
    ++depth_;
    void* q = reinterpret_cast<void*>(p);
    Impl::unpoison<MemorySpace>(q, nbytes);
    return q;
  }

  // Whatever the hot path does not serve (fast_end_ is 0, the type is over-aligned, or the
  // temporary does not fit): records room first, then regrows a pending buffer, carves, or
  // serves a fallback. Nothing changes unless it succeeds.
  KBUF_IMPL_COLD void* acquire_slow(std::size_t nbytes, std::size_t type_alignment,
                                    const char* label = nullptr);

  // allocate's compile-time checks of a temporary's types.
  template <class DataType, class Layout, class... Extents>
  static constexpr void check_types() {
    using V = view<DataType, Layout>;
    using T = typename V::value_type;
    static_assert(
        Impl::compiled_space<MemorySpace>::value || Impl::definitions_reachable<MemorySpace>::value,
        "kbuf::BufferAllocator<MemorySpace>: libkbuf holds the allocator for HostSpace "
        "and the configured backend's device space; for another memory space include "
        "<kbuf/any_space.hpp>");
    static_assert(Impl::is_contiguous_layout<Layout>,
                  "kbuf::BufferAllocator::allocate: Layout must be Kokkos::LayoutRight or "
                  "Kokkos::LayoutLeft");
    static_assert(sizeof...(Extents) == static_cast<std::size_t>(V::rank_dynamic),
                  "kbuf::BufferAllocator::allocate: pass exactly one extent per runtime "
                  "dimension of DataType (one per '*')");
    static_assert((std::is_integral<Extents>::value && ...),
                  "kbuf::BufferAllocator::allocate: extents must be integers");
    static_assert(!std::is_const<T>::value,
                  "kbuf::BufferAllocator::allocate: the value type must not be const (the memory "
                  "is uninitialised)");
    static_assert(std::is_trivially_destructible<T>::value,
                  "kbuf::BufferAllocator::allocate: the value type must be trivially destructible "
                  "(temporaries are released without running destructors)");
    static_assert(Impl::static_extent_product<DataType>::value <=
                      std::numeric_limits<std::size_t>::max() / sizeof(T),
                  "kbuf::BufferAllocator::allocate: the static extents overflow size_t");
  }

  // shrink(v, n): checks that [p, p + bytes) ends at the top of the buffer (or is a live
  // fallback) and n <= extent, then gives back all but n elements of `size` bytes.
  KBUF_IMPL_COLD void give_back_tail(void* p, std::size_t bytes, std::size_t n, std::size_t extent,
                                     std::size_t size, const char* call);

  // acquire_slow without the instance order: where the temporary goes.
  void* acquire_cold(std::size_t nbytes, std::size_t type_alignment, const char* label);

  // allocate(exec, label, extents...): the checks of allocate, then acquire_on.
  template <class DataType, class Layout, class ExecSpace, class... Extents>
  view<DataType, Layout> allocate_on(const ExecSpace& exec, const char* label, Extents... extents);

  // A temporary of `nbytes` (0: an empty one) used on `exec`, ordered after the work of the
  // instances that used its memory before (see allocate(exec, ...)).
  KBUF_IMPL_COLD void* acquire_on(const Impl::OrderInstance& exec, std::size_t nbytes,
                                  std::size_t type_alignment, const char* label);

  // The order of a temporary [p, p + nbytes) on instance `who` of order_ (0: the allocator's
  // own): its waits, counted, and in debug builds the check of what it overlaps.
  void order_use(std::size_t who, const void* p, std::size_t nbytes);

  // The instances' part of fence() and of the destructor: the host waits for the work on
  // released memory (and, with `live`, on live temporaries).
  KBUF_IMPL_COLD void settle_instances(bool live) noexcept;

  // The general case: `nbytes` (> 0) aligned to `a` (>= alignment_) from the buffer with the
  // need's worst-case padding, or a fallback, or out_of_memory if even its need overflows.
  void* carve_or_fallback(std::size_t nbytes, std::size_t a);

  // A temporary whose extents fast_byte_count could not decide: the exact check (a bad extent
  // or size: kbuf::logic_error, nothing changed), then the general path.
  template <class DataType, class V, class... Extents>
  KBUF_IMPL_COLD void* allocate_checked(Extents... extents);

  // The hot path's limit (see acquire): an address, or 0 for none. Called whenever what it
  // depends on changes, except by the hot path and a reset that keeps it valid.
  void update_fast_end() const noexcept {
    // Pass-through and Kokkos Tools reporting take the cold path for every temporary (and
    // every reset): folded in here, they cost the hot path nothing.
    // A buffer replaced under live temporaries is freed by the general path's reset.
    const bool fast = records_.empty() && nmarks_ != mark_capacity_ && !regrow_pending() &&
                      alignment_ >= fast_alignment && !passthrough_ && reporter_ == nullptr &&
                      !ordered_ && replaced_buffers_ == 0;
    std::size_t room = capacity_;
    if (hwm_ < room) room = hwm_;
    if (stats_.peak_used < room) room = stats_.peak_used;
    fast_end_ = fast ? reinterpret_cast<std::uintptr_t>(base_) + room : 0;
  }

  std::size_t open_scope() noexcept {
#if KBUF_ENABLE_DEBUG
    return live_scopes_++;
#else
    return 0;
#endif
  }

  // acquire() with a regrowth pending (empty allocator). What can fail comes before the old
  // buffer is given up, so that a failure changes nothing: the need-overflow check and, for a
  // request that may not fit the regrown buffer, its fallback memory.
  KBUF_IMPL_COLD void* regrow_and_acquire(std::size_t nbytes, std::size_t a);

  // Frees a fallback taken for a temporary that did not need it.
  void drop_spare(raw_view& spare, std::size_t nbytes) noexcept;

  // Fallback memory for `nbytes` aligned to `a`, with room reserved to record it, charged
  // against the limits. A limit's refusal records `need` (the need with it) in the high-water
  // mark. Changes nothing else.
  KBUF_IMPL_COLD raw_view take_fallback(std::size_t nbytes, std::size_t a, std::size_t need);

  // Pass-through: memory for `nbytes` aligned to `a` that ends where the temporary ends, so
  // that memory checkers see its bounds. A space that hands out addresses aligned less than
  // `a` in a fixed pattern (CUDA: 128 bytes past a 256-byte boundary) gets the difference in
  // front, learned once; without a pattern, the usual slack (poisoned for ASan in
  // commit_fallback).
  raw_view take_exact(std::size_t nbytes, std::size_t a);

  // Hands out `memory` (from take_fallback) as the next temporary. Cannot fail; the caller
  // checked that the need does not overflow.
  void* commit_fallback(raw_view memory, std::size_t nbytes, std::size_t a) noexcept;

  // kbuf::logic_error for `call` unless Kokkos is initialized.
  static void expect_initialized(const char* call);

  // The default instance of execution_space, made only once Kokkos is initialized.
  static execution_space default_instance(const char* call);

  // kbuf::out_of_memory for `call` unless `nbytes` (for `what` of `requested` bytes) fits an
  // address space (at most 2^62 bytes). Checked before a limit is asked, so that a request no
  // limit could grant changes nothing, not even the high-water mark.
  void expect_addressable(std::size_t nbytes, const char* call, const char* what,
                          std::size_t requested) const;

  // Allocates `nbytes` (for `what` of `requested` bytes: "a buffer of", "a fallback of")
  // without initialisation on exec_.
  raw_view allocate_raw(std::size_t nbytes, const char* suffix, const char* call, const char* what,
                        std::size_t requested);

  // Takes a buffer of exactly `capacity` usable bytes whose base is aligned to alignment_, for
  // `call` (named in errors). Precondition: no buffer is held. In place: commits it in the
  // reservation (rounded up to the granule, the rounding charged against the limits here).
  void take_buffer(std::size_t capacity, const char* call);

  // Growth in place: reserves the addresses when asked and possible (at construction, for a
  // first buffer of `capacity`), and says how the buffer grows (growth_).
  void choose_growth(std::size_t capacity);

  // `capacity` as a buffer in place commits it (rounded up to the granule); unchanged
  // otherwise, and where rounding overflows.
  std::size_t committed_size(std::size_t capacity) const noexcept;

  // In place, the empty buffer becomes `capacity` bytes (from committed_size): commits or gives
  // back chunks at its end, or, past the reservation, reserves again (or, where that fails,
  // grows by regrowth from then on). Charges as replace_buffer does.
  void resize_in_place(std::size_t capacity, const char* call);

  // In place, the empty allocator gives its reservation back (after a fence if it held memory).
  void give_up_range();

  // In place no more (`why` in growth(), `error` said once on stderr): a plain buffer of
  // `capacity` for `call`; the caller charged `charged`, and what is not kept is given back.
  void regrow_from_now_on(const std::string& why, const std::string& error, std::size_t capacity,
                          std::size_t charged, const char* call);

  // A growth blocked by live temporaries (growth_blocked()): a buffer that holds `nbytes`
  // aligned to `a` above them, at their offsets, while the buffer replaced is held with the
  // fallbacks until a reset releases every temporary carved from it. False (nothing changed)
  // where the allocator grows otherwise (in place, pass-through), other instances' memory is
  // live, a limit or the space refuses: the temporary is then a fallback, as before.
  KBUF_IMPL_COLD bool grow_under_live(std::size_t nbytes, std::size_t a);

  // In place, with temporaries live: commits memory so that the buffer holds `end` bytes. False
  // (nothing changed) when the reservation, a limit or the space refuses: the temporary is then
  // served as without growth in place.
  KBUF_IMPL_COLD bool grow_in_place(std::size_t end);

  // growth() for the reservation held now.
  void describe_in_place();

  // The buffer is now capacity_ bytes in the reservation (in place): its View and the hot path.
  void buffer_changed_in_place() noexcept;

  // Releases the buffer (after fencing the bound instance) and takes one of `capacity` bytes,
  // for `call`. On failure tries to take back the old capacity, then throws. The caller has
  // charged the growth (capacity - capacity()) if any; what is not kept is given back. The
  // caller counts the regrowth.
  void replace_buffer(std::size_t capacity, const char* call);

  // The capacity regrow() leaves. A high-water mark no buffer size can hold (sizehint near
  // SIZE_MAX) is memory that cannot be had, not bad input to the allocate that finds it.
  std::size_t regrow_capacity() const;

  // Replaces the buffer by one of `capacity` bytes (from regrow_capacity()). Keeps the buffer
  // when the pool's combined limit refuses the growth (other allocators took the room since).
  KBUF_IMPL_COLD void regrow(std::size_t capacity);

  // Room for n marks. Called where allocating may throw (construction, acquire_slow), so that
  // checkpoint() never has to: a full marks_ sets fast_end_ to 0, and the next allocate, the only
  // way to a depth that needs a new mark, comes here first.
  KBUF_IMPL_COLD void grow_marks(std::size_t n);

  // The number of the newest live temporary (depth_ > 0). After a reset to a checkpoint at
  // depth d > 0 the newest mark is at d and names it; once a temporary is allocated after that
  // (depth_ is greater), the newest of all is live.
  std::uint64_t newest() const noexcept;

  // Records the current point (depth_ > 0) for checkpoint() and returns the number of the
  // newest live temporary. A mark at this depth is kept until a reset goes below it, so the
  // point is the same as long as the mark is there. Marks are sorted by depth.
  std::uint64_t mark() const noexcept {
    if (nmarks_ != 0 && marks_[nmarks_ - 1].depth == depth_) return marks_[nmarks_ - 1].id;
    const std::uint64_t id = released_ + depth_;  // allocated after the newest mark
    marks_[nmarks_++] = Mark{depth_, id};         // room: see grow_marks
    if (nmarks_ == mark_capacity_) fast_end_ = 0;
    return id;
  }

  // The mark at `depth`, or nullptr.
  const Mark* find_mark(std::size_t depth) const noexcept {
    std::size_t lo = 0;
    std::size_t hi = nmarks_;
    while (lo < hi) {
      const std::size_t mid = lo + (hi - lo) / 2;
      if (marks_[mid].depth < depth) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    return lo < nmarks_ && marks_[lo].depth == depth ? &marks_[lo] : nullptr;
  }

  // A checkpoint is valid while the mark checkpoint() left is there: a reset to a point below
  // it removed it, and a later checkpoint at the same depth records another temporary's number.
  bool is_valid(const Checkpoint& cp) const noexcept {
    return cp.owner_ == this && is_valid_here(cp);
  }

  // is_valid for a checkpoint of this allocator.
  bool is_valid_here(const Checkpoint& cp) const noexcept {
    if (cp.depth_ == 0) return true;
    if (cp.depth_ > depth_) return false;
    if (nmarks_ != 0 && marks_[nmarks_ - 1].depth == cp.depth_) {  // LIFO: the newest mark
      return marks_[nmarks_ - 1].id == cp.id_;
    }
    const Mark* m = find_mark(cp.depth_);
    return m != nullptr && m->id == cp.id_;
  }

  // The checkpoint's fields go by value to the cold functions: a reference would keep the
  // whole checkpoint in memory on the hot path of every reset.
  void check_checkpoint(const Checkpoint& cp, const char* call) const {
    if (KBUF_IMPL_UNLIKELY(cp.owner_ != this || !is_valid_here(cp))) {
      refuse_checkpoint(cp.owner_, cp.depth_, cp.id_, call);
    }
  }

  // Raises the kbuf::logic_error for a checkpoint that check_checkpoint refused.
  [[noreturn]] KBUF_IMPL_COLD void refuse_checkpoint(const BufferAllocator* owner,
                                                     std::size_t depth, std::uint64_t id,
                                                     const char* call) const;

  // Precondition: cp is valid. Never resizes. With the hot path on (fast_end_ != 0), no record
  // and no fallback is live, nothing is reported to Kokkos Tools, and the peaks were set as they
  // grew (acquire_slow): nothing but the offset, the depth and the marks above cp change, and
  // the limit holds.
  void release_to(const Checkpoint& cp) noexcept {
    // Resetting to empty (every scope that is not nested) is the usual case: spelled out, it
    // costs a few instructions less.
    if (cp.depth_ == 0) {
      release_to_point(0, 0);
    } else {
      release_to_point(cp.depth_, cp.used_);
    }
  }

  KBUF_IMPL_ALWAYS_INLINE void release_to_point(std::size_t depth, std::size_t used) noexcept {
    if (KBUF_IMPL_UNLIKELY(fast_end_ == 0)) return release_slow(depth, used);
    if (depth_ > stats_.peak_live) stats_.peak_live = depth_;  // the depth's peak ends here
    Impl::release_bytes<MemorySpace>(exec_, base_ + used, this->used() - used);
    if (depth == 0) {
      nmarks_ = 0;
    } else {
      while (nmarks_ != 0 && marks_[nmarks_ - 1].depth > depth) --nmarks_;
    }
    released_ += depth_ - depth;
    depth_ = depth;
    top_ = reinterpret_cast<std::uintptr_t>(base_) + used;
    ++stats_.resets;
  }

  // release_to with the hot path off: also reports the releases to Kokkos Tools, frees the
  // fallbacks above cp (after a fence of the bound instance, giving their bytes back to the
  // limits), restores extra_, and decides the limit again.
  KBUF_IMPL_COLD void release_slow(std::size_t cp_depth, std::size_t cp_used) noexcept;

  // Kokkos Tools: the newest temporary is [p, p + nbytes); the ones above depth `depth` are
  // released.
  KBUF_IMPL_COLD void report_acquired(const void* p, std::size_t nbytes) noexcept;
  KBUF_IMPL_COLD void report_released(std::size_t depth) noexcept;

  // Room in the reporter for the temporary about to be counted at depth_ (before anything
  // changes: it may fail).
  void reserve_reports();

  // Frees the fallbacks after the first `keep` (after a fence of the bound instance).
  KBUF_IMPL_COLD void free_fallbacks(std::size_t keep) noexcept;

  void end_scope(const Checkpoint& cp, std::size_t index) noexcept {
#if KBUF_ENABLE_DEBUG
    if (index + 1 != live_scopes_) {
      Impl::debug_abort(Impl::concat("kbuf::BufferAllocator::Scope: scope ", index + 1, " of ",
                                     live_scopes_, " of allocator '", label_, "' (",
                                     static_cast<const void*>(this),
                                     ") destroyed out of LIFO order; end scopes in the reverse "
                                     "order of their creation"));
    }
    --live_scopes_;
#else
    (void)index;
#endif
    if (is_valid_here(cp)) release_to(cp);  // a scope's checkpoint is this allocator's
  }

  // fence() for destructors and noexcept paths: an exception it raises is swallowed.
  void fence_noexcept() noexcept;

  // Says what a checkpoint that is_valid() refuses lost: the temporaries live when it was
  // taken are fewer now, or the newest of them was released and another took its place.
  [[noreturn]] KBUF_IMPL_COLD void throw_released_checkpoint(std::size_t cp_depth,
                                                             std::uint64_t cp_id,
                                                             const char* call) const;

  // Raises the kbuf::logic_error for extents that checked_byte_count refused.
  template <class DataType, class V, class... Extents>
  [[noreturn]] KBUF_IMPL_COLD void refuse_extents(Extents... extents) const;

  // kbuf::out_of_memory for a request whose size (with its alignment) overflows size_t.
  [[noreturn]] KBUF_IMPL_COLD void throw_unsatisfiable(std::size_t nbytes, std::size_t a) const;

  // The numbers (alignment_, capacity_, top_, the need, the high-water mark, depth_, stats_) are
  // Impl::BufferPolicy's, the base class; the memory and everything else are here.
  execution_space exec_;
  std::string label_;
  raw_view buffer_;                      // capacity_ bytes at an address aligned to alignment_
  unsigned char* base_ = nullptr;        // buffer_.data(), the policy's origin_
  mutable std::uintptr_t fast_end_ = 0;  // the hot path's end, or 0: see update_fast_end()
  std::vector<Fallback> fallbacks_;      // live fallbacks, oldest first
  std::uint64_t released_ = 0;           // temporaries released so far (zero-sized ones aside)
  // Recorded checkpoints (sorted by depth), and room for at least one more whenever a new one
  // may be needed (see grow_marks).
  mutable std::unique_ptr<Mark[]> marks_;
  mutable std::size_t nmarks_ = 0;
  std::size_t mark_capacity_ = 0;
  std::size_t live_scopes_ = 0;
  std::size_t live_uses_ = 0;  // kbuf::use guards naming it (counted with KBUF_ENABLE_DEBUG only)
  std::uint64_t numbered_base_ = 0;  // released_ + depth_ when the measurement region began
                                     // (reset_peaks)
  std::size_t limit_ = Impl::SharedBudget::no_limit;
  std::size_t fallback_held_ = 0;     // bytes of the fallbacks held (live or being taken)
  std::size_t replaced_buffers_ = 0;  // of fallbacks_, buffers replaced under live ones
  // While a replaced buffer is held (the general path sees every reset): the lowest depth
  // since the buffer became the buffer, below every temporary carved from it.
  std::size_t tenure_low_ = 0;
  Impl::SharedBudget* budget_ = nullptr;               // a pool's combined limit, or none
  bool passthrough_ = false;                           // read once, when the allocator is made
  std::unique_ptr<Impl::TemporaryReporter> reporter_;  // set when a tool was loaded at
                                                       // construction and KBUF_TOOLS_REPORT did
                                                       // not turn reports off
  std::size_t passthrough_front_ = 0;  // pass-through: bytes in front that align the space's
                                       // addresses (take_exact)
  std::unique_ptr<Impl::VirtualRange<MemorySpace>> range_;  // growth in place: the reservation
                                                            // (none reserved: off)
  std::size_t reserved_ = 0;     // range_'s reserved bytes (statistics().reserved_bytes)
  bool in_place_ = false;        // the buffer grows in place, in range_
  bool commit_refused_ = false;  // in place: the device refused a commit (refused_why_)
  std::string refused_why_;
  std::string growth_;  // growth(): how the buffer grows, and why
  // Temporaries of other execution space instances (allocate(exec, ...)): made at the first;
  // ordered_ while it records live temporaries or released memory not yet handed on.
  std::unique_ptr<Impl::InstanceOrder> order_;
  bool ordered_ = false;
  // Saved sizes (kbuf/sizes_file.hpp): made first in the constructors, destroyed first.
  std::unique_ptr<Impl::SizesLink<MemorySpace>> sizes_;
};

}  // namespace kbuf

namespace kbuf {

// The member templates on the element type: every translation unit instantiates its own.
template <class MemorySpace>
template <class DataType, class V, class... Extents>
KBUF_IMPL_COLD void* BufferAllocator<MemorySpace>::allocate_checked(Extents... extents) {
  const std::size_t nbytes = Impl::checked_byte_count<DataType, V>(
      [this](auto... e) { this->template refuse_extents<DataType, V>(e...); }, extents...);
  if (nbytes == 0) {
    ++stats_.empty;
    return nullptr;
  }
  return acquire_slow(nbytes, alignof(typename V::value_type));
}

template <class MemorySpace>
template <class DataType, class V, class... Extents>
[[noreturn]] KBUF_IMPL_COLD void BufferAllocator<MemorySpace>::refuse_extents(
    Extents... extents) const {
  Impl::throw_bad_extents<DataType, V>("kbuf::BufferAllocator::allocate", label_, extents...);
}

/// @cond
template <class MemorySpace>
template <class DataType, class Layout, class ExecSpace, class... Extents>
typename BufferAllocator<MemorySpace>::template view<DataType, Layout>
BufferAllocator<MemorySpace>::allocate_on(const ExecSpace& exec, const char* label,
                                          Extents... extents) {
  using V = view<DataType, Layout>;
  using T = typename V::value_type;
  check_types<DataType, Layout, Extents...>();
  if constexpr (Kokkos::is_execution_space<ExecSpace>::value) {
    static_assert(std::is_same<ExecSpace, execution_space>::value ||
                      Kokkos::SpaceAccessibility<ExecSpace, MemorySpace>::accessible,
                  "kbuf::BufferAllocator::allocate(exec, ...): the instance's execution space "
                  "is not the allocator's and cannot access its memory space");
  }
  const std::size_t nbytes = Impl::checked_byte_count<DataType, V>(
      [this](auto... e) { this->template refuse_extents<DataType, V>(e...); }, extents...);
  const Impl::TypedOrderInstance<ExecSpace, MemorySpace> instance(exec);
  return Impl::unmanaged_view<V>(acquire_on(instance, nbytes, alignof(T), label), extents...);
}
/// @endcond

}  // namespace kbuf

// libkbuf holds the compiled members for HostSpace and the backend's device space
// (src/buffer_allocator.cpp); a translation unit instantiates only the hot path and the member
// templates. <kbuf/any_space.hpp> makes the definitions reachable for any other space.
#if KBUF_ENABLE_DEBUG == KBUF_IMPL_LIBRARY_DEBUG
namespace kbuf {
extern template class BufferAllocator<Kokkos::HostSpace>;
#if !defined(KBUF_BACKEND_SERIAL)
extern template class BufferAllocator<default_memory_space>;
#endif
}  // namespace kbuf
#else
// This translation unit's debug checks differ from libkbuf's: it instantiates its own members.
#include <kbuf/any_space.hpp>
#endif

#endif  // KBUF_BUFFER_ALLOCATOR_HPP
