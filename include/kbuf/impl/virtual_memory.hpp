#ifndef KBUF_IMPL_VIRTUAL_MEMORY_HPP
#define KBUF_IMPL_VIRTUAL_MEMORY_HPP

/// @file
/// Growth in place: one range of virtual addresses reserved for a buffer, with memory committed
/// at its end as the buffer grows and given back when it shrinks, so that the buffer never
/// moves. `VirtualRange<MemorySpace>` does it for the spaces whose memory has such an API: the
/// host (`mmap` with `PROT_NONE`, `mprotect`, `madvise(MADV_DONTNEED)`, `munmap`), CUDA device
/// memory (the driver's `cuMemAddressReserve`, `cuMemCreate`, `cuMemMap`, `cuMemSetAccess`) and
/// HIP device memory (`hipMemAddressReserve` and the rest, ROCm 5.3 and later, where the device
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
#include <type_traits>
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
#if defined(HIP_VERSION) && HIP_VERSION >= 50300000
#define KBUF_IMPL_HIP_VIRTUAL_MEMORY 1
#else
#define KBUF_IMPL_HIP_VIRTUAL_MEMORY 0
#endif
#endif

#include <kbuf/config.hpp>
#include <kbuf/impl/errors.hpp>
#include <kbuf/impl/kokkos_version.hpp>
#include <kbuf/impl/passthrough.hpp>
#include <kbuf/impl/virtual_memory_fwd.hpp>

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

/// What each space's API does; the range keeps the bookkeeping (VirtualRange below). Every
/// call names the device (the allocator's instance's; 0 on the host). `unsupported_on` says
/// why a device cannot grow in place (empty: it can). `reserve` returns the base of `bytes` of
/// addresses aligned to `alignment` (null: `error` says why); `map` commits [at, at + bytes)
/// and returns its handle; `unmap` gives it back.
template <class MemorySpace, class>
struct VirtualMemoryApi {
  static const char* unsupported() noexcept {
    return "its memory space has no virtual memory API kbuf knows (growth in place covers the "
           "host, CUDA device memory and HIP device memory)";
  }
  static std::string unsupported_on(int) { return unsupported(); }
  static std::size_t granule(int) noexcept { return 0; }
  static std::size_t default_reservation(int) noexcept { return 0; }
  static void* reserve(int, std::size_t, std::size_t, std::string& error) {
    error = unsupported();
    return nullptr;
  }
  static bool map(int, void*, std::size_t, unsigned long long&, std::string& error) {
    error = unsupported();
    return false;
  }
  static void unmap(int, void*, std::size_t, unsigned long long) noexcept {}
  static void release(int, void*, std::size_t) noexcept {}
};

