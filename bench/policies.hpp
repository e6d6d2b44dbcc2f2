// The ways a Kokkos user can get a temporary, behind one interface, and the rounds of
// temporaries the benchmark runs through each of them.
//
// A policy P provides
//   view_t<DataType, Layout>          the view type it hands out;
//   Mark begin();  void end(Mark&);   bracket one round: everything made in between is released
//                                     by end() (or, for managed Views, by their destructors);
//   make<DataType, Layout>(slot, extents...)  one temporary; `slot` is its index in the round,
//                                     used only by the floor to find its precomputed address;
//   release_slots(views, n)           drop n views kept in an array (managed Views free here).
#ifndef KBUF_BENCH_POLICIES_HPP
#define KBUF_BENCH_POLICIES_HPP

#include <kbuf/kbuf.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <type_traits>
#include <vector>

#include <kbuf_timing/harness.hpp>

#if defined(__has_include)
#if __has_include(<memory_resource>)
#include <memory_resource>
#define KBUF_BENCH_HAVE_PMR 1
#endif
#endif
#ifndef KBUF_BENCH_HAVE_PMR
#define KBUF_BENCH_HAVE_PMR 0
#endif

namespace kbuf_bench {

using namespace kbuf_timing;  // the timing harness (apps/timing)

using memory_space = kbuf::default_memory_space;
using execution_space = kbuf::default_execution_space;
using Allocator = kbuf::BufferAllocator<memory_space>;

/// True when the host can write the temporaries directly (Serial builds); otherwise every touch
/// is a one-thread kernel on the default instance.
constexpr bool host_space = Kokkos::SpaceAccessibility<Kokkos::HostSpace, memory_space>::accessible;

/// Alignment every strategy that places temporaries itself uses: kbuf's default for the space.
constexpr std::size_t temp_alignment = Allocator::default_alignment;

template <class D, class L>
using unmanaged_view = Kokkos::View<D, L, memory_space, Kokkos::MemoryUnmanaged>;
template <class D, class L>
using managed_view = Kokkos::View<D, L, memory_space>;

constexpr std::size_t align_up(std::size_t n, std::size_t a) {
  return (n + a - 1) / a * a;
}

// ---- Touching a temporary -------------------------------------------------------------------

/// Writes 1 to the last element through the view's own indexing (extents and strides), so the
/// view must really have been built.
template <class V>
KOKKOS_INLINE_FUNCTION void write_last(const V& v) {
  using T = typename V::non_const_value_type;
  constexpr int rank = static_cast<int>(V::rank);
  static_assert(rank >= 1 && rank <= 4, "write_last: ranks 1 to 4");
  const T x = T(1);
  if constexpr (rank == 1) {
    v(v.extent(0) - 1) = x;
  } else if constexpr (rank == 2) {
    v(v.extent(0) - 1, v.extent(1) - 1) = x;
  } else if constexpr (rank == 3) {
    v(v.extent(0) - 1, v.extent(1) - 1, v.extent(2) - 1) = x;
  } else {
    v(v.extent(0) - 1, v.extent(1) - 1, v.extent(2) - 1, v.extent(3) - 1) = x;
  }
}

template <class V>
struct WriteLast {
  V v;
  KOKKOS_FUNCTION void operator()(int) const { write_last(v); }
};

/// Touches a temporary once: a plain write on the host, a one-thread kernel on a device.
template <class V>
inline void touch(const V& v) {
  if constexpr (host_space) {
    write_last(v);
    escape(v.data());
  } else {
    Kokkos::parallel_for(Kokkos::RangePolicy<execution_space>(0, 1), WriteLast<V>{v});
  }
}

// ---- Byte counts ------------------------------------------------------------------------------

template <class T>
struct static_count : std::integral_constant<std::size_t, 1> {};
template <class T, std::size_t N>
struct static_count<T[N]> : std::integral_constant<std::size_t, N * static_count<T>::value> {};
template <class T>
struct static_count<T*> : static_count<T> {};

/// Bytes of a `DataType` temporary with the given runtime extents (what a user computes to ask
/// malloc-like resources for memory).
template <class DataType, class... E>
inline std::size_t bytes_of(E... extents) {
  using T = typename Kokkos::View<DataType>::value_type;
  std::size_t n = static_count<DataType>::value * sizeof(T);
  ((n *= static_cast<std::size_t>(extents)), ...);
  return n;
}

// ---- Wrapping memory in unmanaged Views ----------------------------------------------------

/// An unmanaged View over `p`, built as kbuf builds its temporaries: from the pointer and an
/// array layout on Kokkos 3, whose pointer-and-extents constructor also builds and destroys a
/// std::string label for a rank check (about 70 instructions), and from the pointer and the
/// extents on Kokkos 4, where both cost the same. Every strategy here that wraps memory itself
/// uses it, so they differ only in how they get the memory; the floor-extents strategy shows
/// what View(ptr, extents...) costs instead.
template <class V, class... E>
KOKKOS_FORCEINLINE_FUNCTION V wrap(void* p, E... extents) {
  using P = typename V::pointer_type;
#if KOKKOS_VERSION < 40000
  return V(static_cast<P>(p), typename V::array_layout(static_cast<std::size_t>(extents)...));
#else
  return V(static_cast<P>(p), static_cast<std::size_t>(extents)...);
#endif
}

// ---- The strategies -------------------------------------------------------------------------

/// The floor: the same unmanaged Views over a fixed array at precomputed addresses. No
/// bookkeeping at all: the address of slot i is one load from a table. The Views are built by
/// wrap() (ViaExtents = false) or as View(ptr, extents...), as user code usually writes it
/// (ViaExtents = true; the same cost on Kokkos 4).
template <bool ViaExtents>
class FloorPolicy {
 public:
  template <class D, class L>
  using view_t = unmanaged_view<D, L>;
  struct Mark {};

