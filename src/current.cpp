// The cold paths of kbuf/current.hpp and the allocator pool, once, for the memory spaces the build
// enables: HostSpace and the configured backend's device space (the headers declare them extern).
#include <kbuf/current.hpp>
#include <kbuf/impl/allocator_definitions.hpp>

#define KBUF_IMPL_CURRENT_INSTANTIATE(SPACE)                                                  \
  template class AllocatorPool<SPACE>;                                                        \
  template BufferAllocator<SPACE>& process_allocator<SPACE>();                                \
  namespace Impl {                                                                            \
  template BufferAllocator<SPACE>* find_process_allocator<SPACE>(ThreadSpaceState&) noexcept; \
  template void note_no_current<SPACE>(const owner*) noexcept;                                \
  }

namespace kbuf {
KBUF_IMPL_CURRENT_INSTANTIATE(Kokkos::HostSpace)
#if !defined(KBUF_BACKEND_SERIAL)
KBUF_IMPL_CURRENT_INSTANTIATE(default_memory_space)
#endif
}  // namespace kbuf