#if KBUF_IMPL_HOST_VIRTUAL_MEMORY
template <>
struct VirtualMemoryApi<Kokkos::HostSpace> {
  static const char* unsupported() noexcept { return nullptr; }
  static std::string unsupported_on(int) { return std::string(); }
  static std::size_t granule(int = 0) noexcept {
    const long page = ::sysconf(_SC_PAGESIZE);
    const std::size_t p = page > 0 ? static_cast<std::size_t>(page) : 4096;
    const std::size_t two_mib = std::size_t{2} << 20;
    return p > two_mib ? p : two_mib;  // a multiple of the page (both are powers of two)
  }
  // The host's memory (at most 1 TiB): address space, not memory; a buffer that outgrows it is
  // served as without growth in place and reserves again once empty.
  static std::size_t default_reservation(int) noexcept {
    const long pages = ::sysconf(_SC_PHYS_PAGES);
    const long page = ::sysconf(_SC_PAGESIZE);
    const std::size_t most = std::size_t{1} << 40;
    if (pages <= 0 || page <= 0) return std::size_t{64} << 30;
    const std::size_t total = static_cast<std::size_t>(pages) * static_cast<std::size_t>(page);
    return total < most ? total : most;
  }
  static void* reserve(int, std::size_t bytes, std::size_t alignment, std::string& error) {
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
  static bool map(int, void* at, std::size_t bytes, unsigned long long& handle,
                  std::string& error) {
    handle = 0;
    if (::mprotect(at, bytes, PROT_READ | PROT_WRITE) != 0) {
      error = concat("mprotect of ", bytes, " bytes failed: ", std::strerror(errno));
      return false;
    }
    return true;
  }
  static void unmap(int, void* at, std::size_t bytes, unsigned long long) noexcept {
    // The pages go back to the system at once; the addresses stay reserved.
    (void)::madvise(at, bytes, MADV_DONTNEED);
    (void)::mprotect(at, bytes, PROT_NONE);
  }
  static void release(int, void* base, std::size_t bytes) noexcept {
    (void)::munmap(base, bytes);
  }
};
#endif

/// The device of an execution space instance (growth in place reserves and commits there):
/// `cuda_device()`, `hip_device()`; 0 for the host.
template <class ExecSpace>
int device_of(const ExecSpace& exec) noexcept {
#if defined(KOKKOS_ENABLE_CUDA)
  if constexpr (std::is_same<ExecSpace, Kokkos::Cuda>::value) return exec.cuda_device();
#endif
#if defined(KOKKOS_ENABLE_HIP)
  if constexpr (std::is_same<ExecSpace, hip_execution_space>::value) return exec.hip_device();
#endif
  (void)exec;
  return 0;
}

/// What growth in place asks of a device driver, each call naming its device, behind one narrow
/// layer: `Driver` is `CudaDriver` or `HipDriver` below, or the tests' strict model of a driver
/// (tests/support/model_driver.hpp: several devices, a current device per thread that starts at
/// 0, stub behaviour, commits that fail). Every call runs with the allocator's device current
/// (a new host thread starts on device 0, and Kokkos may run on another), which it was not
/// before, and goes back to the thread's device after. The capability is decided once per
/// reservation: the device's attribute where the runtime has one; a runtime whose API is known to
/// be stubs is refused; a "success" without an address is a failure with a reason. Memory is
/// created exportable (a POSIX file descriptor handle) and GPUDirect RDMA capable where the
/// device says it can be, so that CUDA IPC and GPU-aware MPI can use a grown temporary.
enum class DeviceAttribute { virtual_memory, posix_fd_handle, rdma_with_virtual_memory };

template <class Driver>
struct DeviceVirtualMemory {
  /// Makes `device` current for the guard's lifetime, and the thread's device again after.
  class OnDevice {
   public:
    explicit OnDevice(int device) {
      int current = 0;
      if (!Driver::current_device(current)) {
        error_ = concat("no current ", Driver::name(), " device");
        return;
      }
      if (current != device) {
        if (!Driver::set_device(device)) {
          error_ = concat("cannot make ", Driver::name(), " device ", device, " current");
          return;
        }
        previous_ = current;
      }
      ok_ = true;
    }
    ~OnDevice() {
      if (previous_ >= 0) (void)Driver::set_device(previous_);
    }
    OnDevice(const OnDevice&) = delete;
    OnDevice& operator=(const OnDevice&) = delete;
    bool ok() const noexcept { return ok_; }
    const std::string& error() const noexcept { return error_; }

   private:
    int previous_ = -1;
    bool ok_ = false;
    std::string error_;
  };

  /// Null where the runtime has a working API at all, else why not.
  static const char* unsupported() noexcept { return Driver::missing_api(); }

  /// Empty where `device` can grow in place, else why not (asked once per reservation).
  static std::string unsupported_on(int device) {
    if (const char* why = Driver::missing_api()) return why;
    OnDevice on(device);
    if (!on.ok()) return on.error();
    const int vmm = Driver::attribute(DeviceAttribute::virtual_memory, device);
    if (vmm == 0) {
      return concat(Driver::name(), " device ", device,
                    " does not support virtual memory management (",
                    Driver::attribute_name(DeviceAttribute::virtual_memory), " is 0)");
    }
    return std::string();
  }

