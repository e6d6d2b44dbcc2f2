#ifndef KBUF_IMPL_VIRTUAL_MEMORY_HPP
#define KBUF_IMPL_VIRTUAL_MEMORY_HPP

/// @file
/// Growth in place: one range of virtual addresses reserved for a buffer, with memory committed
/// at its end as the buffer grows and given back when it shrinks, so that the buffer never
/// moves. `VirtualRange<MemorySpace>` does it for the spaces whose memory has such an API: the
/// host (`mmap` with `PROT_NONE`, `mprotect`, `madvise(MADV_DONTNEED)`, `munmap`), CUDA device
/// memory (the driver's `cuMemAddressReserve`, `cuMemCreate`, `cuMemMap`, `cuMemSetAccess`) and
/// HIP device memory (`hipMemAddressReserve` and the rest, ROCm 5.2 and later, where the device
/// supports them). Every other space (a foreign space, managed or pinned memory) has none:
/// `VirtualRange<S>::unsupported()` says why, and the allocator grows as without it.
///
/// Memory is committed in chunks, each a multiple of the range's granule (the host: 2 MiB of
/// pages, committed without being touched; CUDA and HIP: the device's recommended allocation
/// granularity, 2 MiB on current GPUs); a chunk is given back whole. Each chunk is reported to
/// Kokkos Tools as an allocation of its own in the memory space (`allocateData`, then
/// `deallocateData` when given back), labelled as the allocator's buffer. Not thread-safe.
/// Not part of the API.

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include <Kokkos_Core.hpp>

#if defined(__unix__) || defined(__APPLE__)
#include <sys/mman.h>
#include <unistd.h>
#define KBUF_IMPL_HOST_VIRTUAL_MEMORY 1
#else
#define KBUF_IMPL_HOST_VIRTUAL_MEMORY 0
#endif

#if defined(KOKKOS_ENABLE_CUDA)
#include <cuda.h>
#include <cuda_runtime.h>
#endif
#if defined(KOKKOS_ENABLE_HIP)
#include <hip/hip_runtime.h>
#if defined(HIP_VERSION) && HIP_VERSION >= 50200000
#define KBUF_IMPL_HIP_VIRTUAL_MEMORY 1
#else
#define KBUF_IMPL_HIP_VIRTUAL_MEMORY 0
#endif
#endif

#include <kbuf/config.hpp>
#include <kbuf/impl/errors.hpp>
#include <kbuf/impl/kokkos_version.hpp>
#include <kbuf/impl/passthrough.hpp>

#ifndef KBUF_GROW_IN_PLACE
#define KBUF_GROW_IN_PLACE 0
#endif

