// The allocator's compiled members, once, for the memory spaces the build enables: HostSpace
// and the configured backend's device space (kbuf/buffer_allocator.hpp declares them extern).
#include <kbuf/impl/allocator_definitions.hpp>

namespace kbuf {
template class BufferAllocator<Kokkos::HostSpace>;
#if !defined(KBUF_BACKEND_SERIAL)
template class BufferAllocator<default_memory_space>;
#endif
}  // namespace kbuf
