// Each KBUF_FAIL_* case below must NOT compile; CTest checks that the compiler's message is
// kbuf's readable static_assert (or the deleted special member).
#include <kbuf/kbuf.hpp>

#include <string>

using Host = kbuf::BufferAllocator<Kokkos::HostSpace>;

struct NotTrivial {
  std::string s;
};

void must_fail(Host& alloc) {
#if defined(KBUF_FAIL_EXTENT_COUNT)
  (void)alloc.allocate<double**>(3);  // two runtime dimensions, one extent
#elif defined(KBUF_FAIL_LAYOUT_STRIDE)
  (void)alloc.allocate<double*, Kokkos::LayoutStride>(3);
#elif defined(KBUF_FAIL_NONTRIVIAL)
  (void)alloc.allocate<NotTrivial*>(3);
#elif defined(KBUF_FAIL_FLOAT_EXTENT)
  (void)alloc.allocate<double*>(3.5);
#elif defined(KBUF_FAIL_CONST)
  (void)alloc.allocate<const double*>(3);
#elif defined(KBUF_FAIL_NOT_A_SPACE)
  kbuf::BufferAllocator<int> bad;
  (void)alloc;
#elif defined(KBUF_FAIL_COPY)
  Host copy(alloc);
  (void)copy;
#else
  (void)alloc;  // the control case compiles
#endif
}

int main() {
  return 0;
}