namespace kbuf {
namespace Impl {

/// True when an allocator made now grows in place where its space allows:
/// `KBUF_GROW_IN_PLACE=1` (any value but "0") turns it on, `KBUF_GROW_IN_PLACE=0` off; unset
/// or empty, the configured default holds.
inline bool grow_in_place_requested() noexcept {
  return switch_requested("KBUF_GROW_IN_PLACE", KBUF_GROW_IN_PLACE != 0);
}

/// Writes `what` on stderr, the first time only in the process (a message that every allocator
/// of a pool would repeat).
inline void say_once_per_process(const std::string& what) noexcept {
  static std::atomic<bool> said{false};
  if (said.exchange(true)) return;
  std::fprintf(stderr, "%s\n", what.c_str());
}

/// One committed chunk: its offset in the range, its bytes, and (CUDA, HIP) the handle of its
/// physical memory.
struct VirtualChunk {
  std::size_t offset;
  std::size_t bytes;
  unsigned long long handle;
};

/// What each space's API does; the range keeps the bookkeeping (VirtualRange below).
/// `reserve` returns the base of `bytes` of addresses aligned to `alignment` (null: `error`
/// says why); `map` commits [at, at + bytes) and returns its handle; `unmap` gives it back.
template <class MemorySpace, class = void>
struct VirtualMemoryApi {
  static const char* unsupported() noexcept {
    return "its memory space has no virtual memory API kbuf knows (growth in place covers the "
           "host, CUDA device memory and HIP device memory)";
  }
  static std::size_t granule() noexcept { return 0; }
  static std::size_t default_reservation() noexcept { return 0; }
  static void* reserve(std::size_t, std::size_t, std::string& error) {
    error = unsupported();
    return nullptr;
  }
  static bool map(void*, std::size_t, unsigned long long&, std::string& error) {
    error = unsupported();
    return false;
  }
  static void unmap(void*, std::size_t, unsigned long long) noexcept {}
  static void release(void*, std::size_t) noexcept {}
};

#if KBUF_IMPL_HOST_VIRTUAL_MEMORY
template <>
struct VirtualMemoryApi<Kokkos::HostSpace> {
  static const char* unsupported() noexcept { return nullptr; }
  static std::size_t granule() noexcept {
    const long page = ::sysconf(_SC_PAGESIZE);
    const std::size_t p = page > 0 ? static_cast<std::size_t>(page) : 4096;
    const std::size_t two_mib = std::size_t{2} << 20;
    return p > two_mib ? p : two_mib;  // a multiple of the page (both are powers of two)
  }
  // The host's memory (at most 1 TiB): address space, not memory; a buffer that outgrows it is
  // served as without growth in place and reserves again once empty.
  static std::size_t default_reservation() noexcept {
    const long pages = ::sysconf(_SC_PHYS_PAGES);
    const long page = ::sysconf(_SC_PAGESIZE);
    const std::size_t most = std::size_t{1} << 40;
    if (pages <= 0 || page <= 0) return std::size_t{64} << 30;
    const std::size_t total = static_cast<std::size_t>(pages) * static_cast<std::size_t>(page);
    return total < most ? total : most;
  }
  static void* reserve(std::size_t bytes, std::size_t alignment, std::string& error) {
    // mmap aligns to a page; the granule (2 MiB at least) and larger alignments take slack.
    const std::size_t a = alignment > granule() ? alignment : granule();
    const std::size_t total = bytes + a;
    void* raw =
        ::mmap(nullptr, total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (raw == MAP_FAILED) {
      error = concat("mmap of ", total, " bytes of addresses failed: ", std::strerror(errno));
      return nullptr;
    }
    const std::uintptr_t r = reinterpret_cast<std::uintptr_t>(raw);
    const std::uintptr_t base = (r + (a - 1)) & ~static_cast<std::uintptr_t>(a - 1);
    // The slack in front and behind goes back at once: the range is [base, base + bytes).
    if (base != r) ::munmap(raw, base - r);
    const std::size_t behind = total - (base - r) - bytes;
    if (behind != 0) ::munmap(reinterpret_cast<void*>(base + bytes), behind);
#if defined(MADV_HUGEPAGE)
    // Transparent huge pages where the system gives them on request: a granule's first touch
    // is one fault, not 512 (best effort; nothing changes where it refuses).
    (void)::madvise(reinterpret_cast<void*>(base), bytes, MADV_HUGEPAGE);
#endif
    return reinterpret_cast<void*>(base);
  }
  static bool map(void* at, std::size_t bytes, unsigned long long& handle, std::string& error) {
    handle = 0;
    if (::mprotect(at, bytes, PROT_READ | PROT_WRITE) != 0) {
      error = concat("mprotect of ", bytes, " bytes failed: ", std::strerror(errno));
      return false;
    }
    return true;
  }
  static void unmap(void* at, std::size_t bytes, unsigned long long) noexcept {
    // The pages go back to the system at once; the addresses stay reserved.
    (void)::madvise(at, bytes, MADV_DONTNEED);
    (void)::mprotect(at, bytes, PROT_NONE);
  }
  static void release(void* base, std::size_t bytes) noexcept {
    (void)::munmap(base, bytes);
  }
};
#endif

#if defined(KOKKOS_ENABLE_CUDA)
template <>
struct VirtualMemoryApi<Kokkos::CudaSpace> {
  static const char* unsupported() noexcept { return nullptr; }
  static bool device_prop(CUmemAllocationProp& prop, std::string& error) {
    int device = 0;
    // Makes the device's primary context current on the calling thread (driver calls need it).
    if (cudaGetDevice(&device) != cudaSuccess || cudaSetDevice(device) != cudaSuccess) {
      error = "no current CUDA device";
      return false;
    }
    std::memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = device;
    return true;
  }
  static std::string said(const char* call, CUresult r) {
    const char* text = nullptr;
    if (cuGetErrorString(r, &text) != CUDA_SUCCESS || text == nullptr) text = "unknown error";
    return concat(call, " failed: ", text);
  }
  static std::size_t granule() noexcept {
    CUmemAllocationProp prop;
    std::string error;
    std::size_t g = 0;
    if (!device_prop(prop, error) ||
        cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED) !=
            CUDA_SUCCESS) {
      return 0;
    }
    return g;
  }
  // The device's memory: its addresses are plentiful (the GPU's virtual space is far larger).
  static std::size_t default_reservation() noexcept {
    std::size_t free_bytes = 0, total = 0;
    if (cudaMemGetInfo(&free_bytes, &total) != cudaSuccess) return 0;
    return total;
  }
  static void* reserve(std::size_t bytes, std::size_t alignment, std::string& error) {
    CUdeviceptr p = 0;
    const CUresult r = cuMemAddressReserve(&p, bytes, alignment, 0, 0);
    if (r != CUDA_SUCCESS) {
      error = said("cuMemAddressReserve", r);
      return nullptr;
    }
    return reinterpret_cast<void*>(static_cast<std::uintptr_t>(p));
  }
  static bool map(void* at, std::size_t bytes, unsigned long long& handle, std::string& error) {
    CUmemAllocationProp prop;
    if (!device_prop(prop, error)) return false;
    CUmemGenericAllocationHandle h = 0;
    CUresult r = cuMemCreate(&h, bytes, &prop, 0);
    if (r != CUDA_SUCCESS) {
      error = said("cuMemCreate", r);
      return false;
    }
    const CUdeviceptr p = static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(at));
    r = cuMemMap(p, bytes, 0, h, 0);
    if (r != CUDA_SUCCESS) {
      error = said("cuMemMap", r);
      (void)cuMemRelease(h);
      return false;
    }
    CUmemAccessDesc access;
    std::memset(&access, 0, sizeof access);
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    r = cuMemSetAccess(p, bytes, &access, 1);
    if (r != CUDA_SUCCESS) {
      error = said("cuMemSetAccess", r);
      (void)cuMemUnmap(p, bytes);
      (void)cuMemRelease(h);
      return false;
    }
    handle = static_cast<unsigned long long>(h);
    return true;
  }
  static void unmap(void* at, std::size_t bytes, unsigned long long handle) noexcept {
    (void)cuMemUnmap(static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(at)), bytes);
    (void)cuMemRelease(static_cast<CUmemGenericAllocationHandle>(handle));
  }
  static void release(void* base, std::size_t bytes) noexcept {
    (void)cuMemAddressFree(static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(base)), bytes);
  }
};
#endif

