// Shrinking the newest temporary (BufferAllocator::shrink, kbuf::shrink): a temporary sized by an
// upper bound gives its tail back once a scan told its size; the elements kept keep their
// values, the next temporary starts at the shrunk end, and anything but the newest is refused
// with nothing changed.
#include <doctest/doctest.h>

#include <kbuf/kbuf.hpp>

#include <cstddef>
#include <numeric>
#include <string>

namespace {

using Alloc = kbuf::BufferAllocator<Kokkos::HostSpace>;
constexpr kbuf::owner shrink_owner{"shrink_library"};

std::string message_of(const kbuf::logic_error& e) {
  return e.what();
}

}  // namespace

TEST_CASE("the newest temporary gives its tail back and keeps its first elements") {
  Alloc alloc(1 << 16);
  auto s = alloc.scope();
  auto a = alloc.allocate<int*>(10);
  auto v = alloc.allocate<int*>(1001);  // an upper bound
  for (int i = 0; i < 1001; ++i) v(i) = i;
  const std::size_t used = alloc.used();
  alloc.shrink(v, 17);
  CHECK(v.extent(0) == 17);
  CHECK(v(16) == 16);
  CHECK(alloc.used() == used - (1001 - 17) * sizeof(int));
  auto w = alloc.allocate<int*>(1);
  CHECK(reinterpret_cast<std::uintptr_t>(w.data()) >=
        reinterpret_cast<std::uintptr_t>(v.data() + 17));
  CHECK(reinterpret_cast<std::uintptr_t>(w.data()) <
        reinterpret_cast<std::uintptr_t>(v.data() + 1001));
  (void)a;
}

TEST_CASE(
    "shrinking anything but the newest temporary, or growing one, is refused and changes "
    "nothing") {
  Alloc alloc(1 << 16);
  auto s = alloc.scope();
  auto v = alloc.allocate<double*>(100);
  auto w = alloc.allocate<double*>(100);
  const std::size_t used = alloc.used();
  try {
    alloc.shrink(v, 10);
    FAIL("no exception");
  } catch (const kbuf::logic_error& e) {
    CHECK(message_of(e).find("kbuf::BufferAllocator::shrink(view, 10)") != std::string::npos);
    CHECK(message_of(e).find("is not its newest temporary") != std::string::npos);
  }
  CHECK(v.extent(0) == 100);
  try {
    alloc.shrink(w, 101);
    FAIL("no exception");
  } catch (const kbuf::logic_error& e) {
    CHECK(message_of(e).find("101 elements are more than the temporary's 100") !=
          std::string::npos);
  }
  CHECK(w.extent(0) == 100);
  CHECK(alloc.used() == used);
}

TEST_CASE("a fallback's view shrinks and gives nothing back") {
  Alloc alloc(1024);
  auto s = alloc.scope();
  auto v = alloc.allocate<double*>(1000);  // 8000 bytes: a fallback
  REQUIRE(alloc.statistics().fallbacks == 1);
  const std::size_t used = alloc.used();
  alloc.shrink(v, 3);
  CHECK(v.extent(0) == 3);
  CHECK(alloc.used() == used);
}

TEST_CASE(
    "a temporary with a checkpoint or a scope taken after it is refused, and resets stay "
    "right") {
  Alloc alloc(1 << 16);
  auto s = alloc.scope();
  auto v = alloc.allocate<char*>(4096);
  const std::size_t used = alloc.used();
  const auto cp = alloc.checkpoint();
  try {
    alloc.shrink(v, 100);
    FAIL("no exception");
  } catch (const kbuf::logic_error& e) {
    CHECK(message_of(e).find("a checkpoint or a scope was taken after the temporary") !=
          std::string::npos);
  }
  CHECK(v.extent(0) == 4096);
  auto w = alloc.allocate<char*>(64);
  alloc.reset(cp);
  CHECK(alloc.used() == used);
  {
    auto inner = alloc.scope();
    CHECK_THROWS_AS(alloc.shrink(v, 100), kbuf::logic_error);
  }
  (void)w;
}

TEST_CASE(
    "kbuf::shrink gives a served temporary's tail back, and makes a plain View a View of "
    "its first elements") {
  Alloc alloc(1 << 16);
  {
    kbuf::use current(alloc);
    auto scope = kbuf::scope<Kokkos::HostSpace>(shrink_owner);
    auto offsets = kbuf::temporary<int*, Kokkos::LayoutRight, Kokkos::HostSpace>(shrink_owner,
                                                                                 "offsets", 5001);
    std::iota(offsets.data(), offsets.data() + 5001, 0);
    const std::size_t used = alloc.used();
    kbuf::shrink(shrink_owner, offsets, 42);
    CHECK(offsets.extent(0) == 42);
    CHECK(offsets(41) == 41);
#if !KBUF_ENABLE_DEBUG
    CHECK(alloc.used() < used);
#endif
  }
  auto plain = kbuf::temporary<int*, Kokkos::LayoutRight, Kokkos::HostSpace>(shrink_owner, "p", 50);
  plain(9) = 9;
  const int* data = plain.data();
  kbuf::shrink(shrink_owner, plain, 10);
  CHECK(plain.extent(0) == 10);
  CHECK(plain.data() == data);
  CHECK(plain(9) == 9);
  CHECK(plain.use_count() >= 1);
  CHECK_THROWS_AS(kbuf::shrink(shrink_owner, plain, 11), kbuf::logic_error);
}
