// kbuf-bench: what a kbuf temporary costs, side by side with every other way a Kokkos user can
// get one, measured in one process with the strategies interleaved.
//
//   kbuf-bench [--quick] [--reps N] [--min-sample-ms X] [--csv FILE] [--sections LIST]
//              [--max-live N] [--max-size BYTES] [--tensor-max-d D]
//              [--threads LIST] [--profile SECTION:STRATEGY:ROUNDS]
//
// Sections: round (8 mixed temporaries per scope), pair (one allocate/reset), instances (a
// temporary handed between two execution space instances), live (cost per
// temporary vs live count), size (vs size), warmup (rounds until zero fallbacks: kbuf vs a
// TensorOperations-style high-water mark), threads (the round on N host threads at once: kbuf's
// pool against mimalloc, jemalloc, TBB, glibc malloc, pmr and Kokkos::MemoryPool), tensor (time per
// contraction, kbuf vs fresh Views). Prints tables; --csv writes every figure (bench/plot.py turns
// it into PNG plots). No figure is asserted; the exit status is non-zero only if kbuf needed a
// fallback after a workload's first round (a functional failure), or on bad arguments.
#include <kbuf/impl/kokkos_version.hpp>  // the version printed beside the results
#include <kbuf/kbuf.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <kbuf_timing/harness.hpp>
#include "bench_common.hpp"
#include "policies.hpp"
#include "tensoroperations_model.hpp"

