// kbuf::Workspace against a reference: random sequences of takes and nested frames run by one
// team in a kernel, and by a host model of one arena (a slot stack, a lane claimed when the
// arena holds no spilled take and given back when its frames have returned everything spilled,
// fallbacks for what fits neither, LIFO frames). Every take must land where the model says (the
// slot, the lane, a fallback, or nowhere), at the model's offset from its region's start; the
// report must count what the model counts.
#include <doctest/doctest.h>

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "test_support.hpp"

using kbuf_test::Alloc;
using kbuf_test::space;

namespace {

using namespace kbuf_test::workspace_types;

// Operations: a take of `value` doubles (>= 0), a frame's start (-1) or end (-2).
constexpr int op_frame = -1;
constexpr int op_end = -2;
// The deepest nesting of frames the sequences reach.
constexpr int max_depth = 6;

struct Run {
  WS ws;
  Kokkos::View<const int*, space> ops;
  Kokkos::View<unsigned long long*, space> where;  // per take: its address (0: none)
  int nops;

  // Runs ops from `pos` until the end of the current frame (at nesting depth D); returns the
  // position after it. One function per depth: no recursion in device code.
  template <int D>
  KOKKOS_INLINE_FUNCTION int run(WS::Arena& arena, const member& team, int pos, int& take) const {
    const int* o = ops.data();
    while (pos < nops) {
      const int op = o[pos++];
      if (op == op_end) return pos;
      if (op == op_frame) {
        if constexpr (D < max_depth) {
          auto frame = arena.frame();
          pos = run<D + 1>(arena, team, pos, take);
        }
        continue;
      }
      auto v = arena.take<double*>(op);
      const unsigned long long a = reinterpret_cast<std::uintptr_t>(v.data());
      const int k = take++;
      Kokkos::single(Kokkos::PerTeam(team), [&]() { where.data()[k] = a; });
    }
    return pos;
  }

  KOKKOS_INLINE_FUNCTION void operator()(const member& team) const {
    auto arena = ws.arena(team);
    int take = 0;
    (void)run<0>(arena, team, 0, take);
  }
};

// The host model of one arena with a slot of `slot` bytes and one lane of `spill` bytes (none
// when 0), in units of `unit` bytes.
struct Model {
  std::size_t unit, slot, spill;
  struct Top {
    std::size_t slot = 0, spill = 0, need = 0, want = 0, fallbacks = 0;
  };
  Top top;
  bool lane = false;  // held
  std::vector<Top> frames;
  std::size_t takes = 0, spills = 0, spill_bytes = 0, fallbacks = 0, fallback_bytes = 0,
              peak_need = 0, spill_peak = 0;
  // Per take: 0 slot, 1 lane, 2 none (empty), 3 a fallback; and the offset in its region.
  std::vector<int> region;
  std::vector<std::size_t> offset;

  void take(std::size_t doubles) {
    ++takes;
    const std::size_t n = (doubles * sizeof(double) + unit - 1) / unit * unit;
    if (n == 0) {
      region.push_back(2);
      offset.push_back(0);
      return;
    }
    top.need += n;
    if (top.need > peak_need) peak_need = top.need;
    if (top.slot + n <= slot) {
      region.push_back(0);
      offset.push_back(top.slot);
      top.slot += n;
      return;
    }
    top.want += n;  // asked of the lane, whatever serves it
    if (top.want > spill_peak) spill_peak = top.want;
    if (!lane && spill != 0 && n <= spill && top.spill == 0 && top.fallbacks == 0) lane = true;
    if (lane && top.spill + n <= spill) {
      region.push_back(1);
      offset.push_back(top.spill);
      top.spill += n;
      ++spills;
      spill_bytes += n;
      return;
    }
    region.push_back(3);
    offset.push_back(0);
    ++top.fallbacks;
    ++fallbacks;
    fallback_bytes += n;
  }
  void frame() { frames.push_back(top); }
  void end() {
    top = frames.back();
    frames.pop_back();
    if (lane && top.spill == 0) lane = false;  // given back: every spilled take returned
  }
};

}  // namespace

