// An emulated device memory space for tests, for Kokkos 4.3 and later (which removed
// Kokkos::Experimental::LogicalMemorySpace, the foreign space of earlier versions).
//
// `kbuf_test::EmulatedDeviceSpace` is host memory under a memory space type of its own:
// - the host may not dereference its Views: SpaceAccessibility<HostSpace, EmulatedDeviceSpace>
//   is not accessible, so Kokkos' access check aborts with "Kokkos::View ERROR: attempt to
//   access inaccessible memory space"; its contents move only through deep_copy and mirrors
//   (the host mirror of one of its Views lives in HostSpace);
// - its allocations are 256-byte aligned, as cudaMalloc's are, so the data of a View or of
//   kokkos_malloc, behind Kokkos' 128-byte allocation header, starts 128 bytes past a 256-byte
//   boundary, as in CudaSpace;
// - the allocation header is reached through DeepCopy, as on a device (Kokkos'
//   HostInaccessibleSharedAllocationRecordCommon, the record CudaSpace and HIPSpace use);
// - memory it frees is filled with `emulated_freed_byte` and kept back from the system for a
//   while (up to `quarantine_bytes` in all), ASan-poisoned when built with AddressSanitizer, so
//   a late access is caught: a deep_copy that reads or writes it aborts with "deep_copy ...
//   freed memory" (every deep_copy into or out of the space is checked against its live and
//   freed allocations), a host read under ASan is a use-after-poison report, and a host read
//   without ASan sees the pattern;
// - it emits Kokkos Tools allocation events under its own name.
// Its execution space is Kokkos::Serial, which must not be the default host execution space:
// Serial may access the space (Kokkos 4 allocates a View only with an execution space that may
// access its memory) while host code, which Kokkos' View access check represents by the default
// host execution space (OpenMP, Threads), may not. Kernels touch its memory only through Kokkos'
// own machinery (fills through AnonymousSpace Views, value initialisation through raw
// pointers): a View of this space dereferenced in a Serial kernel aborts too, as host code.
//
// Everything here that touches Kokkos' internals (all of it in this file):
// - Kokkos::Impl::MemorySpaceAccess between this space and HostSpace;
// - Kokkos::SpaceAccessibility<Serial, this space>, and SpaceAccessibility<this space, any>
//   (which the mdspan-based View needs);
// - the Kokkos::Impl::SharedAllocationRecord specialisation, through Kokkos' macro
//   KOKKOS_IMPL_HOST_INACCESSIBLE_SHARED_ALLOCATION_SPECIALIZATION, with the record's
//   definitions from impl/Kokkos_SharedAlloc_timpl.hpp (instantiated implicitly);
// - Kokkos::Impl::DeepCopy between this space and itself and HostSpace;
// - Kokkos::Impl::throw_bad_alloc.
// ZeroMemset needs nothing: Kokkos 4.6.01 picks it by execution space alone, and the host's
// memset is right for this memory.
// Checked with Kokkos 4.6.01 (Serial and OpenMP backends, OpenMP the default).
#ifndef KBUF_TEST_EMULATED_DEVICE_SPACE_HPP
#define KBUF_TEST_EMULATED_DEVICE_SPACE_HPP

#include <Kokkos_Core.hpp>

#if !defined(KOKKOS_VERSION) || KOKKOS_VERSION < 40300
#error "emulated_device_space.hpp is for Kokkos 4.3 and later (earlier ones: LogicalMemorySpace)"
#endif

// The definitions of SharedAllocationRecordCommon and its host-inaccessible sibling, which
// Kokkos instantiates only for its own spaces. The header is not public: allow it here only.
#ifndef KOKKOS_IMPL_PUBLIC_INCLUDE
#define KOKKOS_IMPL_PUBLIC_INCLUDE
#define KBUF_TEST_EMULATED_UNDEF_PUBLIC_INCLUDE
#endif
#include <impl/Kokkos_SharedAlloc_timpl.hpp>
#ifdef KBUF_TEST_EMULATED_UNDEF_PUBLIC_INCLUDE
#undef KOKKOS_IMPL_PUBLIC_INCLUDE
#undef KBUF_TEST_EMULATED_UNDEF_PUBLIC_INCLUDE
#endif

#if defined(__SANITIZE_ADDRESS__)
#define KBUF_TEST_EMULATED_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KBUF_TEST_EMULATED_ASAN 1
#endif
#endif
#ifndef KBUF_TEST_EMULATED_ASAN
#define KBUF_TEST_EMULATED_ASAN 0
#endif
#if KBUF_TEST_EMULATED_ASAN
#include <sanitizer/asan_interface.h>
#endif

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <iterator>
#include <map>
#include <mutex>
#include <new>
#include <string>
#include <type_traits>

