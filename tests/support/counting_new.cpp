// A replacement global operator new that counts calls, and the matching operator delete. They
// live in their own translation unit on purpose: defined next to code that uses std::vector,
// GCC 12 inlines this operator delete (free) into the vector's deallocation, pairs it with the
// opaque call of operator new and reports -Wmismatched-new-delete. Out of line, each side is
// what the program links to, as a replacement allocation function should be.
#include "counting_new.hpp"

#include <cstddef>
#include <cstdlib>
#include <new>

namespace kbuf_test {
std::atomic<long> heap_allocations{0};
}  // namespace kbuf_test

// Host code only: nvcc would also compile the replacement for the device, where it cannot throw.
#if !defined(__CUDA_ARCH__)
void* operator new(std::size_t n) {
  ++kbuf_test::heap_allocations;
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}
#endif
