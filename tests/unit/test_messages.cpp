// The exact text of kbuf's error messages: each names the call, the allocator's label and the
// values that matter, in plain English. These tests fail when a message drifts; change the
// expectation only together with a message that reads better.
#include <doctest/doctest.h>

#include "test_support.hpp"

#include <cstdint>
#include <limits>
#include <string>

using namespace kbuf::literals;

namespace {

using HostAlloc = kbuf::BufferAllocator<Kokkos::HostSpace>;

// An allocator labelled "solver", aligned to 64 bytes.
HostAlloc make_solver(std::size_t sizehint = 4_KiB) {
  return HostAlloc(Kokkos::HostSpace::execution_space(), sizehint, 64, "solver");
}

template <class Call>
std::string logic_error_of(Call call) {
  try {
    call();
  } catch (const kbuf::logic_error& e) {
    return e.what();
  }
  return "(no kbuf::logic_error)";
}

template <class Call>
std::string out_of_memory_of(Call call) {
  try {
    call();
  } catch (const kbuf::out_of_memory& e) {
    return e.what();
  }
  return "(no kbuf::out_of_memory)";
}

}  // namespace

TEST_CASE("message: a negative extent") {
  HostAlloc alloc = make_solver();
  CHECK(logic_error_of([&] { (void)alloc.allocate<double***>(2, -7, 3); }) ==
        "kbuf::BufferAllocator::allocate(2, -7, 3) on allocator 'solver': extent 1 is -7; "
        "extents must not be negative");
}

TEST_CASE("message: an extent the View keeps in 32 bits cannot hold") {
  using V = HostAlloc::view<double***>;
  if constexpr (kbuf::Impl::extents_held_in_32_bits<V>) {
    HostAlloc alloc = make_solver();
    const std::int64_t wide = (std::int64_t{1} << 32) + 5;
    CHECK(logic_error_of([&] { (void)alloc.allocate<double***>(1, wide, 0); }) ==
          "kbuf::BufferAllocator::allocate(1, 4294967301, 0) on allocator 'solver': extent 1 is "
          "4294967301, but a View with 3 runtime extents holds each below 2^32 (Kokkos stores "
          "them in 32 bits)");
  }
}

TEST_CASE("message: a size that overflows size_t") {
  HostAlloc alloc = make_solver();
  const std::size_t big = std::numeric_limits<std::size_t>::max() / 4;
  REQUIRE(big == 4611686018427387903u);  // the text below assumes a 64-bit size_t
  CHECK(logic_error_of([&] { (void)alloc.allocate<double**>(big, 2u); }) ==
        "kbuf::BufferAllocator::allocate(4611686018427387903, 2) on allocator 'solver': the "
        "size, 8 x 4611686018427387903 x 2 bytes, overflows size_t");
  // Static extents count in the bytes per entry: 3 x 4 doubles.
  CHECK(logic_error_of([&] { (void)alloc.allocate<double* [3][4]>(big); }) ==
        "kbuf::BufferAllocator::allocate(4611686018427387903) on allocator 'solver': the size, "
        "96 x 4611686018427387903 bytes, overflows size_t");
}

TEST_CASE("message: resize with live temporaries counts them in plain English") {
  HostAlloc alloc = make_solver();
  auto a = alloc.allocate<double*>(4);
  CHECK(logic_error_of([&] { alloc.resize(12345); }) ==
        "kbuf::BufferAllocator::resize(12345) on allocator 'solver': 1 temporary is live; resize "
        "only an empty allocator");
  auto b = alloc.allocate<double*>(4);
  CHECK(logic_error_of([&] { alloc.resize(12345); }) ==
        "kbuf::BufferAllocator::resize(12345) on allocator 'solver': 2 temporaries are live; "
        "resize only an empty allocator");
  (void)a, (void)b;
}

TEST_CASE("message: a released checkpoint says what was released") {
  HostAlloc alloc = make_solver();
  const auto root = alloc.checkpoint();
  auto a = alloc.allocate<double*>(10);  // temporary #1
  const auto cp1 = alloc.checkpoint();
  auto b = alloc.allocate<double*>(10);  // temporary #2
  const auto cp2 = alloc.checkpoint();
  alloc.reset(cp1);
  auto c = alloc.allocate<double*>(10);  // temporary #3, at the place of #2
  // Depth and bytes in use are what they were at cp2: the message names what differs.
  REQUIRE(alloc.used() == cp2.used());
  REQUIRE(alloc.checkpoint().depth() == cp2.depth());
  CHECK(logic_error_of([&] { alloc.reset(cp2); }) ==
        "kbuf::BufferAllocator::reset on allocator 'solver': the checkpoint was released by an "
        "earlier reset; temporary #2, the newest when it was taken (of 2 live temporaries), has "
        "been released, and temporary #3 holds its place now. Reset in LIFO order: to a "
        "checkpoint, then only to older ones");
  alloc.reset(root);
  CHECK(logic_error_of([&] { alloc.reset(cp1); }) ==
        "kbuf::BufferAllocator::reset on allocator 'solver': the checkpoint was released by an "
        "earlier reset; it was taken with 1 temporary live, and 0 are live now. Reset in LIFO "
        "order: to a checkpoint, then only to older ones");
  (void)a, (void)b, (void)c;
}

TEST_CASE("message: a checkpoint of no allocator") {
  HostAlloc alloc = make_solver();
  CHECK(logic_error_of([&] { alloc.reset(HostAlloc::Checkpoint{}); }) ==
        "kbuf::BufferAllocator::reset on allocator 'solver': the checkpoint belongs to no "
        "allocator (it was default-constructed)");
}

TEST_CASE("message: an alignment that is not a power of two") {
  CHECK(logic_error_of(
            [] { HostAlloc alloc(Kokkos::HostSpace::execution_space(), 0, 96, "solver"); }) ==
        "kbuf::BufferAllocator: cannot make allocator 'solver' with alignment = 96: the "
        "alignment must be a power of two");
}

TEST_CASE("message: memory that cannot be had names the size and the memory space") {
  HostAlloc alloc = make_solver();
  const std::size_t n = std::numeric_limits<std::size_t>::max() / 16;  // ~1 EiB of doubles
  CHECK(out_of_memory_of([&] { (void)alloc.allocate<double*>(n); }) ==
        "kbuf::BufferAllocator::allocate on allocator 'solver': cannot allocate a fallback of "
        "9223372036854775800 bytes (9223372036854775863 with alignment slack) in "
        "Kokkos::HostSpace: that is more than any address space holds");
}

TEST_CASE("message: buffer_size that overflows size_t") {
  const std::size_t huge = std::numeric_limits<std::size_t>::max() - 2;
  CHECK(logic_error_of([&] { (void)kbuf::buffer_size(huge); }) ==
        "kbuf::buffer_size(18446744073709551613): rounding up to a whole number of pages of " +
            std::to_string(kbuf::page_size()) + " bytes overflows size_t");
}
