// Compile-only checks: kbuf::BufferAllocator in every memory space of the backends this Kokkos
// enables (HostSpace always; CudaSpace, CudaUVMSpace, CudaHostPinnedSpace with CUDA; HIPSpace,
// HIPHostPinnedSpace and, from Kokkos 3.7 on, HIPManagedSpace with HIP). Every member is
// instantiated and a kernel writes through a temporary, so a device compiler (nvcc, hipcc)
// proves the allocator builds for each space on a machine without a GPU. Nothing runs.
#include <kbuf/any_space.hpp>  // every space Kokkos enables, not only libkbuf's
#include <kbuf/kbuf.hpp>

#include <cstddef>
#include <type_traits>

namespace kbuf_compile {

// ---- The configured backend picks the default spaces --------------------------------------------
#if defined(KBUF_BACKEND_CUDA)
static_assert(std::is_same<kbuf::default_memory_space, Kokkos::CudaSpace>::value,
              "KBUF_BACKEND=CUDA: the default memory space is Kokkos::CudaSpace");
static_assert(std::is_same<kbuf::default_execution_space, Kokkos::Cuda>::value,
              "KBUF_BACKEND=CUDA: the default execution space is Kokkos::Cuda");
#elif defined(KBUF_BACKEND_HIP)
#if KOKKOS_VERSION >= 40000
static_assert(std::is_same<kbuf::default_memory_space, Kokkos::HIPSpace>::value,
              "KBUF_BACKEND=HIP: the default memory space is Kokkos::HIPSpace");
static_assert(std::is_same<kbuf::default_execution_space, Kokkos::HIP>::value,
              "KBUF_BACKEND=HIP: the default execution space is Kokkos::HIP");
#else
static_assert(std::is_same<kbuf::default_memory_space, Kokkos::Experimental::HIPSpace>::value,
              "KBUF_BACKEND=HIP: the default memory space is Kokkos::Experimental::HIPSpace");
static_assert(std::is_same<kbuf::default_execution_space, Kokkos::Experimental::HIP>::value,
              "KBUF_BACKEND=HIP: the default execution space is Kokkos::Experimental::HIP");
#endif
#else
static_assert(std::is_same<kbuf::default_memory_space, Kokkos::HostSpace>::value,
              "KBUF_BACKEND=Serial: the default memory space is Kokkos::HostSpace");
#endif

// ---- Types and alignment of one space -----------------------------------------------------------
template <class Space>
constexpr bool check_types() {
  using A = kbuf::BufferAllocator<Space>;
  using V = typename A::template view<double**, Kokkos::LayoutLeft>;
  static_assert(std::is_same<typename A::memory_space, Space>::value, "memory_space");
  static_assert(std::is_same<typename A::execution_space, typename Space::execution_space>::value,
                "execution_space is the memory space's");
  static_assert(std::is_same<typename V::memory_space, Space>::value, "temporaries live in Space");
  static_assert(V::memory_traits::is_unmanaged, "temporaries are unmanaged");
  static_assert(std::is_same<typename V::array_layout, Kokkos::LayoutLeft>::value, "layout");
  static_assert(
      A::default_alignment ==
          (std::is_same<Space, Kokkos::HostSpace>::value ? std::size_t(64) : std::size_t(256)),
      "default alignment: 64 bytes in HostSpace, 256 in every other space");
  static_assert(!std::is_copy_constructible<A>::value && !std::is_move_constructible<A>::value,
                "an allocator is neither copyable nor movable");
  return true;
}

// ---- Device code on a temporary -----------------------------------------------------------------
template <class View>
struct Fill {
  View v;
  KOKKOS_FUNCTION void operator()(const int i) const { v(i, 0) = static_cast<double>(i); }
};

/// Calls every member template the way an application does, including a kernel on the
/// allocator's own instance and a reset ordered after another instance.
template <class Space>
void exercise(kbuf::BufferAllocator<Space>& alloc) {
  using A = kbuf::BufferAllocator<Space>;
  using exec = typename A::execution_space;
  auto scope = alloc.scope();
  const auto cp = alloc.checkpoint();
  auto a = alloc.template allocate<double**, Kokkos::LayoutLeft>(16, 1);
  auto b = alloc.template allocate<float* [3]>(8u);
  auto c = alloc.template allocate<Kokkos::complex<double>***>(2l, 3l, 4l);
  auto d = alloc.template allocate<int[4][4]>();
  (void)b, (void)c, (void)d;
  Kokkos::parallel_for("kbuf::compile::fill",
                       Kokkos::RangePolicy<exec>(alloc.execution_space_instance(), 0, 16),
                       Fill<decltype(a)>{a});
  alloc.reset(cp, Kokkos::DefaultHostExecutionSpace());
  alloc.reset(cp, exec());
  alloc.fence();
}

/// Every constructor.
template <class Space>
void construct() {
  using A = kbuf::BufferAllocator<Space>;
  A plain;
  A sized(1024);
  A aligned(1024, 512);
  A bound(typename A::execution_space(), 1024, A::default_alignment, "kbuf::compile");
  exercise(bound);
}

}  // namespace kbuf_compile

// Explicit instantiations: every non-template member of each allocator, plus the templates above.
#define KBUF_COMPILE_SPACE(Space)                                             \
  template class kbuf::BufferAllocator<Space>;                                \
  static_assert(kbuf_compile::check_types<Space>(), "");                      \
  template void kbuf_compile::exercise<Space>(kbuf::BufferAllocator<Space>&); \
  template void kbuf_compile::construct<Space>();

KBUF_COMPILE_SPACE(Kokkos::HostSpace)

#if defined(KOKKOS_ENABLE_CUDA)
KBUF_COMPILE_SPACE(Kokkos::CudaSpace)
KBUF_COMPILE_SPACE(Kokkos::CudaUVMSpace)
KBUF_COMPILE_SPACE(Kokkos::CudaHostPinnedSpace)
#endif

#if defined(KOKKOS_ENABLE_HIP)
#if KOKKOS_VERSION >= 40000
KBUF_COMPILE_SPACE(Kokkos::HIPSpace)
KBUF_COMPILE_SPACE(Kokkos::HIPHostPinnedSpace)
KBUF_COMPILE_SPACE(Kokkos::HIPManagedSpace)
#else
KBUF_COMPILE_SPACE(Kokkos::Experimental::HIPSpace)
KBUF_COMPILE_SPACE(Kokkos::Experimental::HIPHostPinnedSpace)
#if KOKKOS_VERSION >= 30700
KBUF_COMPILE_SPACE(Kokkos::Experimental::HIPManagedSpace)
#endif
#endif
#endif

#if KOKKOS_VERSION >= 40000
// Kokkos 4's portable aliases name one of the spaces above (or HostSpace).
static_assert(kbuf_compile::check_types<Kokkos::SharedSpace>(), "");
static_assert(kbuf_compile::check_types<Kokkos::SharedHostPinnedSpace>(), "");
#endif
