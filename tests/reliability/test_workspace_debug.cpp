// kbuf::Workspace's misuse inside a kernel, with debug checks (KBUF_ENABLE_DEBUG=1): a take after
// its arena ended, a frame ended out of LIFO order, a token past the slots. Each aborts with a
// message; the correct uses beside them do not.
#include <doctest/doctest.h>

#include "reliability_support.hpp"

#include <new>
#include <string>
#include <type_traits>

using namespace kbuf_rel;
using kbuf_test::Alloc;

static_assert(KBUF_ENABLE_DEBUG == 1, "compiled with KBUF_ENABLE_DEBUG=1");

namespace {

using namespace kbuf_test::workspace_types;

// What the kernel does wrong (or, with `misuse` false, right).
enum class Misuse { take_after_end, frames_out_of_order, token_past_slots };

struct Body {
  WS ws;
  Misuse what;
  bool misuse;
  KOKKOS_INLINE_FUNCTION void operator()(const member& team) const {
    if (what == Misuse::token_past_slots) {
      Kokkos::single(Kokkos::PerTeam(team), [&]() {
        auto arena = ws.arena(misuse ? static_cast<int>(ws.slots()) : 0);
        (void)arena;
      });
      return;
    }
    auto arena = ws.arena(team);
    if (what == Misuse::take_after_end) {
      (void)arena.take<double*>(8);
      if (misuse) {
        arena.end();
        (void)arena.take<double*>(8);
      }
      return;
    }
    // Two frames in raw storage, so that they can end in either order.
    alignas(WS::Frame) unsigned char outer_mem[sizeof(WS::Frame)];
    alignas(WS::Frame) unsigned char inner_mem[sizeof(WS::Frame)];
    WS::Frame* outer = new (outer_mem) WS::Frame(arena.frame());
    (void)arena.take<double*>(8);
    WS::Frame* inner = new (inner_mem) WS::Frame(arena.frame());
    (void)arena.take<double*>(8);
    if (misuse) {
      outer->~Frame();
      inner->~Frame();
    } else {
      inner->~Frame();
      outer->~Frame();
    }
  }
};

// The child runs a kernel: after fork() only Serial can (an OpenMP runtime's threads stay in
// the parent). Where the space's execution space is another, the foreign variant of this
// executable, whose space runs on Serial, checks the same.
constexpr bool runs_in_child =
#if defined(KOKKOS_ENABLE_SERIAL)
    std::is_same<exec, Kokkos::Serial>::value;
#else
    false;
#endif

ChildResult run(Misuse what, bool misuse) {
  return run_in_child([=] {
    Alloc alloc(1 << 16);
    const team_policy policy(alloc.execution_space_instance(), 2, 1);
    auto scope = alloc.scope();
    auto ws =
        what == Misuse::token_past_slots
            ? alloc.workspace(Kokkos::RangePolicy<exec>(alloc.execution_space_instance(), 0, 2),
                              kbuf::per_thread{1024}, "debug")
            : alloc.workspace(policy, kbuf::per_team{1024}, "debug");
    Kokkos::parallel_for("misuse", policy, Body{ws, what, misuse});
    Kokkos::fence();
    (void)ws.finish();
  });
}

}  // namespace

TEST_CASE("workspace debug: a take after the arena ended aborts") {
  if (!runs_in_child) return;
  CHECK(run(Misuse::take_after_end, false).survived());
  const ChildResult r = run(Misuse::take_after_end, true);
  CHECK(r.aborted());
  CHECK(r.says("kbuf::Workspace::Arena::take after the arena ended"));
  INFO(r.output);
}

TEST_CASE("workspace debug: frames ended out of LIFO order abort") {
  if (!runs_in_child) return;
  CHECK(run(Misuse::frames_out_of_order, false).survived());
  const ChildResult r = run(Misuse::frames_out_of_order, true);
  CHECK(r.aborted());
  CHECK(r.says("kbuf::Workspace::Frame ended out of LIFO order"));
  INFO(r.output);
}

TEST_CASE("workspace debug: a token past the slots aborts") {
  if (!runs_in_child) return;
  CHECK(run(Misuse::token_past_slots, false).survived());
  const ChildResult r = run(Misuse::token_past_slots, true);
  CHECK(r.aborted());
  CHECK(r.says("the token is not below slots()"));
  INFO(r.output);
}