#if defined(KOKKOS_ENABLE_HIP)
#if KBUF_IMPL_HIP_VIRTUAL_MEMORY
template <>
struct VirtualMemoryApi<hip_memory_space> {
  static const char* unsupported() noexcept { return nullptr; }
  static bool device_prop(hipMemAllocationProp& prop, std::string& error) {
    int device = 0;
    if (hipGetDevice(&device) != hipSuccess) {
      error = "no current HIP device";
      return false;
    }
    std::memset(&prop, 0, sizeof prop);
    prop.type = hipMemAllocationTypePinned;
    prop.location.type = hipMemLocationTypeDevice;
    prop.location.id = device;
    return true;
  }
  static std::string said(const char* call, hipError_t r) {
    return concat(call, " failed: ", hipGetErrorString(r));
  }
  static std::size_t granule() noexcept {
    hipMemAllocationProp prop;
    std::string error;
    std::size_t g = 0;
    if (!device_prop(prop, error) ||
        hipMemGetAllocationGranularity(&g, &prop, hipMemAllocationGranularityRecommended) !=
            hipSuccess) {
      return 0;
    }
    return g;
  }
  static std::size_t default_reservation() noexcept {
    std::size_t free_bytes = 0, total = 0;
    if (hipMemGetInfo(&free_bytes, &total) != hipSuccess) return 0;
    return total;
  }
  static void* reserve(std::size_t bytes, std::size_t alignment, std::string& error) {
    void* p = nullptr;
    const hipError_t r = hipMemAddressReserve(&p, bytes, alignment, nullptr, 0);
    if (r != hipSuccess) {
      error = said("hipMemAddressReserve", r);
      return nullptr;
    }
    return p;
  }
  static bool map(void* at, std::size_t bytes, unsigned long long& handle, std::string& error) {
    hipMemAllocationProp prop;
    if (!device_prop(prop, error)) return false;
    hipMemGenericAllocationHandle_t h{};
    hipError_t r = hipMemCreate(&h, bytes, &prop, 0);
    if (r != hipSuccess) {
      error = said("hipMemCreate", r);
      return false;
    }
    r = hipMemMap(at, bytes, 0, h, 0);
    if (r != hipSuccess) {
      error = said("hipMemMap", r);
      (void)hipMemRelease(h);
      return false;
    }
    hipMemAccessDesc access;
    std::memset(&access, 0, sizeof access);
    access.location = prop.location;
    access.flags = hipMemAccessFlagsProtReadWrite;
    r = hipMemSetAccess(at, bytes, &access, 1);
    if (r != hipSuccess) {
      error = said("hipMemSetAccess", r);
      (void)hipMemUnmap(at, bytes);
      (void)hipMemRelease(h);
      return false;
    }
    static_assert(sizeof(h) <= sizeof(unsigned long long),
                  "a HIP allocation handle fits in a word");
    handle = 0;
    std::memcpy(&handle, &h, sizeof h);
    return true;
  }
  static void unmap(void* at, std::size_t bytes, unsigned long long handle) noexcept {
    hipMemGenericAllocationHandle_t h{};
    std::memcpy(&h, &handle, sizeof h);
    (void)hipMemUnmap(at, bytes);
    (void)hipMemRelease(h);
  }
  static void release(void* base, std::size_t bytes) noexcept {
    (void)hipMemAddressFree(base, bytes);
  }
};
#else
template <>
struct VirtualMemoryApi<hip_memory_space> : VirtualMemoryApi<void> {
  static const char* unsupported() noexcept {
    return "HIP's virtual memory API (hipMemAddressReserve and the rest) needs ROCm 5.2 or later";
  }
};
#endif
#endif