#if !defined(KOKKOS_ENABLE_SERIAL)
#error "the emulated device space runs on Kokkos::Serial: it needs a Kokkos with Serial enabled"
#endif

namespace kbuf_test {

static_assert(!std::is_same<Kokkos::DefaultHostExecutionSpace, Kokkos::Serial>::value,
              "the emulated device space needs a default host execution space other than "
              "Serial (OpenMP, Threads): Serial is its device, and may access its memory");

/// The byte memory freed by the emulated space holds while it is kept back.
inline constexpr unsigned char emulated_freed_byte = 0xDB;
/// The alignment of the emulated space's allocations (cudaMalloc's).
inline constexpr std::size_t emulated_allocation_alignment = 256;

namespace emulated_detail {

/// The emulated space's bookkeeping: live allocations and the freed ones kept back, by base
/// address. Never destroyed, so Views that outlive static destruction still free cleanly.
class Registry {
 public:
  static Registry& get() {
    static Registry* r = new Registry;
    return *r;
  }

  /// Freed memory kept back in all; blocks larger than this go back at once, unfilled.
  static constexpr std::size_t quarantine_bytes = std::size_t{64} << 20;

  void add(void* p, std::size_t n) {
    std::lock_guard<std::mutex> lock(mutex_);
    live_[address(p)] = n;
  }

  /// Forgets [p, p + n) as live, then fills, poisons and keeps it back (or frees it).
  void remove(void* p, std::size_t n) {
    std::unique_lock<std::mutex> lock(mutex_);
    const auto it = live_.find(address(p));
    if (it == live_.end() || it->second != n) {
      lock.unlock();
      fail("deallocate of memory it did not allocate (or with another size)", p, n);
    }
    live_.erase(it);
    if (n > quarantine_bytes) {
      lock.unlock();
      release(p);
      return;
    }
    std::memset(p, emulated_freed_byte, n);
#if KBUF_TEST_EMULATED_ASAN
    ASAN_POISON_MEMORY_REGION(p, n);
#endif
    freed_[address(p)] = n;
    order_.push_back(address(p));
    held_ += n;
    while (held_ > quarantine_bytes) {
      const std::uintptr_t oldest = order_.front();
      order_.pop_front();
      const auto f = freed_.find(oldest);
      held_ -= f->second;
#if KBUF_TEST_EMULATED_ASAN
      ASAN_UNPOISON_MEMORY_REGION(reinterpret_cast<void*>(oldest), f->second);
#endif
      freed_.erase(f);
      release(reinterpret_cast<void*>(oldest));
    }
  }

  /// Aborts unless [p, p + n) lies inside one live allocation; `what` names the access.
  void check(const void* p, std::size_t n, const char* what) {
    if (n == 0) return;
    const std::uintptr_t b = address(p);
    std::unique_lock<std::mutex> lock(mutex_);
    if (inside(live_, b, n)) return;
    const bool freed = overlaps(freed_, b, n);
    lock.unlock();
    fail(freed ? (std::string(what) + " freed memory (a late access after free)").c_str()
               : (std::string(what) + " memory outside every live allocation").c_str(),
         p, n);
  }

  /// True when [p, p + n) lies inside one live allocation.
  bool is_live(const void* p, std::size_t n) {
    std::lock_guard<std::mutex> lock(mutex_);
    return inside(live_, address(p), n);
  }

  /// True when [p, p + n) lies in memory freed and kept back.
  bool is_freed(const void* p, std::size_t n) {
    std::lock_guard<std::mutex> lock(mutex_);
    return inside(freed_, address(p), n);
  }

  static void release(void* p) noexcept {
    ::operator delete(p, std::align_val_t(emulated_allocation_alignment), std::nothrow);
  }

  [[noreturn]] static void fail(const char* what, const void* p, std::size_t n) {
    char message[512];
    std::snprintf(message, sizeof message, "kbuf_test::EmulatedDeviceSpace: %s: %zu bytes at %p",
                  what, n, p);
    Kokkos::abort(message);
    std::abort();
  }

 private:
  using Blocks = std::map<std::uintptr_t, std::size_t>;

  static std::uintptr_t address(const void* p) {
    return reinterpret_cast<std::uintptr_t>(p);
  }

  static bool inside(const Blocks& blocks, std::uintptr_t b, std::size_t n) {
    auto it = blocks.upper_bound(b);
    if (it == blocks.begin()) return false;
    --it;
    return b - it->first <= it->second && n <= it->second - (b - it->first);
  }

