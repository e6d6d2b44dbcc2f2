// The debug check of temporaries handed between execution space instances: memory released by
// a temporary of one instance is filled in that instance's order, and checked in the order of
// the instance it is handed to; a write after the release (late work) aborts, naming the label
// and both instances. In the host model of asynchronous instances (async_instance.hpp).
#include <doctest/doctest.h>

#include <kbuf/kbuf.hpp>

#include "async_instance.hpp"
#include "reliability_support.hpp"

#include <cstddef>

namespace {

using kbuf_rel::HostAlloc;
using kbuf_test::AsyncInstance;

constexpr std::size_t n = 1024;

/// A temporary of `j` released, then (with `late`) written by work on `j` submitted after the
/// release, then handed to `k`.
void hand_off(bool late) {
  HostAlloc alloc(1 << 16);
  AsyncInstance j("j");
  AsyncInstance k("k");
  double* p = nullptr;
  {
    auto s = alloc.scope();
    auto t = alloc.allocate<double*>(j, "late_tmp", n);
    p = t.data();
    j.submit([p] {
      for (std::size_t i = 0; i < n; ++i) p[i] = 1.0;
    });
  }
  if (late) {
    j.submit([p] { p[7] = 7.0; });  // after the release: a use-after-release on j
  }
  j.fence();
  auto u = alloc.allocate<double*>(k, "next", n);
  k.fence();
  alloc.reset();
}

}  // namespace

TEST_CASE(
    "a write after the release, by work on the releasing instance, aborts the hand-off "
    "naming the label and both instances") {
  const kbuf_rel::ChildResult r = kbuf_rel::run_in_child([] { hand_off(true); });
  CHECK(r.aborted());
  CHECK(r.says("temporary 'late_tmp'"));
  CHECK(r.says("model instance 'j'"));
  CHECK(r.says("handed to model instance 'k'"));
  CHECK(r.says("8 bytes"));
}

TEST_CASE("a hand-off without late work passes the check") {
  const kbuf_rel::ChildResult r = kbuf_rel::run_in_child([] { hand_off(false); });
  CHECK(r.survived());
  INFO(r.output);
}