  /// Lays out `slot_bytes` consecutively in `arena` (each aligned to temp_alignment).
  FloorPolicy(unsigned char* arena, std::size_t arena_bytes,
              const std::vector<std::size_t>& slot_bytes) {
    const std::uintptr_t base = reinterpret_cast<std::uintptr_t>(arena);
    std::size_t offset = align_up(base, temp_alignment) - base;
    table_.reserve(slot_bytes.size());
    for (std::size_t b : slot_bytes) {
      table_.push_back(arena + offset);
      offset = align_up(offset + b, temp_alignment);
    }
    if (offset > arena_bytes) table_.clear();  // the caller checks ok()
  }
  bool ok() const { return !table_.empty(); }

  Mark begin() { return {}; }
  void end(Mark&) {}
  template <class D, class L, class... E>
  view_t<D, L> make(std::size_t slot, E... extents) {
    using V = view_t<D, L>;
    if constexpr (ViaExtents) {
      using P = typename V::pointer_type;
      return V(reinterpret_cast<P>(table_[slot]), static_cast<std::size_t>(extents)...);
    } else {
      return wrap<V>(table_[slot], extents...);
    }
  }
  template <class V>
  void release_slots(V*, std::size_t) {}

 private:
  std::vector<unsigned char*> table_;
};

/// kbuf: a round is a Scope (Scoped = true) or a checkpoint and an explicit reset to it.
template <bool Scoped>
class KbufPolicy {
 public:
  template <class D, class L>
  using view_t = typename Allocator::template view<D, L>;
  using Mark = std::conditional_t<Scoped, Allocator::Scope, Allocator::Checkpoint>;

  explicit KbufPolicy(Allocator& a) : a_(&a) {}
  Mark begin() {
    if constexpr (Scoped) {
      return a_->scope();
    } else {
      return a_->checkpoint();
    }
  }
  void end(Mark& m) {
    if constexpr (!Scoped) a_->reset(m);  // a Scope resets in its destructor, after end()
    (void)m;
  }
  template <class D, class L, class... E>
  view_t<D, L> make(std::size_t, E... extents) {
    return a_->template allocate<D, L>(static_cast<std::size_t>(extents)...);
  }
  template <class V>
  void release_slots(V*, std::size_t) {}
  Allocator& allocator() { return *a_; }

 private:
  Allocator* a_;
};

/// `alloc.allocate` handed out as the plain (managed) View type a library's members have: the
/// part of kbuf::temporary's cost that is the View type's, not the drop-in's.
class ViewTypePolicy {
 public:
  template <class D, class L>
  using view_t = managed_view<D, L>;
  using Mark = Allocator::Scope;

  explicit ViewTypePolicy(Allocator& a) : a_(&a) {}
  Mark begin() { return a_->scope(); }
  void end(Mark&) {}
  template <class D, class L, class... E>
  view_t<D, L> make(std::size_t, E... extents) {
    return wrap<view_t<D, L>>(
        a_->template allocate<D, L>(static_cast<std::size_t>(extents)...).data(), extents...);
  }
  template <class V>
  void release_slots(V*, std::size_t) {}