  static bool overlaps(const Blocks& blocks, std::uintptr_t b, std::size_t n) {
    auto it = blocks.upper_bound(b);
    if (it != blocks.begin()) {
      auto before = std::prev(it);
      if (b < before->first + before->second) return true;
    }
    return it != blocks.end() && it->first < b + n;
  }

  std::mutex mutex_;
  Blocks live_;
  Blocks freed_;
  std::deque<std::uintptr_t> order_;  // freed blocks, oldest first
  std::size_t held_ = 0;
};

}  // namespace emulated_detail

/// Host memory the host may not dereference, with a device's alignment and a freed-memory
/// check (see the top of this file).
class EmulatedDeviceSpace {
 public:
  using memory_space = EmulatedDeviceSpace;
  using size_type = std::size_t;
  using execution_space = Kokkos::Serial;
  using device_type = Kokkos::Device<execution_space, memory_space>;

  /// Its name, as Kokkos Tools and kbuf's messages see it (the same as the foreign space of
  /// earlier Kokkos versions).
  static constexpr const char* name() { return "KbufForeignSpace"; }

  template <class ExecutionSpace>
  void* allocate(const ExecutionSpace&, std::size_t n) const {
    return allocate(n);
  }
  template <class ExecutionSpace>
  void* allocate(const ExecutionSpace&, const char* label, std::size_t n,
                 std::size_t logical = 0) const {
    return allocate(label, n, logical);
  }
  void* allocate(std::size_t n) const { return allocate("[unlabeled]", n); }
  void* allocate(const char* label, std::size_t n, std::size_t logical = 0) const {
    void* p = nullptr;
    if (n != 0) {
      p = ::operator new(n, std::align_val_t(emulated_allocation_alignment), std::nothrow);
    }
    if (p == nullptr || reinterpret_cast<std::uintptr_t>(p) % emulated_allocation_alignment != 0) {
      Kokkos::Impl::throw_bad_alloc(name(), n, label);
    }
    emulated_detail::Registry::get().add(p, n);
    if (Kokkos::Profiling::profileLibraryLoaded()) {
      Kokkos::Profiling::allocateData(Kokkos::Tools::make_space_handle(name()), label, p,
                                      logical > 0 ? logical : n);
    }
    return p;
  }

  void deallocate(void* p, std::size_t n) const { deallocate("[unlabeled]", p, n); }
  void deallocate(const char* label, void* p, std::size_t n, std::size_t logical = 0) const {
    if (p == nullptr) return;
    Kokkos::fence("kbuf_test::EmulatedDeviceSpace::deallocate: fence before free");
    if (Kokkos::Profiling::profileLibraryLoaded()) {
      Kokkos::Profiling::deallocateData(Kokkos::Tools::make_space_handle(name()), label, p,
                                        logical > 0 ? logical : n);
    }
    emulated_detail::Registry::get().remove(p, n);
  }
};

/// True when [p, p + n) lies inside one live allocation of the emulated space.
inline bool emulated_space_live(const void* p, std::size_t n) {
  return emulated_detail::Registry::get().is_live(p, n);
}

/// True when [p, p + n) is memory the emulated space freed and still keeps back.
inline bool emulated_space_freed(const void* p, std::size_t n) {
  return emulated_detail::Registry::get().is_freed(p, n);
}

namespace emulated_detail {

/// A copy between the emulated space (one side or both) and host memory; every emulated side is
/// checked first. It is synchronous, and ordered after the earlier work of a host execution
/// space instance without a fence, because host backends finish a kernel before returning (as a
/// device's copy on a stream follows the stream's work; no fence in either).
template <bool DstEmulated, bool SrcEmulated>
inline void copy(void* dst, const void* src, std::size_t n) {
  if (n == 0) return;
  if (DstEmulated) Registry::get().check(dst, n, "deep_copy writes");
  if (SrcEmulated) Registry::get().check(src, n, "deep_copy reads");
  std::memmove(dst, src, n);
}

}  // namespace emulated_detail
}  // namespace kbuf_test

