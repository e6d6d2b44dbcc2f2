#ifndef KBUF_IMPL_VIRTUAL_MEMORY_FWD_HPP
#define KBUF_IMPL_VIRTUAL_MEMORY_FWD_HPP

// Growth in place's names, declared once with their default arguments: the allocator holds a
// VirtualRange by pointer (kbuf/buffer_allocator.hpp), kbuf/impl/virtual_memory.hpp defines it.

namespace kbuf {
namespace Impl {

template <class MemorySpace, class = void>
struct VirtualMemoryApi;  // a space's virtual memory calls
template <class MemorySpace, class Api = VirtualMemoryApi<MemorySpace>>
class VirtualRange;  // a reservation and its committed chunks

}  // namespace Impl
}  // namespace kbuf

#endif  // KBUF_IMPL_VIRTUAL_MEMORY_FWD_HPP
