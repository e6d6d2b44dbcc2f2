// kbuf::Workspace's misuse inside a kernel, with debug checks (KBUF_ENABLE_DEBUG=1): a take after
// its arena ended, a frame ended out of LIFO order, a negative token. Each aborts with a message;
// the correct uses beside them (a token far past the slots among them) do not. And check mode,
// which debug builds turn on: the first write past a take is printed with the workspace's label,
// the take's index and the bytes.
#include <doctest/doctest.h>

#include "reliability_support.hpp"

#include <cstdio>
#include <new>
#include <string>
#include <type_traits>

using namespace kbuf_rel;
using kbuf_test::Alloc;

static_assert(KBUF_ENABLE_DEBUG == 1, "compiled with KBUF_ENABLE_DEBUG=1");

namespace {

using namespace kbuf_test::workspace_types;

// What the kernel does wrong (or, with `misuse` false, right).
enum class Misuse { take_after_end, frames_out_of_order, negative_token };

struct Body {
  WS ws;
  Misuse what;
  bool misuse;
  KOKKOS_INLINE_FUNCTION void operator()(const member& team) const {
    if (what == Misuse::negative_token) {
      Kokkos::single(Kokkos::PerTeam(team), [&]() {
        // A token past the slots is served (a GPU's token values are); a negative one is not.
        auto arena = ws.arena(misuse ? -1 : static_cast<int>(ws.slots()) + 1000);
        (void)arena.take<double*>(8);
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

// Takes three arrays of `n` doubles and writes `past` doubles beyond the second (take 1).
struct Overrun {
  WS ws;
  int n, past;
  KOKKOS_INLINE_FUNCTION void operator()(const member& team) const {
    auto arena = ws.arena(team);
    auto a = arena.take<double*>(n);
    auto b = arena.take<double*>(n);
    auto c = arena.take<double*>(n);
    double* pb = b.data();
    Kokkos::single(Kokkos::PerTeam(team), [&]() {
      for (int i = 0; i < n + past; ++i) pb[i] = 3.0;  // out of bounds by design
    });
    (void)a;
    (void)c;
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
        what == Misuse::negative_token
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

TEST_CASE("workspace debug: a negative token aborts, a token past the slots is served") {
  if (!runs_in_child) return;
  CHECK(run(Misuse::negative_token, false).survived());
  const ChildResult r = run(Misuse::negative_token, true);
  CHECK(r.aborted());
  CHECK(r.says("kbuf::Workspace::arena(token): a negative token"));
  INFO(r.output);
}

TEST_CASE("workspace debug: the first write past a take is printed with its label and size") {
  if (!runs_in_child) return;
  const ChildResult r = run_in_child([&] {
    Alloc alloc(1 << 16);
    const team_policy policy(alloc.execution_space_instance(), 3, 1);
    auto scope = alloc.scope();
    auto ws = alloc.workspace(policy, kbuf::per_team{8192}, "peer routine");
    Kokkos::parallel_for("overrun", policy, Overrun{ws, 64, 5});
    const kbuf::WorkspaceReport rep = ws.finish();
    std::printf("overruns %zu checked %d\n", rep.overruns, rep.checked ? 1 : 0);
  });
  INFO(r.output);
  CHECK(r.survived());
  CHECK(
      r.says("kbuf::Workspace 'peer routine': take 1 of an arena was written past its end: 40 "
             "bytes"));
  CHECK(r.says("overruns 3 checked 1"));  // one per team; printed once
  std::size_t printed = 0;
  for (std::size_t at = r.output.find("written past"); at != std::string::npos;
       at = r.output.find("written past", at + 1)) {
    ++printed;
  }
  CHECK(printed == 1);
}