namespace Kokkos {
namespace Impl {

// Like a device's memory: neither it nor HostSpace may reach the other's Views; deep_copy
// connects them.
template <>
struct MemorySpaceAccess<Kokkos::HostSpace, kbuf_test::EmulatedDeviceSpace> {
  enum : bool { assignable = false };
  enum : bool { accessible = false };
  enum : bool { deepcopy = true };
};
template <>
struct MemorySpaceAccess<kbuf_test::EmulatedDeviceSpace, Kokkos::HostSpace> {
  enum : bool { assignable = false };
  enum : bool { accessible = false };
  enum : bool { deepcopy = true };
};

template <class ExecutionSpace>
struct DeepCopy<kbuf_test::EmulatedDeviceSpace, kbuf_test::EmulatedDeviceSpace, ExecutionSpace> {
  DeepCopy(void* dst, const void* src, size_t n) {
    kbuf_test::emulated_detail::copy<true, true>(dst, src, n);
  }
  DeepCopy(const ExecutionSpace&, void* dst, const void* src, size_t n) {
    kbuf_test::emulated_detail::copy<true, true>(dst, src, n);
  }
};
template <class ExecutionSpace>
struct DeepCopy<kbuf_test::EmulatedDeviceSpace, Kokkos::HostSpace, ExecutionSpace> {
  DeepCopy(void* dst, const void* src, size_t n) {
    kbuf_test::emulated_detail::copy<true, false>(dst, src, n);
  }
  DeepCopy(const ExecutionSpace&, void* dst, const void* src, size_t n) {
    kbuf_test::emulated_detail::copy<true, false>(dst, src, n);
  }
};
template <class ExecutionSpace>
struct DeepCopy<Kokkos::HostSpace, kbuf_test::EmulatedDeviceSpace, ExecutionSpace> {
  DeepCopy(void* dst, const void* src, size_t n) {
    kbuf_test::emulated_detail::copy<false, true>(dst, src, n);
  }
  DeepCopy(const ExecutionSpace&, void* dst, const void* src, size_t n) {
    kbuf_test::emulated_detail::copy<false, true>(dst, src, n);
  }
};

}  // namespace Impl

// The space's execution space (Serial) may access it, as a device's execution space may access
// the device's memory: Kokkos 4 allocates a View only with an execution space that can
// (ViewMapping::allocate_shared asserts it). HostSpace and the default host execution space,
// which is not Serial, may not: Kokkos' check of a View access in host code asks
// SpaceAccessibility<DefaultHostExecutionSpace, EmulatedDeviceSpace>, and aborts.
template <>
struct SpaceAccessibility<kbuf_test::EmulatedDeviceSpace::execution_space,
                          kbuf_test::EmulatedDeviceSpace> {
  enum : bool { accessible = true };
  enum : bool { assignable = false };
  enum : bool { deepcopy = true };
};

// The space itself as the accessing space, which the mdspan-based View asks when it converts
// accessors: as Kokkos computes it for any memory space, but with the access of the space's
// execution space (Serial, above) where Kokkos asks its execution space's memory space
// (HostSpace), and without Kokkos' check that that memory space reaches this one (a device's
// execution space works in the device's own memory; this one's is Serial's, HostSpace).
template <class MemorySpace>
struct SpaceAccessibility<kbuf_test::EmulatedDeviceSpace, MemorySpace> {
  enum : bool {
    accessible =
        SpaceAccessibility<kbuf_test::EmulatedDeviceSpace::execution_space, MemorySpace>::accessible
  };
  enum : bool {
    assignable = Impl::MemorySpaceAccess<kbuf_test::EmulatedDeviceSpace, MemorySpace>::assignable
  };
  enum : bool {
    deepcopy = Impl::MemorySpaceAccess<kbuf_test::EmulatedDeviceSpace, MemorySpace>::deepcopy
  };
  using space = std::conditional_t<
      std::is_same<kbuf_test::EmulatedDeviceSpace, MemorySpace>::value || !accessible,
      kbuf_test::EmulatedDeviceSpace,
      Kokkos::Device<kbuf_test::EmulatedDeviceSpace::execution_space, MemorySpace>>;
};

}  // namespace Kokkos

// The allocation record: the header lives in the space and is read and written through
// DeepCopy, as CudaSpace's and HIPSpace's are.
KOKKOS_IMPL_HOST_INACCESSIBLE_SHARED_ALLOCATION_SPECIALIZATION(kbuf_test::EmulatedDeviceSpace);

namespace kbuf_test {

static_assert(Kokkos::is_memory_space<EmulatedDeviceSpace>::value,
              "the emulated space must be a Kokkos memory space");
static_assert(!Kokkos::SpaceAccessibility<Kokkos::HostSpace, EmulatedDeviceSpace>::accessible,
              "the host must not reach the emulated space");
static_assert(
    !Kokkos::SpaceAccessibility<Kokkos::DefaultHostExecutionSpace, EmulatedDeviceSpace>::accessible,
    "host execution spaces must not reach the emulated space");
static_assert(sizeof(Kokkos::Impl::SharedAllocationHeader) == 128,
              "View data sits 128 bytes past the 256-aligned allocation only with a 128-byte "
              "allocation header");

}  // namespace kbuf_test

#include <kbuf/any_space.hpp>  // a space libkbuf does not hold the allocator for

#endif  // KBUF_TEST_EMULATED_DEVICE_SPACE_HPP