  /// What memory created on `device` is asked to be: exportable, RDMA capable.
  struct Export {
    bool posix_fd = false;
    bool rdma = false;
  };
  static Export export_of(int device) noexcept {
    Export e;
    e.posix_fd = Driver::attribute(DeviceAttribute::posix_fd_handle, device) > 0;
    e.rdma = Driver::attribute(DeviceAttribute::rdma_with_virtual_memory, device) > 0;
    return e;
  }

  static std::size_t granule(int device) noexcept {
    OnDevice on(device);
    if (!on.ok()) return 0;
    const Export e = export_of(device);
    std::size_t g = 0;
    return Driver::granularity(device, e.posix_fd, e.rdma, g) ? g : 0;
  }
  static std::size_t default_reservation(int device) noexcept {
    OnDevice on(device);
    std::size_t free_bytes = 0, total = 0;
    if (!on.ok() || !Driver::mem_info(free_bytes, total)) return 0;
    return total;
  }
  static void* reserve(int device, std::size_t bytes, std::size_t alignment, std::string& error) {
    OnDevice on(device);
    if (!on.ok()) {
      error = on.error();
      return nullptr;
    }
    void* p = nullptr;
    if (!Driver::address_reserve(p, bytes, alignment, error)) return nullptr;
    if (p == nullptr) {
      error = concat(Driver::reserve_name(),
                     " returned success without an address (a runtime whose virtual memory API "
                     "is a stub)");
      return nullptr;
    }
    return p;
  }
  static bool map(int device, void* at, std::size_t bytes, unsigned long long& handle,
                  std::string& error) {
    OnDevice on(device);
    if (!on.ok()) {
      error = on.error();
      return false;
    }
    const Export e = export_of(device);
    unsigned long long h = 0;
    if (!Driver::create(h, bytes, device, e.posix_fd, e.rdma, error)) return false;
    if (!Driver::map(at, bytes, h, error)) {
      Driver::release_handle(h);
      return false;
    }
    if (!Driver::set_access(at, bytes, device, error)) {
      Driver::unmap(at, bytes);
      Driver::release_handle(h);
      return false;
    }
    handle = h;
    return true;
  }
  static void unmap(int device, void* at, std::size_t bytes, unsigned long long handle) noexcept {
    OnDevice on(device);
    Driver::unmap(at, bytes);
    Driver::release_handle(handle);
  }
  static void release(int device, void* base, std::size_t bytes) noexcept {
    OnDevice on(device);
    Driver::address_free(base, bytes);
  }
};

#if defined(KOKKOS_ENABLE_CUDA)
/// The CUDA driver API's virtual memory calls (the runtime makes the device's primary context
/// current: `cudaSetDevice`).
struct CudaDriver {
  static const char* name() noexcept { return "CUDA"; }
  static const char* reserve_name() noexcept { return "cuMemAddressReserve"; }
  static const char* missing_api() noexcept { return nullptr; }
  static std::string said(const char* call, CUresult r) {
    const char* text = nullptr;
    if (cuGetErrorString(r, &text) != CUDA_SUCCESS || text == nullptr) text = "unknown error";
    return concat(call, " failed: ", text);
  }
  static bool current_device(int& d) noexcept { return cudaGetDevice(&d) == cudaSuccess; }
  static bool set_device(int d) noexcept { return cudaSetDevice(d) == cudaSuccess; }
  static CUdevice_attribute code(DeviceAttribute a) noexcept {
    switch (a) {
      case DeviceAttribute::virtual_memory:
        return CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED;
      case DeviceAttribute::posix_fd_handle:
        return CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED;
      default:
        return CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED;
    }
  }
  static const char* attribute_name(DeviceAttribute a) noexcept {
    switch (a) {
      case DeviceAttribute::virtual_memory:
        return "CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED";
      case DeviceAttribute::posix_fd_handle:
        return "CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED";
      default:
        return "CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED";
    }
  }
  /// The attribute's value, or -1 where it cannot be asked.
  static int attribute(DeviceAttribute a, int device) noexcept {
    CUdevice d = 0;
    int v = 0;
    if (cuDeviceGet(&d, device) != CUDA_SUCCESS) return -1;
    return cuDeviceGetAttribute(&v, code(a), d) == CUDA_SUCCESS ? v : -1;
  }
  static CUmemAllocationProp prop(int device, bool posix_fd, bool rdma) noexcept {
    CUmemAllocationProp p;
    std::memset(&p, 0, sizeof p);
    p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    p.location.id = device;
    p.requestedHandleTypes =
        posix_fd ? CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR : CU_MEM_HANDLE_TYPE_NONE;
    p.allocFlags.gpuDirectRDMACapable = rdma ? 1 : 0;
    return p;
  }
  static bool granularity(int device, bool posix_fd, bool rdma, std::size_t& g) noexcept {
    const CUmemAllocationProp p = prop(device, posix_fd, rdma);
    return cuMemGetAllocationGranularity(&g, &p, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED) ==
           CUDA_SUCCESS;
  }
  static bool mem_info(std::size_t& free_bytes, std::size_t& total) noexcept {
    return cudaMemGetInfo(&free_bytes, &total) == cudaSuccess;
  }
  static bool address_reserve(void*& p, std::size_t bytes, std::size_t alignment,
                              std::string& error) {
    CUdeviceptr d = 0;
    const CUresult r = cuMemAddressReserve(&d, bytes, alignment, 0, 0);
    if (r != CUDA_SUCCESS) {
      error = said("cuMemAddressReserve", r);
      return false;
    }
    p = reinterpret_cast<void*>(static_cast<std::uintptr_t>(d));
    return true;
  }
  static bool create(unsigned long long& h, std::size_t bytes, int device, bool posix_fd, bool rdma,
                     std::string& error) {
    const CUmemAllocationProp p = prop(device, posix_fd, rdma);
    CUmemGenericAllocationHandle handle = 0;
    const CUresult r = cuMemCreate(&handle, bytes, &p, 0);
    if (r != CUDA_SUCCESS) {
      error = said("cuMemCreate", r);
      return false;
    }
    h = static_cast<unsigned long long>(handle);
    return true;
  }
  static CUdeviceptr ptr(void* at) noexcept {
    return static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(at));
  }
  static bool map(void* at, std::size_t bytes, unsigned long long h, std::string& error) {
    const CUresult r = cuMemMap(ptr(at), bytes, 0, static_cast<CUmemGenericAllocationHandle>(h), 0);
    if (r != CUDA_SUCCESS) error = said("cuMemMap", r);
    return r == CUDA_SUCCESS;
  }
  static bool set_access(void* at, std::size_t bytes, int device, std::string& error) {
    CUmemAccessDesc access;
    std::memset(&access, 0, sizeof access);
    access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access.location.id = device;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    const CUresult r = cuMemSetAccess(ptr(at), bytes, &access, 1);
    if (r != CUDA_SUCCESS) error = said("cuMemSetAccess", r);
    return r == CUDA_SUCCESS;
  }
  static void unmap(void* at, std::size_t bytes) noexcept { (void)cuMemUnmap(ptr(at), bytes); }
  static void release_handle(unsigned long long h) noexcept {
    (void)cuMemRelease(static_cast<CUmemGenericAllocationHandle>(h));
  }
  static void address_free(void* base, std::size_t bytes) noexcept {
    (void)cuMemAddressFree(ptr(base), bytes);
  }
};