 private:
  Allocator* a_;
};

/// What a library that adopted kbuf pays: `kbuf::temporary` of the library's owner inside a
/// `kbuf::scope` of it, under a `kbuf::use` guard of the allocator made when the policy is made.
/// The Views are the plain (managed) type a library's members have; served by the allocator,
/// they hold no reference count.
class TemporaryPolicy {
 public:
  template <class D, class L>
  using view_t = managed_view<D, L>;
  using Mark = kbuf::CurrentScope<memory_space>;

  explicit TemporaryPolicy(Allocator& a) : guard_(a) {}
  Mark begin() { return kbuf::scope<memory_space>(owner); }
  void end(Mark&) {}  // the scope resets when it ends, after end()
  template <class D, class L, class... E>
  view_t<D, L> make(std::size_t, E... extents) {
    return kbuf::temporary<D, L, memory_space>(owner, "bench",
                                               static_cast<std::size_t>(extents)...);
  }
  template <class V>
  void release_slots(V*, std::size_t) {}

 private:
  static constexpr kbuf::owner owner{"kbuf-bench"};
  kbuf::use<memory_space> guard_;
};

/// Fresh managed Views, zero-initialised (Init) or `view_alloc(WithoutInitializing, label)`.
template <bool Init>
class ManagedPolicy {
 public:
  template <class D, class L>
  using view_t = managed_view<D, L>;
  struct Mark {};
  Mark begin() { return {}; }
  void end(Mark&) {}
  template <class D, class L, class... E>
  view_t<D, L> make(std::size_t, E... extents) {
    if constexpr (Init) {
      return view_t<D, L>("tmp", static_cast<std::size_t>(extents)...);
    } else {
      return view_t<D, L>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "tmp"),
                          static_cast<std::size_t>(extents)...);
    }
  }
  template <class V>
  void release_slots(V* views, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) views[i] = V();
  }
};

/// `Kokkos::kokkos_malloc` per temporary wrapped in an unmanaged View; `kokkos_free` of all of
/// a round's temporaries (newest first) at its end.
class KokkosMallocPolicy {
 public:
  template <class D, class L>
  using view_t = unmanaged_view<D, L>;
  struct Mark {};
  explicit KokkosMallocPolicy(std::size_t max_live) { live_.reserve(max_live); }
  ~KokkosMallocPolicy() {
    Mark m;
    end(m);
  }
  KokkosMallocPolicy(const KokkosMallocPolicy&) = delete;
  KokkosMallocPolicy& operator=(const KokkosMallocPolicy&) = delete;

  Mark begin() { return {}; }
  void end(Mark&) {
    while (!live_.empty()) {
      Kokkos::kokkos_free<memory_space>(live_.back());
      live_.pop_back();
    }
  }
  template <class D, class L, class... E>
  view_t<D, L> make(std::size_t, E... extents) {
    void* p = Kokkos::kokkos_malloc<memory_space>("tmp", bytes_of<D>(extents...));
    live_.push_back(p);
    return wrap<view_t<D, L>>(p, extents...);
  }
  template <class V>
  void release_slots(V*, std::size_t) {}

 private:
  std::vector<void*> live_;
};

/// Reference, not an option a user has ready-made: the least any allocator that keeps its offset
/// in memory can do. An inline pointer bump with a capacity check over a fixed array, reset to a
/// saved offset per round; no LIFO checks, no high-water mark, no fallbacks, no counters.
class BumpPolicy {
 public:
  template <class D, class L>
  using view_t = unmanaged_view<D, L>;
  using Mark = std::size_t;
  BumpPolicy(unsigned char* arena, std::size_t arena_bytes) {
    const std::uintptr_t b = reinterpret_cast<std::uintptr_t>(arena);
    const std::size_t skip = align_up(b, temp_alignment) - b;
    base_ = arena + skip;
    capacity_ = arena_bytes - skip;
  }
  Mark begin() { return used_; }
  void end(Mark& m) { used_ = m; }
  template <class D, class L, class... E>
  view_t<D, L> make(std::size_t, E... extents) {
    const std::size_t start = align_up(used_, temp_alignment);
    const std::size_t end = start + bytes_of<D>(extents...);
    if (end > capacity_) std::abort();  // the benchmark sizes the arena for every round
    used_ = end;
    return wrap<view_t<D, L>>(base_ + start, extents...);
  }
  template <class V>
  void release_slots(V*, std::size_t) {}

