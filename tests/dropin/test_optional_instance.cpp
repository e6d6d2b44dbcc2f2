// kbuf_optional.hpp's buffers on an execution space instance (`buffers::temporary(exec, label,
// extents...)`), built twice: with kbuf (a temporary of the current allocator inside the
// library's scope) and without it (KBUF_OPTIONAL_USE_KBUF=0: a labelled View made on `exec`).
#include <doctest/doctest.h>

#include <Kokkos_Core.hpp>

#include "kbuf_optional.hpp"

#include <cstdint>
#include <string>

namespace {

struct instance_owner {
  static constexpr const char* name = "optional_instance";
};
using buffers = kbuf_optional_v1::library<instance_owner>;
using space = Kokkos::HostSpace;

/// A library call on its caller's instance: the buffer's address, as an integer.
std::uintptr_t library_call(const Kokkos::DefaultHostExecutionSpace& exec, std::string& label) {
  auto scope = buffers::scope<space>();
  auto b = buffers::temporary<double*, Kokkos::LayoutRight, space>(exec, "instance_buffer", 100);
  Kokkos::parallel_for(Kokkos::RangePolicy<Kokkos::DefaultHostExecutionSpace>(exec, 0, 100),
                       [=](int i) { b(i) = i; });
  exec.fence();
  CHECK(b(99) == 99.0);
  label = b.label();
  return reinterpret_cast<std::uintptr_t>(b.data());
}

}  // namespace

TEST_CASE("buffers::temporary(exec, ...) serves the library on its caller's instance") {
  const Kokkos::DefaultHostExecutionSpace exec;
  std::string label;
#if KBUF_OPTIONAL_USE_KBUF
  kbuf::BufferAllocator<space> alloc(1 << 16);
  kbuf::use current(alloc);
  const std::uintptr_t p = library_call(exec, label);
  const auto base = reinterpret_cast<std::uintptr_t>(alloc.buffer().data());
  CHECK(p >= base);
  CHECK(p < base + alloc.capacity());
  CHECK(alloc.empty());
  CHECK(alloc.statistics().fences == 0);
#else
  (void)library_call(exec, label);
  CHECK(label == "instance_buffer");
#endif
}
