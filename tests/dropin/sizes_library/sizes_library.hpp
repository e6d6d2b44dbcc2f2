// sizes_library: a shared object built as libraries ship (hidden visibility, inline functions
// hidden) that makes a labelled allocator of its own. The saved sizes (kbuf/sizes_file.hpp) must
// be one per process: the library starts from what the program loaded, and what it learns is
// what the program saves.
#ifndef KBUF_TEST_SIZES_LIBRARY_HPP
#define KBUF_TEST_SIZES_LIBRARY_HPP

#include <cstddef>

#define SIZES_LIBRARY_API __attribute__((visibility("default")))

namespace sizes_library {

/// Makes an allocator labelled "sizes-library", takes a temporary of `bytes` from it, and returns
/// the capacity it started with.
SIZES_LIBRARY_API std::size_t run(std::size_t bytes);

/// kbuf::loaded_sizes().sizes.size(), as this shared object sees it.
SIZES_LIBRARY_API std::size_t loaded_here();

}  // namespace sizes_library

#endif  // KBUF_TEST_SIZES_LIBRARY_HPP