template <>
struct VirtualMemoryApi<Kokkos::CudaSpace> : DeviceVirtualMemory<CudaDriver> {};
#endif

#if defined(KOKKOS_ENABLE_HIP)
/// hipDeviceAttributeVirtualMemoryManagementSupported where the runtime's headers have it
/// (detected, not assumed from a version).
template <class E, class = void>
struct hip_vmm_attribute {
  static constexpr bool known = false;
  static int get(int) noexcept { return -1; }
};
template <class E>
struct hip_vmm_attribute<
    E, std::void_t<decltype(E::hipDeviceAttributeVirtualMemoryManagementSupported)>> {
  static constexpr bool known = true;
  static int get(int device) noexcept {
    int v = 0;
    return hipDeviceGetAttribute(&v, E::hipDeviceAttributeVirtualMemoryManagementSupported,
                                 device) == hipSuccess
               ? v
               : -1;
  }
};

/// HIP's virtual memory calls. ROCm before 5.3 (the 5.2 runtime) has them as stubs that return
/// success without doing anything (hipMemAddressReserve writes no address): refused.
struct HipDriver {
  static const char* name() noexcept { return "HIP"; }
  static const char* reserve_name() noexcept { return "hipMemAddressReserve"; }
  static const char* missing_api() noexcept {
#if KBUF_IMPL_HIP_VIRTUAL_MEMORY
    return nullptr;
#else
    return "HIP's virtual memory API (hipMemAddressReserve and the rest) works from ROCm 5.3 on "
           "(in ROCm 5.2 its calls are stubs that return success)";
#endif
  }
  static bool current_device(int& d) noexcept {
    return hipGetDevice(&d) == hipSuccess;
  }
  static bool set_device(int d) noexcept {
    return hipSetDevice(d) == hipSuccess;
  }
  static const char* attribute_name(DeviceAttribute) noexcept {
    return "hipDeviceAttributeVirtualMemoryManagementSupported";
  }
  /// Only the capability exists on HIP (-1 for the others: memory is created as before).
  static int attribute(DeviceAttribute a, int device) noexcept {
    if (a != DeviceAttribute::virtual_memory) return -1;
    return hip_vmm_attribute<hipDeviceAttribute_t>::get(device);
  }
#if KBUF_IMPL_HIP_VIRTUAL_MEMORY
  static hipMemAllocationProp prop(int device) noexcept {
    hipMemAllocationProp p;
    std::memset(&p, 0, sizeof p);
    p.type = hipMemAllocationTypePinned;
    p.location.type = hipMemLocationTypeDevice;
    p.location.id = device;
    return p;
  }
  static bool granularity(int device, bool, bool, std::size_t& g) noexcept {
    const hipMemAllocationProp p = prop(device);
    return hipMemGetAllocationGranularity(&g, &p, hipMemAllocationGranularityRecommended) ==
           hipSuccess;
  }
  static bool address_reserve(void*& p, std::size_t bytes, std::size_t alignment,
                              std::string& error) {
    const hipError_t r = hipMemAddressReserve(&p, bytes, alignment, nullptr, 0);
    if (r != hipSuccess) error = concat("hipMemAddressReserve failed: ", hipGetErrorString(r));
    return r == hipSuccess;
  }
  static bool create(unsigned long long& h, std::size_t bytes, int device, bool, bool,
                     std::string& error) {
    const hipMemAllocationProp p = prop(device);
    hipMemGenericAllocationHandle_t handle{};
    const hipError_t r = hipMemCreate(&handle, bytes, &p, 0);
    if (r != hipSuccess) {
      error = concat("hipMemCreate failed: ", hipGetErrorString(r));
      return false;
    }
    static_assert(sizeof(handle) <= sizeof(unsigned long long),
                  "a HIP allocation handle fits in a word");
    h = 0;
    std::memcpy(&h, &handle, sizeof handle);
    return true;
  }
  static hipMemGenericAllocationHandle_t handle_of(unsigned long long h) noexcept {
    hipMemGenericAllocationHandle_t handle{};
    std::memcpy(&handle, &h, sizeof handle);
    return handle;
  }
  static bool map(void* at, std::size_t bytes, unsigned long long h, std::string& error) {
    const hipError_t r = hipMemMap(at, bytes, 0, handle_of(h), 0);
    if (r != hipSuccess) error = concat("hipMemMap failed: ", hipGetErrorString(r));
    return r == hipSuccess;
  }
  static bool set_access(void* at, std::size_t bytes, int device, std::string& error) {
    hipMemAccessDesc access;
    std::memset(&access, 0, sizeof access);
    access.location.type = hipMemLocationTypeDevice;
    access.location.id = device;
    access.flags = hipMemAccessFlagsProtReadWrite;
    const hipError_t r = hipMemSetAccess(at, bytes, &access, 1);
    if (r != hipSuccess) error = concat("hipMemSetAccess failed: ", hipGetErrorString(r));
    return r == hipSuccess;
  }
  static void unmap(void* at, std::size_t bytes) noexcept {
    (void)hipMemUnmap(at, bytes);
  }
  static void release_handle(unsigned long long h) noexcept {
    (void)hipMemRelease(handle_of(h));
  }
  static void address_free(void* base, std::size_t bytes) noexcept {
    (void)hipMemAddressFree(base, bytes);
  }
#else
  static bool granularity(int, bool, bool, std::size_t&) noexcept {
    return false;
  }
  static bool address_reserve(void*&, std::size_t, std::size_t, std::string& e) {
    e = missing_api();
    return false;
  }
  static bool create(unsigned long long&, std::size_t, int, bool, bool, std::string& e) {
    e = missing_api();
    return false;
  }
  static bool map(void*, std::size_t, unsigned long long, std::string& e) {
    e = missing_api();
    return false;
  }
  static bool set_access(void*, std::size_t, int, std::string& e) {
    e = missing_api();
    return false;
  }
  static void unmap(void*, std::size_t) noexcept {}
  static void release_handle(unsigned long long) noexcept {}
  static void address_free(void*, std::size_t) noexcept {}
#endif
  static bool mem_info(std::size_t& free_bytes, std::size_t& total) noexcept {
    return hipMemGetInfo(&free_bytes, &total) == hipSuccess;
  }
};

