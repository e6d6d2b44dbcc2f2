#ifndef KBUF_IMPL_DEVICE_CODE_HPP
#define KBUF_IMPL_DEVICE_CODE_HPP

/// @file
/// Which code runs on a device and which on the host, chosen the way Kokkos chooses it, so that
/// every compiler Kokkos supports takes the right branch: `KBUF_IMPL_IF_ON_DEVICE((code))` and
/// `KBUF_IMPL_IF_ON_HOST((code))`, one parenthesised block each. nvcc and hipcc compile a file
/// twice and tell the passes apart with `__CUDA_ARCH__` and `__HIP_DEVICE_COMPILE__`; NVHPC's
/// nvc++ compiles it once and defines neither in device code, so a `#if` on them takes the host
/// branch there. Kokkos 4 (from 3.6 on) has `KOKKOS_IF_ON_DEVICE` / `KOKKOS_IF_ON_HOST`, which
/// use `NV_IF_TARGET` under nvc++; Kokkos 3.4 has neither, so for it these macros do the same
/// themselves. Not part of the API.

#include <Kokkos_Core.hpp>

#if defined(KOKKOS_IF_ON_DEVICE) && defined(KOKKOS_IF_ON_HOST)
#define KBUF_IMPL_IF_ON_DEVICE(CODE) KOKKOS_IF_ON_DEVICE(CODE)
#define KBUF_IMPL_IF_ON_HOST(CODE) KOKKOS_IF_ON_HOST(CODE)
#else
#define KBUF_IMPL_STRIP_PARENS(...) __VA_ARGS__
#if defined(KOKKOS_ENABLE_CUDA) && defined(__NVCOMPILER)
#include <nv/target>
#define KBUF_IMPL_IF_ON_DEVICE(CODE) NV_IF_TARGET(NV_IS_DEVICE, CODE)
#define KBUF_IMPL_IF_ON_HOST(CODE) NV_IF_TARGET(NV_IS_HOST, CODE)
#elif (defined(KOKKOS_ENABLE_CUDA) && defined(__CUDA_ARCH__)) || \
    (defined(KOKKOS_ENABLE_HIP) && defined(__HIP_DEVICE_COMPILE__))
#define KBUF_IMPL_IF_ON_DEVICE(CODE) \
  { KBUF_IMPL_STRIP_PARENS CODE }
#define KBUF_IMPL_IF_ON_HOST(CODE) \
  {}
#else
#define KBUF_IMPL_IF_ON_DEVICE(CODE) \
  {}
#define KBUF_IMPL_IF_ON_HOST(CODE) \
  { KBUF_IMPL_STRIP_PARENS CODE }
#endif
#endif

#endif  // KBUF_IMPL_DEVICE_CODE_HPP