namespace kbuf_bench {
namespace {

template <class F>
Contender make_contender(std::string name, std::size_t temps_per_round, F round) {
  Contender s;
  s.name = std::move(name);
  s.temps_per_round = temps_per_round;
  s.run = [round](std::size_t k) mutable {
    for (std::size_t i = 0; i < k; ++i) {
      clobber();  // nothing computed in one round may be reused by the next
      round();
    }
    fence();
  };
  return s;
}

const Contender* find(const std::vector<Contender>& v, const std::string& name) {
  for (const auto& s : v)
    if (s.name == name) return &s;
  return nullptr;
}

/// A byte arena in the benchmark's memory space for the floor and pmr (not initialised).
Kokkos::View<unsigned char*, memory_space> make_arena(std::size_t bytes) {
  return Kokkos::View<unsigned char*, memory_space>(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "kbuf-bench::arena"), bytes);
}

std::size_t arena_bytes_for(const std::vector<std::size_t>& slot_bytes) {
  std::size_t n = temp_alignment;
  for (std::size_t b : slot_bytes) n += align_up(b, temp_alignment);
  return n;
}

/// Measures `st`, or with --profile runs only the named strategy's rounds; false then.
bool measure_or_profile(Context& c, const char* section, std::vector<Contender>& st) {
  if (c.opt.profile_section.empty()) {
    measure_interleaved(st, c.opt.timing);
    return true;
  }
  if (c.opt.profile_section != section) return false;
  for (auto& s : st) {
    if (s.name == c.opt.profile_strategy) {
      s.run(c.opt.timing.warmup_rounds);
      s.run(c.opt.profile_rounds);
      std::printf("profile: %zu rounds of %s in section %s (%zu temporaries each)\n",
                  c.opt.profile_rounds, s.name.c_str(), section, s.temps_per_round);
      return false;
    }
  }
  std::fprintf(stderr, "kbuf-bench: --profile: section %s has no strategy '%s'\n", section,
               c.opt.profile_strategy.c_str());
  std::exit(2);
}

const char* describe(const std::string& name) {
  if (name == "floor") return "unmanaged Views over a fixed array";
  if (name == "kbuf") return "BufferAllocator";
  if (name == "kbuf-scope") return "BufferAllocator, Scope";
  if (name == "kbuf-temporary") return "kbuf::temporary in kbuf::scope";
  if (name == "kbuf-view-type") return "allocate, as the plain View type";
  if (name == "managed") return "View(label, n...)";
  if (name == "managed-noinit") return "View(view_alloc(WithoutInit.))";
  if (name == "kokkos_malloc") return "kokkos_malloc/free + unmanaged";
  if (name == "pmr-monotonic") return "pmr::monotonic + unmanaged";
  if (name == "bump") return "reference: bare pointer bump";
  if (name == "floor-extents") return "floor, View(ptr, extents...)";
  return "";
}

/// One table row per strategy: median and spread in ns per temporary, ratio to kbuf, and what
/// each costs above the floor.
void print_contender_table(const std::vector<Contender>& st, const char* kbuf_name) {
  const Contender* k = find(st, kbuf_name);
  const Contender* f = find(st, "floor");
  const double km = k != nullptr ? summarize(k->ns_per_temp).median : 0;
  const double fm = f != nullptr ? summarize(f->ns_per_temp).median : 0;
  std::printf("  %-15s %-31s %9s %9s %9s %9s %9s %9s %11s\n", "strategy", "", "median", "p10",
              "p90", "min", "max", "x kbuf", "above floor");
  for (const auto& s : st) {
    const Summary m = summarize(s.ns_per_temp);
    std::printf("  %-15s %-31s %9.2f %9.2f %9.2f %9.2f %9.2f %9.2f %11.2f\n", s.name.c_str(),
                describe(s.name), m.median, m.p10, m.p90, m.min, m.max,
                km > 0 ? m.median / km : 0.0, m.median - fm);
  }
}

void csv_strategies(Context& c, const char* section, const std::string& workload, double x,
                    const std::vector<Contender>& st, const char* kbuf_name) {
  const Contender* k = find(st, kbuf_name);
  const double km = k != nullptr ? summarize(k->ns_per_temp).median : 0;
  for (const auto& s : st) {
    const Summary m = summarize(s.ns_per_temp);
    c.csv.row(section, workload, x, s.name, m, km > 0 ? m.median / km : -1, -1, -1);
  }
}

// ---- Section: the realistic round ------------------------------------------------------------

void section_round(Context& c) {
  std::printf(
      "\n== round: a scope, 8 temporaries (ranks 1-4, 64 B - 1 MiB), each touched once, "
      "released together ==\n");
  // Everything the timed loops read lives on the heap, whose layout is the same in every run:
  // stack addresses move with the environment and ASLR, and with them 4 KiB-aliasing stalls
  // between a round's loads and its touches, which made figures differ from run to run.
  const auto shapes_ptr = std::make_unique<MixedShapes>();
  const MixedShapes& shapes = *shapes_ptr;
  const auto slot_bytes = MixedShapes::slot_bytes();
  const std::size_t ab = arena_bytes_for(slot_bytes);
  auto arena = make_arena(ab);
  auto floor = std::make_unique<FloorPolicy<false>>(arena.data(), ab, slot_bytes);
  auto floor_extents = std::make_unique<FloorPolicy<true>>(arena.data(), ab, slot_bytes);
  auto bump = std::make_unique<BumpPolicy>(arena.data(), ab);
  // Empty: round 1 falls back entirely, round 2 regrows and carves everything.
  const auto alloc_ptr = std::make_unique<Allocator>();
  Allocator& alloc = *alloc_ptr;
  auto kb = std::make_unique<KbufPolicy<true>>(alloc);
  auto kt = std::make_unique<TemporaryPolicy>(alloc);
  auto kv = std::make_unique<ViewTypePolicy>(alloc);
  auto managed = std::make_unique<ManagedPolicy<true>>();
  auto noinit = std::make_unique<ManagedPolicy<false>>();
  auto km = std::make_unique<KokkosMallocPolicy>(MixedShapes::count);

  mixed_round(*kb, shapes);  // the workload's first round
  const std::size_t first_fallbacks = alloc.statistics().fallbacks;

  std::vector<Contender> st;
  const std::size_t n = MixedShapes::count;
  st.push_back(make_contender("floor", n, [&] { mixed_round(*floor, shapes); }));
  st.push_back(make_contender("kbuf", n, [&] { mixed_round(*kb, shapes); }));
  st.push_back(make_contender("kbuf-temporary", n, [&] { mixed_round(*kt, shapes); }));
  st.push_back(make_contender("kbuf-view-type", n, [&] { mixed_round(*kv, shapes); }));
  st.push_back(make_contender("managed", n, [&] { mixed_round(*managed, shapes); }));
  st.push_back(make_contender("managed-noinit", n, [&] { mixed_round(*noinit, shapes); }));
  st.push_back(make_contender("kokkos_malloc", n, [&] { mixed_round(*km, shapes); }));
#if KBUF_BENCH_HAVE_PMR
  std::unique_ptr<PmrPolicy> pmr;
  if constexpr (host_space) {
    pmr = std::make_unique<PmrPolicy>(arena.data(), ab);
    st.push_back(make_contender("pmr-monotonic", n, [&] { mixed_round(*pmr, shapes); }));
  }
#endif
  st.push_back(make_contender("bump", n, [&] { mixed_round(*bump, shapes); }));
  st.push_back(make_contender("floor-extents", n, [&] { mixed_round(*floor_extents, shapes); }));
  if (!measure_or_profile(c, "round", st)) return;
  const std::size_t late = alloc.statistics().fallbacks - first_fallbacks;
  c.late_fallbacks += late;

  std::printf("  ns per temporary; p10/p90/min/max over the interleaved samples\n");
  print_contender_table(st, "kbuf");
  std::printf(
      "  kbuf: %zu fallbacks in round 1 (empty allocator), %zu in the %zu rounds after; "
      "capacity %zu B, high-water mark %zu B\n",
      first_fallbacks, late, alloc.statistics().resets - 1, alloc.capacity(),
      alloc.high_water_mark());
  csv_strategies(c, "round", "mixed8", 8, st, "kbuf");
  c.round_kbuf = summarize(find(st, "kbuf")->ns_per_temp);
  c.round_floor = summarize(find(st, "floor")->ns_per_temp);
  c.round_noinit = summarize(find(st, "managed-noinit")->ns_per_temp);
  c.round_managed = summarize(find(st, "managed")->ns_per_temp);
  c.round_bump = summarize(find(st, "bump")->ns_per_temp);
  c.round_floor_extents = summarize(find(st, "floor-extents")->ns_per_temp);
  c.have_round = true;
}

// ---- Uniform rounds (pair, live, size) ------------------------------------------------------

struct Slots {
  std::vector<unmanaged_view<double*, Kokkos::LayoutRight>> unmanaged;
  std::vector<managed_view<double*, Kokkos::LayoutRight>> managed;
  explicit Slots(std::size_t n) : unmanaged(n), managed(n) {}
};

/// kbuf on an un-warmed allocator: before each measured pair of rounds, `resize` brings it back
/// to `initial_capacity` bytes with its high-water mark lowered to that (what a fresh allocator
/// of that size is), and a new buffer's pages are faulted in, untimed. Round 1 then shows the
/// fallbacks an un-warmed allocator needs and what they cost; round 2 (with the regrowth it
/// triggers) shows that one warm-up removes them. Rounds are timed one by one, so the clock's
/// own overhead (measured) is subtracted.
struct ColdResult {
  Summary first, second;
  std::size_t fallbacks_first = 0, fallbacks_second = 0, capacity_after = 0;
};

double clock_overhead_ns() {
  std::vector<double> v;
  for (int i = 0; i < 1001; ++i) {
    const auto t0 = clock_type::now();
    v.push_back(seconds_since(t0) * 1e9);
  }
  return summarize(v).median;
}

/// Writes every byte of the allocator's (empty) buffer, through a temporary that spans it, so
/// its pages are mapped and the writes are legal under AddressSanitizer's poisoning. The mark
/// stays at the capacity.
void fault_in(Allocator& alloc) {
  if (alloc.capacity() == 0) return;
  auto scope = alloc.scope();
  Kokkos::deep_copy(alloc.allocate<unsigned char*>(alloc.capacity()),
                    static_cast<unsigned char>(0));
}

ColdResult measure_cold(Context& c, const UniformShape& s_in, std::size_t initial_capacity) {
  ColdResult r;
  const auto s_ptr = std::make_unique<UniformShape>(s_in);  // on the heap: see section_round
  const UniformShape& s = *s_ptr;
  std::vector<unmanaged_view<double*, Kokkos::LayoutRight>> slots(s.count);
  const double overhead = clock_overhead_ns();
  // Enough rounds for a stable median: at least 21 (3 in quick runs), more for short rounds.
  const std::size_t min_samples = c.opt.quick ? 3 : 21;
  const std::size_t samples =
      std::max(min_samples, std::min<std::size_t>(c.opt.quick ? 16 : 1024, 4096 / s.count));
  const auto alloc_ptr = std::make_unique<Allocator>(initial_capacity);
  Allocator& alloc = *alloc_ptr;
  fault_in(alloc);
  const auto p_ptr = std::make_unique<KbufPolicy<true>>(alloc);
  KbufPolicy<true>& p = *p_ptr;
  std::vector<double> first, second;
  const auto start = clock_type::now();
  for (std::size_t i = 0; i < samples; ++i) {
    if (i >= min_samples && seconds_since(start) > c.opt.timing.max_seconds) break;
    const void* old_buffer = alloc.buffer().data();
    alloc.resize(initial_capacity);
    // A new buffer's pages are faulted in (untimed): "un-warmed" means the allocator has not
    // seen the workload, not that the operating system has not mapped its memory yet.
    if (alloc.buffer().data() != old_buffer) {
      fault_in(alloc);
    }
    for (int round = 0; round < 2; ++round) {
      const std::size_t f0 = alloc.statistics().fallbacks;
      fence();
      clobber();
      const auto t0 = clock_type::now();
      uniform_round(p, s, slots.data());
      fence();
      const double ns = seconds_since(t0) * 1e9 - overhead;
      (round == 0 ? first : second).push_back(ns / static_cast<double>(s.count));
      const std::size_t f = alloc.statistics().fallbacks - f0;
      std::size_t& worst = round == 0 ? r.fallbacks_first : r.fallbacks_second;
      worst = std::max(worst, f);
    }
    r.capacity_after = alloc.capacity();
  }
  r.first = summarize(first);
  r.second = summarize(second);
  return r;
}

/// Builds and measures every strategy on rounds of `s` (count live temporaries of n doubles).
std::vector<Contender> measure_uniform(Context& c, const char* section, const UniformShape& s_in,
                                       bool with_reference_variants, std::size_t* late_fallbacks) {
  const std::vector<std::size_t> slot_bytes(s_in.count, s_in.n * sizeof(double));
  const std::size_t ab = arena_bytes_for(slot_bytes);
  auto arena = make_arena(ab);
  // On the heap, for run-to-run stable figures (see section_round).
  const auto s_ptr = std::make_unique<UniformShape>(s_in);
  const UniformShape& s = *s_ptr;
  Slots slots(s.count);
  auto floor = std::make_unique<FloorPolicy<false>>(arena.data(), ab, slot_bytes);
  auto floor_extents = std::make_unique<FloorPolicy<true>>(arena.data(), ab, slot_bytes);
  auto bump = std::make_unique<BumpPolicy>(arena.data(), ab);
  const auto alloc_ptr = std::make_unique<Allocator>();
  Allocator& alloc = *alloc_ptr;
  auto kb = std::make_unique<KbufPolicy<false>>(alloc);
  auto kbs = std::make_unique<KbufPolicy<true>>(alloc);
  auto kt = std::make_unique<TemporaryPolicy>(alloc);
  auto kv = std::make_unique<ViewTypePolicy>(alloc);
  auto managed = std::make_unique<ManagedPolicy<true>>();
  auto noinit = std::make_unique<ManagedPolicy<false>>();
  auto km = std::make_unique<KokkosMallocPolicy>(s.count);
  auto* u = slots.unmanaged.data();
  auto* m = slots.managed.data();

  uniform_round(*kb, s, u);  // the workload's first round
  const std::size_t first_fallbacks = alloc.statistics().fallbacks;

  std::vector<Contender> st;
  const std::size_t n = s.count;
  st.push_back(make_contender("floor", n, [&] { uniform_round(*floor, s, u); }));
  st.push_back(make_contender("kbuf", n, [&] { uniform_round(*kb, s, u); }));
  if (with_reference_variants) {
    st.push_back(make_contender("kbuf-scope", n, [&] { uniform_round(*kbs, s, u); }));
    st.push_back(make_contender("kbuf-temporary", n, [&] { uniform_round(*kt, s, m); }));
    st.push_back(make_contender("kbuf-view-type", n, [&] { uniform_round(*kv, s, m); }));
  }
  st.push_back(make_contender("managed", n, [&] { uniform_round(*managed, s, m); }));
  st.push_back(make_contender("managed-noinit", n, [&] { uniform_round(*noinit, s, m); }));
  st.push_back(make_contender("kokkos_malloc", n, [&] { uniform_round(*km, s, u); }));
#if KBUF_BENCH_HAVE_PMR
  std::unique_ptr<PmrPolicy> pmr;
  if constexpr (host_space) {
    pmr = std::make_unique<PmrPolicy>(arena.data(), ab);
    st.push_back(make_contender("pmr-monotonic", n, [&] { uniform_round(*pmr, s, u); }));
  }
#endif
  if (with_reference_variants) {
    st.push_back(make_contender("bump", n, [&] { uniform_round(*bump, s, u); }));
    st.push_back(make_contender("floor-extents", n, [&] { uniform_round(*floor_extents, s, u); }));
  }
  if (!measure_or_profile(c, section, st)) return {};
  *late_fallbacks = alloc.statistics().fallbacks - first_fallbacks;
  c.late_fallbacks += *late_fallbacks;
  for (auto& x : st) x.run = nullptr;  // drop references to this frame
  return st;
}

void section_pair(Context& c) {
  std::printf("\n== pair: one allocate + touch + release (64 doubles, 512 B) ==\n");
  std::size_t late = 0;
  const auto st = measure_uniform(c, "pair", UniformShape{1, 64}, true, &late);
  if (st.empty()) return;
  std::printf(
      "  ns per temporary; kbuf = checkpoint()/allocate/reset(cp), kbuf-scope = "
      "scope()/allocate/~Scope\n");
  print_contender_table(st, "kbuf");
  std::printf("  kbuf: %zu fallbacks after round 1\n", late);
  csv_strategies(c, "pair", "double64", 1, st, "kbuf");
}

// ---- Section: temporaries handed between two instances ---------------------------------------

/// A fresh instance where this Kokkos makes one (4.x: partition_space; two streams on a GPU).
execution_space second_instance() {
#if KOKKOS_VERSION >= 40000
  return Kokkos::Experimental::partition_space(execution_space(), 1)[0];
#else
  return execution_space();
#endif
}

/// Writes i into t(i) on `exec`.
struct Iota {
  Kokkos::View<double*, memory_space, Kokkos::MemoryUnmanaged> t;
  KOKKOS_INLINE_FUNCTION void operator()(const int i) const { t(i) = i; }
};

/// Each round: a temporary of 4096 doubles written by a kernel on instance a, released, then one
/// written on instance b: two hand-offs of the same memory between instances. "kbuf-handoff"
/// names the instance (allocate(exec, n): an event, no fence); "kbuf-reset-other" takes the
/// temporary without one and releases it with reset(cp, exec) (a fence of that instance per
/// release); "managed-noinit" makes a View per temporary on the instance.
void section_instances(Context& c) {
  std::printf(
      "\n== instances: a temporary handed between two instances (4096 doubles, a kernel each) "
      "==\n");
  constexpr int n = 4096;
  const execution_space a = second_instance();
  const execution_space b = second_instance();
  auto handoff_alloc = std::make_unique<kbuf::BufferAllocator<memory_space>>(std::size_t{1} << 20);
  auto reset_alloc = std::make_unique<kbuf::BufferAllocator<memory_space>>(std::size_t{1} << 20);
  auto on = [](const execution_space& e, double* p) {
    Kokkos::parallel_for("kbuf-bench::iota", Kokkos::RangePolicy<execution_space>(e, 0, n),
                         Iota{Kokkos::View<double*, memory_space, Kokkos::MemoryUnmanaged>(p, n)});
  };
  std::vector<Contender> st;
  st.push_back(make_contender("kbuf-handoff", 2, [&, al = handoff_alloc.get()] {
    for (const execution_space* e : {&a, &b}) {
      auto scope = al->scope();
      on(*e, al->allocate<double*>(*e, n).data());
    }
  }));
  st.push_back(make_contender("kbuf-reset-other", 2, [&, al = reset_alloc.get()] {
    for (const execution_space* e : {&a, &b}) {
      const auto cp = al->checkpoint();
      on(*e, al->allocate<double*>(n).data());
      al->reset(cp, *e);
    }
  }));
  st.push_back(make_contender("managed-noinit", 2, [&] {
    for (const execution_space* e : {&a, &b}) {
      Kokkos::View<double*, memory_space> t(
          Kokkos::view_alloc(*e, Kokkos::WithoutInitializing, "kbuf-bench::handed"), n);
      on(*e, t.data());
    }
  }));
  if (!measure_or_profile(c, "instances", st)) return;
  std::printf("  ns per temporary (a kernel on its instance included); %s\n",
              KOKKOS_VERSION >= 40000
                  ? "two instances from partition_space (two streams on a GPU)"
                  : "Kokkos 3.4 makes no second instance: both are the default");
  print_contender_table(st, "kbuf-handoff");
  const kbuf::Statistics h = handoff_alloc->statistics();
  std::printf(
      "  kbuf-handoff: %zu hand-offs (%zu host waits), %zu fences by kbuf; "
      "kbuf-reset-other fences an instance at every release\n",
      h.handoffs, h.host_waits, h.fences);
  csv_strategies(c, "instances", "double4096", 2, st, "kbuf-handoff");
}

/// Prints one scaling table: rows = x, columns = medians per strategy, plus kbuf's first round on
/// an un-warmed allocator with the fallbacks of rounds 1 and 2.
struct ScalingRow {
  std::string label;
  double x;
  std::vector<Contender> st;
  ColdResult cold;
  std::size_t late = 0;
};

void print_scaling(const std::vector<ScalingRow>& rows, const char* xname,
                   std::size_t initial_capacity) {
  if (rows.empty()) return;
  std::printf(
      "  median ns per temporary; 'kbuf 1st' = round 1 on a fresh allocator of %s "
      "(fb1/fb2: its fallbacks in rounds 1 and 2)\n",
      bytes_label(initial_capacity).c_str());
  std::printf("  %-9s", xname);
  for (const auto& s : rows.front().st) std::printf(" %14s", s.name.c_str());
  std::printf(" %10s %6s %4s %8s\n", "kbuf 1st", "fb1", "fb2", "late fb");
  for (const auto& r : rows) {
    std::printf("  %-9s", r.label.c_str());
    for (const auto& s : r.st) std::printf(" %14.2f", summarize(s.ns_per_temp).median);
    std::printf(" %10.2f %6zu %4zu %8zu\n", r.cold.first.median, r.cold.fallbacks_first,
                r.cold.fallbacks_second, r.late);
  }
  std::printf("  ratio to kbuf (median / kbuf median)\n  %-9s", xname);
  for (const auto& s : rows.front().st) std::printf(" %14s", s.name.c_str());
  std::printf(" %10s\n", "kbuf 1st");
  for (const auto& r : rows) {
    const double k = summarize(find(r.st, "kbuf")->ns_per_temp).median;
    std::printf("  %-9s", r.label.c_str());
    for (const auto& s : r.st) std::printf(" %14.2f", summarize(s.ns_per_temp).median / k);
    std::printf(" %10.2f\n", r.cold.first.median / k);
  }
}

void csv_scaling(Context& c, const char* section, const char* workload,
                 const std::vector<ScalingRow>& rows) {
  for (const auto& r : rows) {
    csv_strategies(c, section, workload, r.x, r.st, "kbuf");
    const double k = summarize(find(r.st, "kbuf")->ns_per_temp).median;
    c.csv.row(section, workload, r.x, "kbuf-first-round", r.cold.first, r.cold.first.median / k,
              static_cast<long long>(r.cold.fallbacks_first), -1);
    c.csv.row(section, workload, r.x, "kbuf-second-round", r.cold.second, r.cold.second.median / k,
              static_cast<long long>(r.cold.fallbacks_second),
              static_cast<long long>(r.cold.capacity_after));
  }
  c.csv.flush();
}

void section_live(Context& c) {
  const std::size_t cold_capacity = std::size_t{64} << 10;
  std::printf(
      "\n== live: N temporaries of 512 B (64 doubles) live at once, released together ==\n");
  std::vector<ScalingRow> rows;
  for (std::size_t count = 1; count <= c.opt.max_live; count *= 4) {
    ScalingRow r;
    r.label = std::to_string(count);
    r.x = static_cast<double>(count);
    const UniformShape s{count, 64};
    r.st = measure_uniform(c, "live", s, false, &r.late);
    if (r.st.empty()) return;
    r.cold = measure_cold(c, s, cold_capacity);
    c.late_fallbacks += r.cold.fallbacks_second;
    rows.push_back(std::move(r));
    std::fflush(stdout);
  }
  print_scaling(rows, "live", cold_capacity);
  csv_scaling(c, "live", "double64", rows);
}

void section_size(Context& c) {
  const std::size_t cold_capacity = std::size_t{1} << 20;
  std::printf("\n== size: 4 live temporaries of S bytes each (double*), released together ==\n");
  std::vector<ScalingRow> rows;
  for (std::size_t bytes = 64; bytes <= c.opt.max_size; bytes *= 4) {
    ScalingRow r;
    r.label = bytes_label(bytes);
    r.x = static_cast<double>(bytes);
    const UniformShape s{4, bytes / sizeof(double)};
    r.st = measure_uniform(c, "size", s, false, &r.late);
    if (r.st.empty()) return;
    r.cold = measure_cold(c, s, cold_capacity);
    c.late_fallbacks += r.cold.fallbacks_second;
    rows.push_back(std::move(r));
    std::fflush(stdout);
  }
  print_scaling(rows, "size", cold_capacity);
  csv_scaling(c, "size", "4x", rows);
}

// ---- Section: warm-up ------------------------------------------------------------------------

void section_warmup(Context& c) {
  std::printf("\n== warmup: rounds until zero fallbacks, from an empty allocator ==\n");
  std::printf(
      "  kbuf: high-water mark = peak need, fallbacks included. TO-model: the "
      "TensorOperations-style mark\n  (peak of carved offset + request; a fallback does "
      "not advance the offset, so it is forgotten).\n");
  const std::size_t rounds = 10;
  std::printf("  %-18s %-6s %s\n", "workload", "", "fallbacks in rounds 1..10 | capacity after");
  for (const Workload& w : warmup_workloads()) {
    Allocator alloc;
    TensorOperationsModel model;
    std::vector<std::size_t> kf, mf;
    for (std::size_t r = 0; r < rounds; ++r) {
      kf.push_back(run_workload_kbuf(alloc, w));
      mf.push_back(run_workload_model(model, w));
      Summary none;
      c.csv.row("warmup", w.name, static_cast<double>(r + 1), "kbuf", none, -1,
                static_cast<long long>(kf.back()), static_cast<long long>(alloc.capacity()));
      c.csv.row("warmup", w.name, static_cast<double>(r + 1), "to-model", none, -1,
                static_cast<long long>(mf.back()), static_cast<long long>(model.capacity()));
    }
    for (std::size_t r = 1; r < rounds; ++r) c.late_fallbacks += kf[r];
    auto line = [&](const char* who, const std::vector<std::size_t>& f, std::size_t cap) {
      std::printf("  %-18s %-8s", w.name.c_str(), who);
      for (std::size_t x : f) std::printf(" %2zu", x);
      std::size_t first_zero = 0;  // first round from which every round has zero fallbacks
      for (std::size_t r = f.size(); r-- > 0;) {
        if (f[r] != 0) break;
        first_zero = r + 1;
      }
      if (first_zero == 0)
        std::printf(" | %9zu B  never zero within %zu rounds\n", cap, f.size());
      else
        std::printf(" | %9zu B  zero from round %zu\n", cap, first_zero);
    };
    line("kbuf", kf, alloc.capacity());
    line("TO-model", mf, model.capacity());
  }
}

void print_header(const Context& c) {
  std::printf("kbuf-bench: cost of a temporary, kbuf vs the alternatives\n");
  std::printf("  Kokkos %s, backend %s (execution space %s, memory space %s)\n",
              kbuf::Impl::kokkos_version_string(KOKKOS_VERSION).c_str(), KBUF_BACKEND_NAME,
              execution_space::name(), memory_space::name());
#if defined(__VERSION__)
  std::printf("  compiler %s, build %s%s\n", __VERSION__, KBUF_BENCH_BUILD_TYPE,
#if defined(NDEBUG)
              ""
#else
              " (assertions on)"
#endif
  );
#endif
  std::printf(
      "  up to %zu samples per figure (at least %zu, or until %.1f s), strategies "
      "interleaved (order rotated per\n  repetition), each sample >= %.2f ms of rounds%s\n",
      c.opt.timing.repetitions, std::min(c.opt.timing.min_repetitions, c.opt.timing.repetitions),
      c.opt.timing.max_seconds, c.opt.timing.min_sample_seconds * 1e3,
      c.opt.quick ? "; --quick: a smoke run, figures are not meaningful" : "");
  if (KBUF_ENABLE_DEBUG) {
    std::printf(
        "  WARNING: kbuf's debug checks are on (KBUF_ENABLE_DEBUG): figures are not "
        "kbuf's release costs\n");
  }
}

void print_summary(const Context& c) {
  std::printf("\n== summary ==\n");
  if (c.have_round) {
    const Summary &k = c.round_kbuf, &f = c.round_floor, &n = c.round_noinit, &m = c.round_managed,
                  &b = c.round_bump;
    std::printf("  round of 8, ns per temporary, median (min):\n");
    std::printf(
        "    kbuf %.2f (%.2f) = %.2fx (%.2fx) the floor %.2f (%.2f); bare bump %.2f (%.2f) "
        "= %.2fx (%.2fx) the floor\n",
        k.median, k.min, k.median / f.median, k.min / f.min, f.median, f.min, b.median, b.min,
        b.median / f.median, b.min / f.min);
    const Summary& fe = c.round_floor_extents;
    std::printf("    kbuf = %.2fx (%.2fx) the floor built as View(ptr, extents...), %.2f (%.2f)\n",
                k.median / fe.median, k.min / fe.min, fe.median, fe.min);
    std::printf(
        "    managed-noinit %.1f (%.1f) = %.1fx (%.1fx) kbuf; managed %.1f (%.1f) = %.0fx "
        "(%.0fx) kbuf\n",
        n.median, n.min, n.median / k.median, n.min / k.min, m.median, m.min, m.median / k.median,
        m.min / k.min);
  }
  std::printf("  kbuf fallbacks after the first round of a repeated workload: %zu%s\n",
              c.late_fallbacks, c.late_fallbacks == 0 ? "" : "  <-- FAILURE");
}

int usage(const char* argv0, int status) {
  std::printf(
      "usage: %s [--quick] [--reps N] [--min-sample-ms X] [--csv FILE] [--sections LIST]\n"
      "          [--max-live N] [--max-size BYTES] [--tensor-max-d D]\n"
      "          [--profile SECTION:STRATEGY:ROUNDS]\n"
      "  LIST: comma-separated of round,pair,instances,live,size,warmup,threads,tensor (default: "
      "all)\n"
      "  --quick: a few seconds in all (CI smoke test; figures not meaningful)\n",
      argv0);
  return status;
}

}  // namespace
}  // namespace kbuf_bench

