// halo_caller: a second shared object between a program and the halo library, both built as
// libraries ship (hidden visibility, inline functions hidden): it runs the library's gathers
// and scatters for its caller, under the caller's kbuf guards or under guards it makes itself,
// and says what kbuf's drop-in state looks like from inside it. kbuf's per-process state must
// be the same here, in the halo library and in the executable.
#ifndef KBUF_TEST_HALO_CALLER_HPP
#define KBUF_TEST_HALO_CALLER_HPP

#include <kbuf/kbuf.hpp>

#include "halo.hpp"

#include <cstddef>
#include <vector>

#define HALO_CALLER_API __attribute__((visibility("default")))

namespace halo_caller {

/// The halo library's allocators.
using Alloc = kbuf::BufferAllocator<halo::memory_space>;

/// `steps` steps of a gather and a scatter through the halo library, the halos taken in turn.
HALO_CALLER_API void run(const std::vector<halo::Halo>& halos, const halo::Data& data,
                         std::size_t steps);

/// As run(), under a kbuf::use guard for `alloc` made here.
HALO_CALLER_API void run_using(Alloc& alloc, const std::vector<halo::Halo>& halos,
                               const halo::Data& data, std::size_t steps);

/// As run(), under a kbuf::use_process_allocators guard made here.
HALO_CALLER_API void run_with_process_allocators(const std::vector<halo::Halo>& halos,
                                                 const halo::Data& data, std::size_t steps);

/// kbuf::current() of the halo library's space, as this shared object sees it.
HALO_CALLER_API Alloc* current_here();

/// kbuf::process_allocator() of the halo library's space, as this shared object sees it.
HALO_CALLER_API Alloc* process_allocator_here();

}  // namespace halo_caller

#endif
