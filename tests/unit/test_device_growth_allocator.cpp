// Growth in place on a device whose driver refuses commits after the reservation worked, as the
// allocator sees it: the foreign space (memory the host may not touch, as a device's) given the
// strict host model of a driver (support/model_driver.hpp) as its virtual memory API. The
// allocator turns to regrowth and says why, where 0.7 threw out_of_memory at every growth, and a
// refused commit is not asked again while temporaries are live.
#include "foreign_space.hpp"
#include "model_driver.hpp"

// Before kbuf's headers make any allocator of the foreign space: its API is the model.
template <>
struct kbuf::Impl::VirtualMemoryApi<kbuf_test::foreign_space, void>
    : kbuf::Impl::DeviceVirtualMemory<kbuf_test::ModelDriver> {};

#include <doctest/doctest.h>

#include <kbuf/any_space.hpp>
#include <kbuf/kbuf.hpp>

#include "test_support.hpp"

#include <cstddef>
#include <string>

namespace {

using kbuf_test::ModelDriver;
using Alloc = kbuf::BufferAllocator<kbuf_test::foreign_space>;

std::size_t creates() {
  std::size_t n = 0;
  for (const ModelDriver::Call& c : ModelDriver::state().calls) n += c.what == "create" ? 1 : 0;
  return n;
}

}  // namespace

TEST_CASE("the model grows in place where it commits") {
  const kbuf_test::ScopedEnv on("KBUF_GROW_IN_PLACE", "1");
  ModelDriver::reset();
  Alloc alloc(1 << 20);
  CHECK(alloc.grows_in_place());
  CHECK(alloc.capacity() == (std::size_t{2} << 20));
  {
    auto s = alloc.scope();
    (void)alloc.allocate<char*>(std::size_t{3} << 20);  // grows at its end
  }
  CHECK(alloc.statistics().grown_in_place == 1);
  CHECK(alloc.statistics().fallbacks == 0);
}

TEST_CASE(
    "a device that refuses the first commit: the allocator takes a plain buffer, grows by "
    "regrowth and says why") {
  const kbuf_test::ScopedEnv on("KBUF_GROW_IN_PLACE", "1");
  ModelDriver::reset();
  ModelDriver::state().creates_before_failure = 0;
  Alloc alloc(1 << 20);  // 0.7: kbuf::out_of_memory here
  CHECK_FALSE(alloc.grows_in_place());
  CHECK(alloc.growth().find("by regrowth (committing ") == 0);
  CHECK(alloc.growth().find("modelMemCreate failed: out of memory") != std::string::npos);
  CHECK(alloc.capacity() >= (std::size_t{1} << 20));
  CHECK(alloc.statistics().reserved_bytes == 0);
  {
    auto s = alloc.scope();
    (void)alloc.allocate<char*>(std::size_t{4} << 20);
  }
  (void)alloc.allocate<char*>(std::size_t{4} << 20);  // a regrowth, not a commit
  CHECK(alloc.statistics().regrows == 1);
  CHECK(creates() == 1);
  alloc.reset();
}

TEST_CASE(
    "a commit refused while temporaries are live: a fallback, the driver not asked again, "
    "and the next growth a regrowth") {
  const kbuf_test::ScopedEnv on("KBUF_GROW_IN_PLACE", "1");
  ModelDriver::reset();
  ModelDriver::state().creates_before_failure = 1;
  Alloc alloc(1 << 20);
  REQUIRE(alloc.grows_in_place());
  {
    auto s = alloc.scope();
    (void)alloc.allocate<char*>(std::size_t{3} << 19);  // 1.5 MiB: fits
    (void)alloc.allocate<char*>(std::size_t{1} << 20);  // refused commit: a fallback
    const std::size_t asked = creates();
    (void)alloc.allocate<char*>(std::size_t{1} << 20);  // not asked again: a fallback
    CHECK(creates() == asked);
    CHECK(alloc.statistics().fallbacks == 2);
  }
  (void)alloc.allocate<char*>(std::size_t{3} << 20);  // the pending growth: by regrowth
  CHECK_FALSE(alloc.grows_in_place());
  CHECK(alloc.growth().find("modelMemCreate failed: out of memory") != std::string::npos);
  CHECK(alloc.statistics().regrows == 1);
  CHECK(alloc.statistics().fallbacks == 2);
  alloc.reset();
}
