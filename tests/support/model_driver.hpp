// A strict host model of a GPU driver's virtual memory calls, for the tests of growth in place
// on devices (kbuf::Impl::DeviceVirtualMemory<Driver>, kbuf/impl/virtual_memory.hpp): several
// devices, a current device per host thread that starts at 0 (as CUDA's and HIP's do), access
// granted per device, each device's attributes (capability, exportable handles, RDMA), a
// runtime whose calls are stubs that return success and do nothing (ROCm 5.2's), and creates
// that fail after a number of them succeeded. Every call is recorded with the device that was
// current when it was made. Addresses are real host memory (mmap), so that an allocator can
// use them through a test memory space.
#ifndef KBUF_TEST_MODEL_DRIVER_HPP
#define KBUF_TEST_MODEL_DRIVER_HPP

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <kbuf/impl/virtual_memory.hpp>

namespace kbuf_test {

struct ModelDriver {
  using Attribute = kbuf::Impl::DeviceAttribute;
  struct Device {
    int virtual_memory = 1;  // the capability attribute
    int posix_fd = 0;        // exportable handles
    int rdma = 0;            // GPUDirect RDMA with virtual memory
  };
  struct Call {
    std::string what;
    int current;  // the thread's device when the call was made
    int device;   // the device the call names (create, set_access), else -1
    bool posix_fd;
    bool rdma;
  };
  struct State {
    std::vector<Device> devices = std::vector<Device>(3);
    bool stubs = false;             // calls return success and do nothing
    bool attributes_known = true;   // false: a runtime without the attributes
    const char* missing = nullptr;  // a runtime without the API
    int creates_before_failure = -1;
    int creates = 0;
    std::vector<Call> calls;
    std::map<std::uintptr_t, int> access;  // committed address -> the device given access
    std::map<std::uintptr_t, std::size_t> reserved;
  };

  static State& state() {
    static State s;
    return s;
  }
  static std::mutex& lock() {
    static std::mutex m;
    return m;
  }
  /// A fresh model (3 devices, all capable, nothing exportable).
  static void reset() {
    std::lock_guard<std::mutex> g(lock());
    for (const auto& r : state().reserved) ::munmap(reinterpret_cast<void*>(r.first), r.second);
    state() = State();
  }
  static int& current() {
    thread_local int device = 0;  // a new host thread starts on device 0
    return device;
  }
  static void record(const char* what, int device = -1, bool posix_fd = false, bool rdma = false) {
    std::lock_guard<std::mutex> g(lock());
    state().calls.push_back(Call{what, current(), device, posix_fd, rdma});
  }

  static const char* name() noexcept { return "Model"; }
  static const char* reserve_name() noexcept { return "modelMemAddressReserve"; }
  static const char* missing_api() noexcept { return state().missing; }
  static const char* attribute_name(Attribute) noexcept { return "MODEL_DEVICE_ATTRIBUTE_VMM"; }
  static bool current_device(int& d) noexcept {
    d = current();
    return true;
  }
  static bool set_device(int d) noexcept {
    if (d < 0 || d >= static_cast<int>(state().devices.size())) return false;
    current() = d;
    return true;
  }
  static int attribute(Attribute a, int device) noexcept {
    if (!state().attributes_known) return -1;
    const Device& d = state().devices[static_cast<std::size_t>(device)];
    switch (a) {
      case Attribute::virtual_memory:
        return d.virtual_memory;
      case Attribute::posix_fd_handle:
        return d.posix_fd;
      default:
        return d.rdma;
    }
  }
  static bool granularity(int device, bool, bool, std::size_t& g) noexcept {
    record("granularity", device);
    g = std::size_t{2} << 20;
    return true;
  }
  static bool mem_info(std::size_t& free_bytes, std::size_t& total) noexcept {
    free_bytes = total = std::size_t{1} << 30;
    return true;
  }
  static bool address_reserve(void*& p, std::size_t bytes, std::size_t alignment, std::string&) {
    record("reserve");
    if (state().stubs) return true;  // success, and no address written
    const std::size_t total = bytes + alignment;
    void* raw =
        ::mmap(nullptr, total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (raw == MAP_FAILED) return false;
    const std::uintptr_t r = reinterpret_cast<std::uintptr_t>(raw);
    const std::uintptr_t base = (r + alignment - 1) & ~static_cast<std::uintptr_t>(alignment - 1);
    std::lock_guard<std::mutex> g(lock());
    state().reserved[r] = total;
    p = reinterpret_cast<void*>(base);
    return true;
  }
  static bool create(unsigned long long& h, std::size_t, int device, bool posix_fd, bool rdma,
                     std::string& error) {
    record("create", device, posix_fd, rdma);
    if (state().stubs) {
      h = 0;
      return true;
    }
    if (state().creates_before_failure >= 0 && state().creates >= state().creates_before_failure) {
      error = "modelMemCreate failed: out of memory";
      return false;
    }
    h = static_cast<unsigned long long>(++state().creates);
    return true;
  }
  static bool map(void* at, std::size_t bytes, unsigned long long, std::string& error) {
    record("map");
    if (state().stubs) return true;
    if (::mprotect(at, bytes, PROT_READ | PROT_WRITE) != 0) {
      error = "modelMemMap failed";
      return false;
    }
    return true;
  }
  static bool set_access(void* at, std::size_t, int device, std::string&) {
    record("set_access", device);
    if (state().stubs) return true;
    std::lock_guard<std::mutex> g(lock());
    state().access[reinterpret_cast<std::uintptr_t>(at)] = device;
    return true;
  }
  static void unmap(void* at, std::size_t bytes) noexcept {
    record("unmap");
    if (!state().stubs) (void)::mprotect(at, bytes, PROT_NONE);
  }
  static void release_handle(unsigned long long) noexcept { record("release"); }
  static void address_free(void*, std::size_t) noexcept { record("address_free"); }
};

using ModelVirtualMemory = kbuf::Impl::DeviceVirtualMemory<ModelDriver>;

}  // namespace kbuf_test

#endif  // KBUF_TEST_MODEL_DRIVER_HPP