/// A reserved range of addresses in `MemorySpace` and the chunks committed at its start.
template <class MemorySpace>
class VirtualRange {
  using api = VirtualMemoryApi<MemorySpace>;

 public:
  VirtualRange() = default;
  VirtualRange(const VirtualRange&) = delete;
  VirtualRange& operator=(const VirtualRange&) = delete;
  ~VirtualRange() { release(); }

  /// Null where the space has growth in place, else why not.
  static const char* unsupported() noexcept { return api::unsupported(); }
  /// Bytes of addresses reserved when no size is asked for: the space's memory.
  static std::size_t default_reservation() noexcept { return api::default_reservation(); }

  /// Reserves `bytes` (rounded up to the granule) aligned to `alignment` and to the granule.
  /// Precondition: nothing reserved. False, with `error` set, where it cannot.
  bool reserve(std::size_t bytes, std::size_t alignment, std::string& error) {
    const std::size_t g = api::granule();
    if (g == 0) {
      error = unsupported() != nullptr ? std::string(unsupported())
                                       : std::string("the allocation granularity is unknown");
      return false;
    }
    if (bytes > (std::size_t{1} << 62)) {
      error = concat("a reservation of ", bytes, " bytes is more than any address space holds");
      return false;
    }
    const std::size_t n = (bytes + (g - 1)) / g * g;
    const std::size_t a = alignment > g ? alignment : g;
    void* base = api::reserve(n, a, error);
    if (base == nullptr) return false;
    base_ = static_cast<unsigned char*>(base);
    reserved_ = n;
    granule_ = g;
    return true;
  }

