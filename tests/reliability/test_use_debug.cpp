// The debug checks of kbuf::use and kbuf::scope (compiled with KBUF_ENABLE_DEBUG=1): an
// allocator, or a pool, destroyed while a guard still makes one of its allocators current, and a
// guard or a scope destroyed on another thread than the one that made it, abort with a message
// naming the allocator. Each case runs in a forked child (reliability_support.hpp), once without
// the misuse.
#include <doctest/doctest.h>

#include "reliability_support.hpp"

#include <memory>
#include <thread>

using namespace kbuf_rel;

static_assert(KBUF_ENABLE_DEBUG == 1,
              "kbuf-test-use-debug must be compiled with KBUF_ENABLE_DEBUG=1");

namespace {
using Alloc = kbuf::BufferAllocator<Kokkos::HostSpace>;
using Pool = kbuf::AllocatorPool<Kokkos::HostSpace>;
using Use = kbuf::use<Kokkos::HostSpace>;
}  // namespace

TEST_CASE("debug: an allocator destroyed while a kbuf::use guard names it aborts, naming it") {
  const auto body = [](bool misuse) {
    auto alloc =
        std::make_unique<Alloc>(Alloc::execution_space(), 1024, Alloc::default_alignment, "dying");
    auto guard = std::make_unique<Use>(*alloc);
    if (!misuse) guard.reset();
    alloc.reset();
    guard.release();  // dangling by now: never destroyed
  };
  CHECK(run_in_child([&] { body(false); }).survived());
  const ChildResult r = run_in_child([&] { body(true); });
  INFO(r.output);
  CHECK(r.aborted());
  CHECK(r.says("kbuf::BufferAllocator 'dying'"));
  CHECK(r.says("destroyed while 1 kbuf::use guard makes it a thread's current allocator"));
}

TEST_CASE("debug: a pool destroyed while a kbuf::use guard names its allocator aborts") {
  const auto body = [](bool misuse) {
    auto pool = std::make_unique<Pool>(1024, Alloc::default_alignment, "pool");
    auto outer = std::make_unique<Use>(*pool);
    auto inner = std::make_unique<Use>(*pool);  // the same allocator, twice
    if (!misuse) {
      inner.reset();
      outer.reset();
    }
    pool.reset();
    inner.release();
    outer.release();
  };
  CHECK(run_in_child([&] { body(false); }).survived());
  const ChildResult r = run_in_child([&] { body(true); });
  INFO(r.output);
  CHECK(r.aborted());
  CHECK(r.says("kbuf::BufferAllocator 'pool[0]'"));
  CHECK(r.says("2 kbuf::use guards make it a thread's current allocator"));
}

TEST_CASE("debug: a kbuf::use guard destroyed on another thread aborts, naming its allocator") {
  const auto body = [](bool misuse) {
    Alloc alloc(Alloc::execution_space(), 1024, Alloc::default_alignment, "owned");
    auto guard = std::make_unique<Use>(alloc);
    if (misuse) {
      std::thread([&] { guard.reset(); }).join();
    } else {
      guard.reset();
    }
  };
  CHECK(run_in_child([&] { body(false); }).survived());
  const ChildResult r = run_in_child([&] { body(true); });
  INFO(r.output);
  CHECK(r.aborted());
  CHECK(r.says("kbuf::use: the guard of allocator 'owned'"));
  CHECK(r.says("destroyed on another thread than the one that made it"));
}

TEST_CASE("debug: a kbuf::scope destroyed on another thread aborts, naming its allocator") {
  const auto body = [](bool misuse) {
    Alloc alloc(Alloc::execution_space(), 1024, Alloc::default_alignment, "scoped");
    Use guard(alloc);
    auto scope = std::make_unique<kbuf::CurrentScope<Kokkos::HostSpace>>(&alloc);
    if (misuse) {
      std::thread([&] { scope.reset(); }).join();
    } else {
      scope.reset();
    }
  };
  CHECK(run_in_child([&] { body(false); }).survived());
  const ChildResult r = run_in_child([&] { body(true); });
  INFO(r.output);
  CHECK(r.aborted());
  CHECK(r.says("kbuf::scope: a scope of allocator 'scoped'"));
  CHECK(r.says("destroyed on another thread than the one that made it"));
}