TEST_CASE("workspace model: random takes and nested frames land where the reference says") {
  Alloc alloc(1 << 20);
  const std::size_t unit = alloc.alignment() > 64 ? alloc.alignment() : 64;
  std::mt19937 rng(20261204u);
  const int cases = 120;
  for (int c = 0; c < cases; ++c) {
    CAPTURE(c);
    std::uniform_int_distribution<int> slot_units(0, 24), spill_units(0, 40), len(1, 60);
    std::uniform_int_distribution<int> doubles(0, 200), kind(0, 9);
    const std::size_t slot = static_cast<std::size_t>(slot_units(rng)) * unit;
    const std::size_t spill = static_cast<std::size_t>(spill_units(rng)) * unit;
    Model model{unit, slot, spill, {}, false, {}, 0, 0, 0, 0, 0, 0, 0, {}, {}};
    std::vector<int> ops;
    int open = 0;
    const int n = len(rng);
    for (int i = 0; i < n; ++i) {
      const int k = kind(rng);
      if (k <= 1 && open < max_depth) {
        ops.push_back(op_frame);
        model.frame();
        ++open;
      } else if (k == 2 && open > 0) {
        ops.push_back(op_end);
        model.end();
        --open;
      } else {
        const int d = doubles(rng);
        ops.push_back(d);
        model.take(static_cast<std::size_t>(d));
      }
    }
    const int nops = static_cast<int>(ops.size());
    Kokkos::View<int*, space> dops("ops", ops.size());
    Kokkos::deep_copy(dops, Kokkos::View<const int*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(
                                ops.data(), ops.size()));
    const std::size_t ntakes = model.takes;
    Kokkos::View<unsigned long long*, space> where("where", ntakes > 0 ? ntakes : 1);

    auto scope = alloc.scope();
    const team_policy policy(alloc.execution_space_instance(), 1, 1);
    auto ws = alloc.workspace(policy, kbuf::per_team{slot, spill}, "model " + std::to_string(c));
    REQUIRE(ws.slot_bytes() == slot);
    REQUIRE(ws.spill_bytes() == spill);
    Kokkos::parallel_for("model", policy, Run{ws, dops, where, nops});
    const kbuf::WorkspaceReport r = ws.finish();

    std::vector<unsigned long long> got(where.extent(0));
    Kokkos::deep_copy(Kokkos::View<unsigned long long*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(
                          got.data(), got.size()),
                      where);
    // Each region's start, from its first take: every other take is at its offset from there.
    // A fallback is anywhere outside both regions.
    unsigned long long base[2] = {0, 0};
    bool seen[2] = {false, false};
    int wrong = 0;
    for (std::size_t t = 0; t < ntakes; ++t) {
      const int reg = model.region[t];
      if (reg == 2) {
        if (got[t] != 0) ++wrong;
        continue;
      }
      if (got[t] == 0) {
        ++wrong;
        continue;
      }
      if (reg == 3) {
        if (got[t] % unit != 0) ++wrong;
        continue;
      }
      const unsigned long long b = got[t] - model.offset[t];
      if (!seen[reg]) {
        seen[reg] = true;
        base[reg] = b;
      } else if (b != base[reg]) {
        ++wrong;
      }
    }
    CHECK(wrong == 0);
    if (seen[0] && seen[1]) {  // the regions do not overlap
      CHECK((base[0] + slot <= base[1] || base[1] + spill <= base[0]));
    }
    for (std::size_t t = 0; t < ntakes; ++t) {  // no fallback inside the slot or the lane
      if (model.region[t] != 3) continue;
      for (int reg = 0; reg < 2; ++reg) {
        const std::size_t size = reg == 0 ? slot : spill;
        if (seen[reg]) CHECK((got[t] + unit <= base[reg] || got[t] >= base[reg] + size));
      }
    }
    CHECK(r.takes == model.takes);
    CHECK(r.spills == model.spills);
    CHECK(r.spill_bytes == model.spill_bytes);
    CHECK(r.failed_takes == 0);
    CHECK(r.fallbacks == model.fallbacks);
    CHECK(r.fallback_bytes == model.fallback_bytes);
    CHECK(r.peak_slot_bytes == model.peak_need);
    CHECK(r.spill_peak == model.spill_peak);
    CHECK(r.arenas == 1);
  }
}