int main(int argc, char* argv[]) {
  using namespace kbuf_bench;
  Kokkos::ScopeGuard guard(argc, argv);
  Context c;
  Options& o = c.opt;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "kbuf-bench: %s needs a value\n", a.c_str());
        std::exit(usage(argv[0], 2));
      }
      return argv[++i];
    };
    if (a == "--quick") {
      o.quick = true;
    } else if (a == "--reps") {
      o.timing.repetitions = std::strtoul(value(), nullptr, 10);
    } else if (a == "--min-sample-ms") {
      o.timing.min_sample_seconds = std::strtod(value(), nullptr) * 1e-3;
    } else if (a == "--csv") {
      o.csv_path = value();
    } else if (a == "--sections") {
      o.sections = value();
    } else if (a == "--threads") {
      o.threads = value();
    } else if (a == "--max-live") {
      o.max_live = std::strtoul(value(), nullptr, 10);
    } else if (a == "--max-size") {
      o.max_size = std::strtoull(value(), nullptr, 10);
    } else if (a == "--tensor-max-d") {
      o.tensor_max_d = std::strtoul(value(), nullptr, 10);
    } else if (a == "--profile") {
      const std::string v = value();
      const auto p1 = v.find(':'), p2 = v.rfind(':');
      if (p1 == std::string::npos || p2 == p1) return usage(argv[0], 2);
      o.profile_section = v.substr(0, p1);
      o.profile_strategy = v.substr(p1 + 1, p2 - p1 - 1);
      o.profile_rounds = std::strtoull(v.c_str() + p2 + 1, nullptr, 10);
      o.sections = o.profile_section;
    } else if (a == "--help" || a == "-h") {
      return usage(argv[0], 0);
    } else if (a.rfind("--kokkos", 0) == 0) {
      // left to Kokkos
    } else {
      std::fprintf(stderr, "kbuf-bench: unknown argument '%s'\n", a.c_str());
      return usage(argv[0], 2);
    }
  }
  if (o.quick) {
    o.timing.repetitions = std::min<std::size_t>(o.timing.repetitions, 3);
    o.timing.min_sample_seconds = std::min(o.timing.min_sample_seconds, 2e-5);
    o.timing.warmup_rounds = 1;
    o.timing.max_seconds = 0.05;
    o.max_live = std::min<std::size_t>(o.max_live, 256);
    o.max_size = std::min<std::size_t>(o.max_size, std::size_t{1} << 20);
    o.tensor_max_d = std::min<std::size_t>(o.tensor_max_d, 8);
  }
  if (o.timing.repetitions == 0) o.timing.repetitions = 1;
  if (!o.csv_path.empty() && !c.csv.open(o.csv_path)) {
    std::fprintf(stderr, "kbuf-bench: cannot write '%s'\n", o.csv_path.c_str());
    return 2;
  }
  {
    char line[256];
    std::snprintf(line, sizeof line, "kokkos=%s backend=%s reps=%zu min_sample_ms=%.3f%s",
                  kbuf::Impl::kokkos_version_string(KOKKOS_VERSION).c_str(), KBUF_BACKEND_NAME,
                  o.timing.repetitions, o.timing.min_sample_seconds * 1e3, o.quick ? " quick" : "");
    c.csv.comment(line);
    c.csv.header();
  }
  print_header(c);
  if (c.wants("round")) section_round(c);
  if (c.wants("pair")) section_pair(c);
  if (c.wants("instances")) section_instances(c);
  if (c.wants("live")) section_live(c);
  if (c.wants("size")) section_size(c);
  if (c.wants("warmup")) section_warmup(c);
  if (c.wants("threads")) section_threads(c);
  if (c.wants("tensor")) section_tensor(c);
  if (!o.profile_section.empty()) return 0;
  print_summary(c);
  return c.late_fallbacks == 0 ? 0 : 1;
}
