#ifndef KBUF_IMPL_INSTANCE_ORDER_DEVICE_HPP
#define KBUF_IMPL_INSTANCE_ORDER_DEVICE_HPP

// kbuf::instance_order for Kokkos::Cuda and Kokkos::HIP: events recorded on an instance's stream
// and waited on by another stream, with no host block (kbuf/instance_order.hpp). Kokkos has no
// public event type, so kbuf takes the stream an instance exposes (cuda_stream(), hip_stream())
// and calls the runtime, on the instance's own device (cuda_device(), hip_device()): an event
// belongs to the device that is current when it is made, and a new host thread starts on
// device 0. A failing call is a broken device or runtime: Kokkos::abort names it.

#include <cstdint>
#include <string>

#include <Kokkos_Core.hpp>
#include <kbuf/impl/kokkos_version.hpp>

// KBUF_IMPL_STREAM_ORDER(Exec, prefix, stream, device): the specialization for one backend.
#define KBUF_IMPL_STREAM_ORDER(EXEC, P, STREAM, DEVICE, NAME)                                      \
  template <>                                                                                      \
  struct instance_order<EXEC, void> {                                                              \
    struct event {                                                                                 \
      P##Event_t handle = nullptr;                                                                 \
      int device = 0;                                                                              \
    };                                                                                             \
    /* Makes `device` current for the lifetime of the guard, and the previous one again after. */  \
    struct on_device {                                                                             \
      int previous = -1;                                                                           \
      explicit on_device(int device) {                                                             \
        check(P##GetDevice(&previous), #P "GetDevice");                                            \
        if (previous != device) {                                                                  \
          check(P##SetDevice(device), #P "SetDevice");                                             \
        } else {                                                                                   \
          previous = -1;                                                                           \
        }                                                                                          \
      }                                                                                            \
      ~on_device() {                                                                               \
        if (previous >= 0) (void)P##SetDevice(previous);                                           \
      }                                                                                            \
      on_device(const on_device&) = delete;                                                        \
      on_device& operator=(const on_device&) = delete;                                             \
    };                                                                                             \
    static void check(P##Error_t e, const char* call) {                                            \
      if (e != P##Success) {                                                                       \
        Kokkos::abort((std::string("kbuf::instance_order<" NAME ">: ") + call +                    \
                       " failed: " + P##GetErrorString(e))                                         \
                          .c_str());                                                               \
      }                                                                                            \
    }                                                                                              \
    static std::uintptr_t key(const EXEC& exec) noexcept {                                         \
      return reinterpret_cast<std::uintptr_t>(exec.STREAM()) ^                                     \
             (static_cast<std::uintptr_t>(exec.DEVICE()) << 56) ^ 1;                               \
    }                                                                                              \
    static event record(const EXEC& exec) {                                                        \
      event e;                                                                                     \
      e.device = exec.DEVICE();                                                                    \
      on_device d(e.device);                                                                       \
      check(P##EventCreateWithFlags(&e.handle, P##EventDisableTiming), #P "EventCreateWithFlags"); \
      check(P##EventRecord(e.handle, exec.STREAM()), #P "EventRecord");                            \
      return e;                                                                                    \
    }                                                                                              \
    static void wait(const EXEC& exec, const event& e) {                                           \
      on_device d(exec.DEVICE());                                                                  \
      check(P##StreamWaitEvent(exec.STREAM(), e.handle, 0), #P "StreamWaitEvent");                 \
    }                                                                                              \
    static void host_wait(const event& e) {                                                        \
      check(P##EventSynchronize(e.handle), #P "EventSynchronize");                                 \
    }                                                                                              \
    static void release(event& e) noexcept {                                                       \
      if (e.handle != nullptr) (void)P##EventDestroy(e.handle);                                    \
      e.handle = nullptr;                                                                          \
    }                                                                                              \
    static std::string describe(const EXEC& exec) {                                                \
      return std::string(NAME " instance on device ") + std::to_string(exec.DEVICE()) +            \
             ", stream " + std::to_string(reinterpret_cast<std::uintptr_t>(exec.STREAM()));        \
    }                                                                                              \
    template <class MemorySpace>                                                                   \
    static void fill(const EXEC& exec, void* p, std::size_t n, unsigned char byte) {               \
      on_device d(exec.DEVICE());                                                                  \
      check(P##MemsetAsync(p, byte, n, exec.STREAM()), #P "MemsetAsync");                          \
    }                                                                                              \
    template <class MemorySpace>                                                                   \
    static std::size_t count_other(const EXEC& exec, const void* p, std::size_t n,                 \
                                   unsigned char byte) {                                           \
      Kokkos::View<const unsigned char*, MemorySpace, Kokkos::MemoryUnmanaged> bytes(              \
          static_cast<const unsigned char*>(p), n);                                                \
      std::size_t other = 0;                                                                       \
      Kokkos::parallel_reduce(                                                                     \
          "kbuf::instance_order::count_other",                                                     \
          Kokkos::RangePolicy<EXEC, Kokkos::IndexType<std::size_t>>(exec, 0, n),                   \
          KOKKOS_LAMBDA(std::size_t i, std::size_t& o) { o += bytes(i) != byte ? 1 : 0; }, other); \
      exec.fence();                                                                                \
      return other;                                                                                \
    }                                                                                              \
  };

namespace kbuf {
#if defined(KOKKOS_ENABLE_CUDA)
KBUF_IMPL_STREAM_ORDER(Kokkos::Cuda, cuda, cuda_stream, cuda_device, "Kokkos::Cuda")
#endif
#if defined(KOKKOS_ENABLE_HIP)
KBUF_IMPL_STREAM_ORDER(Impl::hip_execution_space, hip, hip_stream, hip_device, "Kokkos::HIP")
#endif
}  // namespace kbuf

#undef KBUF_IMPL_STREAM_ORDER

#endif  // KBUF_IMPL_INSTANCE_ORDER_DEVICE_HPP
