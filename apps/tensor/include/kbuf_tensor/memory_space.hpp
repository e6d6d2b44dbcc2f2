#ifndef KBUF_TENSOR_MEMORY_SPACE_HPP
#define KBUF_TENSOR_MEMORY_SPACE_HPP

/// @file
/// The memory space the applications work in: kbuf_tensor's compiled instantiations, kbuf-demo
/// and kbuf-tebd keep their tensors and temporaries in `kbuf_tensor::default_memory_space`.
///
/// It is kbuf's default memory space (the backend's: HostSpace, CudaSpace or HIPSpace) unless
/// the build names another: a build that defines `KBUF_TENSOR_MEMORY_SPACE` (a type) uses that
/// space, after including `KBUF_TENSOR_MEMORY_SPACE_HEADER` (a header name in <> or "") where
/// one is given. Every file of the applications must see the same definitions; the test suite
/// builds the applications a second time this way, over a memory space host code may not touch
/// (tests/foreign).

#include <Kokkos_Core.hpp>
#include <kbuf/kbuf.hpp>

#if defined(KBUF_TENSOR_MEMORY_SPACE_HEADER)
#include KBUF_TENSOR_MEMORY_SPACE_HEADER
#endif

namespace kbuf_tensor {

#if defined(KBUF_TENSOR_MEMORY_SPACE)
/// The applications' memory space, named by the build (see the top of this file).
using default_memory_space = KBUF_TENSOR_MEMORY_SPACE;
#else
/// The applications' memory space: kbuf's default memory space.
using default_memory_space = kbuf::default_memory_space;
#endif

static_assert(Kokkos::is_memory_space<default_memory_space>::value,
              "KBUF_TENSOR_MEMORY_SPACE must name a Kokkos memory space");

}  // namespace kbuf_tensor

#endif  // KBUF_TENSOR_MEMORY_SPACE_HPP
