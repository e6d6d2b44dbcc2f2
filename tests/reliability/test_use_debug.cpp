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

namespace {
constexpr kbuf::owner lib{"halo"};
using Matrix = Kokkos::View<double**, Kokkos::LayoutRight, Kokkos::HostSpace>;
}  // namespace

TEST_CASE(
    "debug: a temporary still referenced when the scope that served it ends aborts, naming its "
    "label and the scope's owner") {
  const auto body = [](bool misuse) {
    Alloc alloc(Alloc::execution_space(), 4096, Alloc::default_alignment, "lib_alloc");
    Use guard(alloc);
    Matrix kept;  // e.g. a member of an object the library built in its own call and kept
    {
      auto scope = kbuf::scope<Kokkos::HostSpace>(lib);
      Matrix buffer = kbuf::temporary<double**, Kokkos::LayoutRight, Kokkos::HostSpace>(
          lib, "send_buffer", 4, 3);
      buffer(3, 2) = 1.0;  // usable as any temporary
      if (misuse) kept = buffer;
    }
    CHECK(alloc.empty());
  };
  CHECK(run_in_child([&] { body(false); }).survived());
  const ChildResult r = run_in_child([&] { body(true); });
  INFO(r.output);
  CHECK(r.aborted());
  CHECK(
      r.says("kbuf::scope of 'halo' on allocator 'lib_alloc': the temporary 'send_buffer' (96 "
             "bytes) is still referenced"));
}

TEST_CASE(
    "debug: a library that names no owner, in a scope its caller opened, is caught when the "
    "caller's scope ends with the library's buffer still kept") {
  // The way kbuf 0.5 documented: neither the library nor its caller names an owner, so the
  // caller's scope serves the library's buffer of an object the caller keeps.
  const auto body = [](bool misuse) {
    Alloc alloc(Alloc::execution_space(), 4096, Alloc::default_alignment, "caller_alloc");
    Use guard(alloc);
    Matrix kept;
    {
      auto callers = kbuf::scope<Kokkos::HostSpace>();
      Matrix made =
          kbuf::temporary<double**, Kokkos::LayoutRight, Kokkos::HostSpace>("recv_buffer", 2, 2);
      if (misuse) kept = made;
    }
  };
  CHECK(run_in_child([&] { body(false); }).survived());
  const ChildResult r = run_in_child([&] { body(true); });
  INFO(r.output);
  CHECK(r.aborted());
  CHECK(
      r.says("kbuf::scope on allocator 'caller_alloc': the temporary 'recv_buffer' (32 bytes) "
             "is still referenced"));
}

#if KBUF_TEST_HAVE_FOREIGN_SPACE
TEST_CASE(
    "debug: a scope for a memory space with no current allocator, while another space has one, "
    "says so once") {
  const ChildResult r = run_in_child([] {
    Alloc host(Alloc::execution_space(), 4096, Alloc::default_alignment, "host");
    Use guard(host);  // the host space only
    for (int call = 0; call < 3; ++call) {
      auto scope = kbuf::scope<kbuf_test::foreign_space>(lib);  // the library's data live there
      CHECK(scope.allocator() == nullptr);
    }
    auto host_scope = kbuf::scope<Kokkos::HostSpace>(lib);  // this one has an allocator
  });
  INFO(r.output);
  CHECK(r.survived());
  const std::string note =
      "no allocator is current for this memory space on this thread, while "
      "one is for Kokkos::HostSpace";
  CHECK(r.says("kbuf::scope<Kokkos::"));
  CHECK(r.says("> of 'halo': " + note));
  const std::size_t first = r.output.find(note);
  CHECK(r.output.find(note, first + 1) == std::string::npos);  // once
}
#endif
