// Must not compile: an execution space (or a Kokkos::Device) where BufferAllocator wants a
// memory space, a mistake easily made with the backends' paired names (Cuda / CudaSpace).
// tests/compile/device_spaces.cmake checks that the error names the fix.
#include <kbuf/kbuf.hpp>

int main() {
#if defined(KBUF_FAIL_EXECUTION_SPACE)
  kbuf::BufferAllocator<kbuf::default_execution_space> bad;
#elif defined(KBUF_FAIL_DEVICE)
  kbuf::BufferAllocator<kbuf::default_execution_space::device_type> bad;
#endif
  return 0;
}