 private:
  unsigned char* base_;
  std::size_t capacity_;
  std::size_t used_ = 0;
};

#if KBUF_BENCH_HAVE_PMR
/// `std::pmr::monotonic_buffer_resource` over a fixed host buffer (no upstream: it never
/// allocates), wrapped in unmanaged Views; `release()` per round. Host spaces only.
class PmrPolicy {
 public:
  template <class D, class L>
  using view_t = unmanaged_view<D, L>;
  struct Mark {};
  PmrPolicy(unsigned char* arena, std::size_t arena_bytes)
      : resource_(arena, arena_bytes, std::pmr::null_memory_resource()) {}
  Mark begin() { return {}; }
  void end(Mark&) { resource_.release(); }
  template <class D, class L, class... E>
  view_t<D, L> make(std::size_t, E... extents) {
    void* p = resource_.allocate(bytes_of<D>(extents...), temp_alignment);
    return wrap<view_t<D, L>>(p, extents...);
  }
  template <class V>
  void release_slots(V*, std::size_t) {}

 private:
  std::pmr::monotonic_buffer_resource resource_;
};
#endif

// ---- Rounds -------------------------------------------------------------------------------

/// The realistic round: 8 temporaries of ranks 1 to 4, both layouts, one static extent, four
/// value types, 64 B to 1 MiB. Extents live in memory so the compiler cannot fold them.
struct MixedShapes {
  std::size_t e[8][4] = {
      {2, 0, 0, 0},       // double*[4]                       64 B
      {32, 16, 0, 0},     // float**, LayoutLeft              2 KiB
      {8, 16, 16, 0},     // double***                        16 KiB
      {64, 64, 0, 0},     // Kokkos::complex<double>**        64 KiB
      {1000, 0, 0, 0},    // int*                             4000 B
      {8, 8, 8, 8},       // double****, LayoutLeft           32 KiB
      {128, 1024, 0, 0},  // double**                         1 MiB
      {16, 32, 128, 0},   // float***, LayoutLeft             256 KiB
  };
  static std::vector<std::size_t> slot_bytes() {
    return {64, 2048, 16384, 65536, 4000, 32768, 1048576, 262144};
  }
  static constexpr std::size_t count = 8;
};

template <class P>
KBUF_TIMING_NOINLINE void mixed_round(P& p, const MixedShapes& s) {
  using LR = Kokkos::LayoutRight;
  using LL = Kokkos::LayoutLeft;
  auto mark = p.begin();
  {
    auto t0 = p.template make<double* [4], LR>(0, s.e[0][0]);
    touch(t0);
    auto t1 = p.template make<float**, LL>(1, s.e[1][0], s.e[1][1]);
    touch(t1);
    auto t2 = p.template make<double***, LR>(2, s.e[2][0], s.e[2][1], s.e[2][2]);
    touch(t2);
    auto t3 = p.template make<Kokkos::complex<double>**, LR>(3, s.e[3][0], s.e[3][1]);
    touch(t3);
    auto t4 = p.template make<int*, LR>(4, s.e[4][0]);
    touch(t4);
    auto t5 = p.template make<double****, LL>(5, s.e[5][0], s.e[5][1], s.e[5][2], s.e[5][3]);
    touch(t5);
    auto t6 = p.template make<double**, LR>(6, s.e[6][0], s.e[6][1]);
    touch(t6);
    auto t7 = p.template make<float***, LL>(7, s.e[7][0], s.e[7][1], s.e[7][2]);
    touch(t7);
  }
  p.end(mark);
}

/// `count` live temporaries of `n` doubles each, kept in `slots`, released together.
struct UniformShape {
  std::size_t count = 1;
  std::size_t n = 64;
};

template <class P>
KBUF_TIMING_NOINLINE void uniform_round(
    P& p, const UniformShape& s, typename P::template view_t<double*, Kokkos::LayoutRight>* slots) {
  auto mark = p.begin();
  const std::size_t count = s.count;
  for (std::size_t i = 0; i < count; ++i) {
    slots[i] = p.template make<double*, Kokkos::LayoutRight>(i, s.n);
    touch(slots[i]);
  }
  p.release_slots(slots, count);
  p.end(mark);
}

/// Waits for the device work of the rounds (a no-op wait on the host).
inline void fence() {
  execution_space().fence();
}

}  // namespace kbuf_bench

#endif  // KBUF_BENCH_POLICIES_HPP
