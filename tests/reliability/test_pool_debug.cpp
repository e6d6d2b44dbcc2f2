// kbuf::AllocatorPool's debug checks (compiled with KBUF_ENABLE_DEBUG=1): a thread that exits
// with live temporaries, and a pool destroyed while an allocator holds some, abort with a
// message naming the pool. Each case runs in a forked child (reliability_support.hpp).
#include <doctest/doctest.h>

#include "reliability_support.hpp"

#include <thread>

using namespace kbuf_rel;

static_assert(KBUF_ENABLE_DEBUG == 1,
              "kbuf-test-pool-debug must be compiled with KBUF_ENABLE_DEBUG=1");

namespace {
using Pool = kbuf::AllocatorPool<Kokkos::HostSpace>;
}

TEST_CASE("debug: a thread that exits with live temporaries aborts, naming the pool") {
  const auto body = [](bool release) {
    Pool pool(0, Pool::allocator_type::default_alignment, "worker-pool");
    std::thread([&] {
      (void)pool.local().allocate<double*>(10);
      (void)pool.local().allocate<int*>(3);
      if (release) pool.local().reset();
    }).join();
  };
  CHECK(run_in_child([&] { body(true); }).survived());  // the same without the misuse
  const ChildResult r = run_in_child([&] { body(false); });
  INFO(r.output);
  CHECK(r.aborted());
  CHECK(r.says("kbuf::AllocatorPool 'worker-pool'"));
  CHECK(r.says("a thread exited while its allocator 'worker-pool[0]' holds 2 live temporaries"));
}

TEST_CASE("debug: a pool destroyed while an allocator holds temporaries aborts, naming it") {
  const auto body = [](bool release) {
    Pool pool(0, Pool::allocator_type::default_alignment, "main-pool");
    (void)pool.local().allocate<double*>(10);
    if (release) pool.local().reset();
  };
  CHECK(run_in_child([&] { body(true); }).survived());
  const ChildResult r = run_in_child([&] { body(false); });
  INFO(r.output);
  CHECK(r.aborted());
  CHECK(r.says("kbuf::AllocatorPool 'main-pool'"));
  CHECK(r.says("destroyed while its allocator 'main-pool[0]' holds 1 live temporaries"));
}