  /// Commits memory so that [base, base + bytes) is usable: the chunk from the committed end
  /// to `bytes` rounded up to the granule. False, with `error` set, when that passes the
  /// reservation or the space refuses (nothing changes then).
  bool grow_to(std::size_t bytes, const std::string& label, std::string& error) {
    if (bytes <= committed_) return true;
    const std::size_t end = round_up(bytes);
    if (end == 0 || end > reserved_) {
      error = concat(bytes, " bytes pass the ", reserved_, " bytes of addresses reserved");
      return false;
    }
    try {
      chunks_.reserve(chunks_.size() + 1);
    } catch (const std::bad_alloc&) {
      error = "no host memory left to record a chunk";
      return false;
    }
    const std::size_t n = end - committed_;
    unsigned long long handle = 0;
    if (!api::map(base_ + committed_, n, handle, error)) return false;
    chunks_.push_back(VirtualChunk{committed_, n, handle});
    if (Kokkos::Profiling::profileLibraryLoaded()) {
      Kokkos::Profiling::allocateData(Kokkos::Profiling::make_space_handle(MemorySpace::name()),
                                      label + "::buffer", base_ + committed_, n);
    }
    committed_ = end;
    return true;
  }

  /// Gives back the chunks that lie wholly at or above `bytes`. The caller has fenced every
  /// use of them. Returns the bytes given back.
  std::size_t shrink_to(std::size_t bytes, const std::string& label) noexcept {
    std::size_t given = 0;
    while (!chunks_.empty() && chunks_.back().offset >= bytes) {
      const VirtualChunk c = chunks_.back();
      chunks_.pop_back();
      if (Kokkos::Profiling::profileLibraryLoaded()) {
        Kokkos::Profiling::deallocateData(Kokkos::Profiling::make_space_handle(MemorySpace::name()),
                                          label + "::buffer", base_ + c.offset, c.bytes);
      }
      api::unmap(base_ + c.offset, c.bytes, c.handle);
      committed_ = c.offset;
      given += c.bytes;
    }
    return given;
  }

  /// Gives back every chunk and the addresses. The caller has fenced every use.
  void release(const std::string& label = std::string()) noexcept {
    if (base_ == nullptr) return;
    (void)shrink_to(0, label);
    api::release(base_, reserved_);
    base_ = nullptr;
    reserved_ = committed_ = 0;
  }

  unsigned char* base() const noexcept { return base_; }
  std::size_t reserved() const noexcept { return reserved_; }
  std::size_t committed() const noexcept { return committed_; }
  std::size_t granule() const noexcept { return granule_; }
  /// `bytes` rounded up to the granule (0 on overflow).
  std::size_t round_up(std::size_t bytes) const noexcept {
    if (granule_ == 0 || bytes > ~std::size_t{0} - (granule_ - 1)) return 0;
    return (bytes + (granule_ - 1)) / granule_ * granule_;
  }

 private:
  unsigned char* base_ = nullptr;
  std::size_t reserved_ = 0;
  std::size_t committed_ = 0;
  std::size_t granule_ = 0;
  std::vector<VirtualChunk> chunks_;
};

}  // namespace Impl
}  // namespace kbuf

#endif  // KBUF_IMPL_VIRTUAL_MEMORY_HPP