template <>
struct VirtualMemoryApi<hip_memory_space> : DeviceVirtualMemory<HipDriver> {};
#endif

/// A reserved range of addresses in `MemorySpace` and the chunks committed at its start, on
/// one device (`set_device`: the allocator's instance's).
template <class MemorySpace, class Api>
class VirtualRange {
  using api = Api;

 public:
  VirtualRange() = default;
  VirtualRange(const VirtualRange&) = delete;
  VirtualRange& operator=(const VirtualRange&) = delete;
  ~VirtualRange() { release(); }

  /// Null where the space has growth in place, else why not.
  static const char* unsupported() noexcept { return api::unsupported(); }
  /// The device every call names (before the first reservation).
  void set_device(int device) noexcept { device_ = device; }
  int device() const noexcept { return device_; }
  /// Empty where the range's device can grow in place, else why not.
  std::string unsupported_here() const { return api::unsupported_on(device_); }
  /// Bytes of addresses reserved when no size is asked for: the device's memory.
  std::size_t default_reservation() const noexcept { return api::default_reservation(device_); }

  /// Reserves `bytes` (rounded up to the granule) aligned to `alignment` and to the granule.
  /// Precondition: nothing reserved. False, with `error` set, where it cannot.
  bool reserve(std::size_t bytes, std::size_t alignment, std::string& error) {
    const std::size_t g = api::granule(device_);
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
    void* base = api::reserve(device_, n, a, error);
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
    if (!api::map(device_, base_ + committed_, n, handle, error)) return false;
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
      api::unmap(device_, base_ + c.offset, c.bytes, c.handle);
      committed_ = c.offset;
      given += c.bytes;
    }
    return given;
  }

  /// Gives back every chunk and the addresses. The caller has fenced every use.
  void release(const std::string& label = std::string()) noexcept {
    if (base_ == nullptr) return;
    (void)shrink_to(0, label);
    api::release(device_, base_, reserved_);
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
  int device_ = 0;
  std::vector<VirtualChunk> chunks_;
};

}  // namespace Impl
}  // namespace kbuf

#endif  // KBUF_IMPL_VIRTUAL_MEMORY_HPP
