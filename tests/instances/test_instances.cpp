// Execution space instances: what each allocator call costs in fences and allocations, counted
// through Kokkos Tools callbacks. The hot path (allocate and reset of fitting temporaries) must
// cost nothing; memory is released or regrown only after a fence of the allocator's own
// instance; kbuf never fences the whole device. Kokkos itself may fence inside a free (Kokkos
// 4.x HostSpace fences the host before every free); those fences are told apart by name and
// reported, not hidden.
#include <doctest/doctest.h>

#include <kbuf/kbuf.hpp>

#include "test_support.hpp"
#include "tool_recorder.hpp"

#include <cstddef>
#include <cstdlib>
#include <string>
#include <type_traits>
#include <vector>

namespace {

using kbuf_test::ToolEvent;
using kbuf_test::ToolRecorder;

using space = kbuf_test::space;  // the default space, or the foreign one (test_support.hpp)
using exec_space = space::execution_space;
using Alloc = kbuf::BufferAllocator<space>;

constexpr std::size_t big_count = 4096;  // doubles: 32 KiB, above the small test buffers

/// A fresh instance where this Kokkos can make one (4.x: partition_space), else the default.
exec_space make_instance() {
#if KOKKOS_VERSION >= 40000
  return Kokkos::Experimental::partition_space(exec_space(), 1)[0];
#else
  return exec_space();
#endif
}

/// Kokkos 3.4 does not report Serial fences to tools: the fence checks then cannot run.
bool fences_observable() {
  static const bool observable = kbuf_test::fences_are_observable(exec_space());
  return observable;
}

bool is_allocation(const ToolEvent& e) {
  return e.kind == ToolEvent::allocation;
}
bool is_deallocation(const ToolEvent& e) {
  return e.kind == ToolEvent::deallocation;
}

/// Fences other than the ones Kokkos issues inside a free.
std::size_t fences_outside_frees(const ToolRecorder& rec) {
  return rec.count([](const ToolEvent& e) {
    return e.kind == ToolEvent::fence && !kbuf_test::is_fence_inside_a_free(e);
  });
}

/// Where fences are observable: kbuf fenced once, its own instance, before the first free, and
/// no global fence that the frees do not explain.
void check_one_own_fence_before_frees(const ToolRecorder& rec, const exec_space& exec) {
  if (!fences_observable()) return;
  CHECK(rec.kbuf_fences() == 1);
  CHECK(rec.kbuf_fences_of(exec) == 1);
  CHECK(rec.first(kbuf_test::is_kbuf_fence) < rec.first(is_deallocation));
  CHECK(rec.unexplained_global_fences() == 0);
}

/// Kokkos 4.x fences the whole host before every HostSpace free: say so, do not hide it. With
/// KBUF_TEST_REPORT_EVENTS set in the environment, lists every event (scripts/gpu-check.sh
/// reports them).
void report_events(const ToolRecorder& rec, const char* what) {
  std::string message = what;
  if (std::getenv("KBUF_TEST_REPORT_EVENTS") != nullptr) {
    message += ": " + std::to_string(rec.events().size()) + " events\n" + rec.describe();
  } else if (rec.first(kbuf_test::is_fence_inside_a_free) != rec.events().size()) {
    message += ": Kokkos itself fenced " +
               std::to_string(rec.count(kbuf_test::is_fence_inside_a_free)) +
               " time(s) inside its frees (\"" +
               rec.events()[rec.first(kbuf_test::is_fence_inside_a_free)].name + "\")";
  } else {
    return;
  }
  MESSAGE(message);
}

}  // namespace

TEST_CASE("Kokkos reports fences to tools from version 3.5 on, so the fence checks run") {
#if KOKKOS_VERSION >= 30500
  CHECK(fences_observable());
#else
  MESSAGE("Kokkos " << KOKKOS_VERSION
                    << " reports no fences to tools: fences are counted "
                       "through kbuf's statistics only");
  CHECK_FALSE(fences_observable());
#endif
}

TEST_CASE("an allocator bound to an instance takes its buffer uninitialised and without a fence") {
  const exec_space exec = make_instance();
  ToolRecorder rec;
  {
    Alloc alloc(exec, 1 << 16, Alloc::default_alignment, "kbuf-test");
    INFO(rec.describe());
    CHECK(alloc.capacity() == (1u << 16));
    CHECK(rec.count(is_allocation) >= 1);
    CHECK(rec.count([](const ToolEvent& e) {
      return is_allocation(e) && e.name != "kbuf-test::buffer";
    }) == 0);
    CHECK(rec.count(ToolEvent::kernel) == 0);  // no initialisation kernel, no memset
    CHECK(fences_outside_frees(rec) == 0);
    CHECK(alloc.statistics().fences == 0);
    report_events(rec, "construction with a 64 KiB buffer");
    rec.clear();
  }
}

TEST_CASE("allocating and resetting fitting temporaries issues no fence, allocation or kernel") {
  const exec_space exec = make_instance();
  Alloc alloc(exec, 1 << 16, Alloc::default_alignment, "kbuf-test");
  const auto before = alloc.statistics();
  ToolRecorder rec;
  for (int round = 0; round < 1000; ++round) {
    {
      auto scope = alloc.scope();
      auto a = alloc.allocate<double**>(16, 16);
      auto b = alloc.allocate<float*, Kokkos::LayoutLeft>(100 + round % 7);
      const auto cp = alloc.checkpoint();
      auto c = alloc.allocate<int* [3]>(7);
      alloc.reset(cp);
      auto d = alloc.allocate<Kokkos::complex<double>***>(2, 3, 4);
      (void)a, (void)b, (void)c, (void)d;
    }
    auto e = alloc.allocate<char*>(round);
    (void)e;
    alloc.reset();
  }
  INFO(rec.describe());
  report_events(rec, "1000 rounds of allocate/checkpoint/reset/scope that fit");
  CHECK(rec.events().empty());
  const auto after = alloc.statistics();
  CHECK(after.fences == before.fences);
  CHECK(after.fallbacks == 0);
  CHECK(after.regrows == 0);
  CHECK(after.temporaries - before.temporaries == 4999);  // round 0's `e` is empty:
  CHECK(after.empty - before.empty == 1);                 // counted apart
}

TEST_CASE(
    "a fallback is taken without a fence and freed only after one fence of the own instance") {
  const exec_space exec = make_instance();
  Alloc alloc(exec, 256, Alloc::default_alignment, "kbuf-test");
  ToolRecorder rec;
  const auto cp = alloc.checkpoint();
  auto big = alloc.allocate<double*>(big_count);
  (void)big;
  REQUIRE(alloc.live_fallbacks() == 1);
  {
    INFO(rec.describe());
    CHECK(rec.count(is_allocation) == 1);
    CHECK(rec.first(is_allocation) < rec.events().size());
    CHECK(rec.events()[rec.first(is_allocation)].name == "kbuf-test::fallback");
    CHECK(rec.count(ToolEvent::kernel) == 0);
    CHECK(fences_outside_frees(rec) == 0);
    report_events(rec, "allocating a fallback");
  }
  rec.clear();
  const auto fences_before = alloc.statistics().fences;
  alloc.reset(cp);
  INFO(rec.describe());
  report_events(rec, "a reset that frees a fallback");
  CHECK(alloc.statistics().fences == fences_before + 1);
  CHECK(rec.count(is_deallocation) == 1);
  check_one_own_fence_before_frees(rec, exec);
  if (fences_observable()) CHECK(fences_outside_frees(rec) == 1);
}

TEST_CASE("regrowth fences the own instance once, frees the old buffer, then takes the new one") {
  const exec_space exec = make_instance();
  Alloc alloc(exec, 256, Alloc::default_alignment, "kbuf-test");
  {
    auto scope = alloc.scope();
    (void)alloc.allocate<double*>(big_count);  // a fallback: raises the high-water mark
  }
  REQUIRE(alloc.high_water_mark() > alloc.capacity());
  ToolRecorder rec;
  const auto fences_before = alloc.statistics().fences;
  auto t = alloc.allocate<double*>(big_count);  // regrows first, then carves
  INFO(rec.describe());
  report_events(rec, "an allocate that regrows the buffer");
  CHECK(alloc.statistics().regrows == 1);
  CHECK(alloc.live_fallbacks() == 0);
  CHECK(alloc.statistics().fences == fences_before + 1);
  CHECK(rec.count(is_deallocation) == 1);
  CHECK(rec.count(is_allocation) == 1);  // the new buffer at once, no realignment retry
  CHECK(rec.first(is_deallocation) < rec.first(is_allocation));
  CHECK(rec.count(ToolEvent::kernel) == 0);
  check_one_own_fence_before_frees(rec, exec);
  if (fences_observable()) CHECK(fences_outside_frees(rec) == 1);
  (void)t;
  rec.clear();
  alloc.reset();
  for (int round = 0; round < 10; ++round) {  // the second identical round: free of charge
    auto again = alloc.allocate<double*>(big_count);
    (void)again;
    alloc.reset();
  }
  CHECK(rec.events().empty());
}

TEST_CASE("destruction fences the own instance once, then frees the buffer and fallbacks") {
  const exec_space exec = make_instance();
  ToolRecorder rec;
  {
    Alloc alloc(exec, 256, Alloc::default_alignment, "kbuf-test");
    auto live = alloc.allocate<double*>(big_count);  // a live fallback at destruction
    (void)live;
    rec.clear();
  }
  INFO(rec.describe());
  report_events(rec, "destruction with a live fallback");
  CHECK(rec.count(is_deallocation) == 2);
  CHECK(rec.count(is_allocation) == 0);
  check_one_own_fence_before_frees(rec, exec);
}

TEST_CASE("an allocator that never took memory neither fences nor frees when destroyed") {
  const exec_space exec = make_instance();
  ToolRecorder rec;
  { Alloc alloc(exec, 0, Alloc::default_alignment, "kbuf-test"); }
  INFO(rec.describe());
  CHECK(rec.events().empty());
}

TEST_CASE("resize fences the own instance once before it frees the buffer") {
  const exec_space exec = make_instance();
  Alloc alloc(exec, 1024, Alloc::default_alignment, "kbuf-test");
  ToolRecorder rec;
  alloc.resize(1024);  // same capacity: nothing to do
  CHECK(rec.events().empty());
  alloc.resize(8192);
  INFO(rec.describe());
  report_events(rec, "resize");
  CHECK(alloc.capacity() == 8192);
  CHECK(alloc.statistics().fences == 1);
  CHECK(rec.count(is_deallocation) == 1);
  CHECK(rec.count(is_allocation) == 1);
  if (fences_observable()) {
    CHECK(rec.kbuf_fences_of(exec) == 1);
    CHECK(rec.first(kbuf_test::is_kbuf_fence) < rec.first(is_deallocation));
    CHECK(rec.unexplained_global_fences() == 0);
  }
}

// Where a View's data lands depends on the space and on the heap: CUDA's sits 128 bytes past a
// 256-aligned header, the host's anywhere on a 64-byte boundary (and 4096 is asked for here).
// Freeing and retrying would synchronise a GPU (cudaFree), and the number of allocations would
// depend on luck: every buffer takes its slack at once, so each regrowth allocates exactly once,
// whatever the alignment and wherever the heap puts things.
TEST_CASE("every regrowth allocates exactly once, with its slack, whatever the alignment") {
  const exec_space exec = make_instance();
  for (const std::size_t alignment : {std::size_t{8}, std::size_t{64}, std::size_t{256},
                                      std::size_t{4096}, std::size_t{1} << 16}) {
    CAPTURE(alignment);
    ToolRecorder rec;
    {
      Alloc alloc(exec, 4096, alignment, "kbuf-test");
      const int regrowths = 12;
      for (int i = 0; i < regrowths; ++i) {
        alloc.resize(std::size_t(4096) * (i + 2));
        CHECK(kbuf_test::address(alloc.buffer().data()) % alignment == 0);
        CHECK(alloc.buffer().size() == alloc.capacity());
      }
      INFO(rec.describe());
      CHECK(alloc.statistics().regrows == regrowths);
      CHECK(rec.count(is_allocation) == regrowths + 1);  // one per buffer, the first included
      CHECK(rec.count(is_deallocation) == regrowths);
      // Each allocation is the capacity and alignment - 1 bytes of slack (Kokkos may round up
      // to 8 on the legacy View), never more.
      const auto& events = rec.events();
      std::size_t nth = 0;
      for (const auto& e : events) {
        if (e.kind != ToolEvent::allocation) continue;
        const std::size_t capacity = std::size_t(4096) * (nth + 1);
        CAPTURE(nth);
        CHECK(e.bytes >= capacity + alignment - 1);
        CHECK(e.bytes <= capacity + alignment - 1 + 7);
        ++nth;
      }
    }
  }
}

TEST_CASE("reset(checkpoint, other) fences the other instance, and the own one only to free") {
  const exec_space exec = make_instance();
  const exec_space other = make_instance();
  Alloc alloc(exec, 4096, Alloc::default_alignment, "kbuf-test");
  const auto is_other_fence = [](const ToolEvent& e) {
    return kbuf_test::is_kbuf_fence(e) && e.name.find("other instance") != std::string::npos;
  };
  SUBCASE("temporaries in the buffer: one fence of the other instance, none of the own") {
    const auto cp = alloc.checkpoint();
    auto t = alloc.allocate<double*>(64);
    (void)t;
    ToolRecorder rec;
    alloc.reset(cp, other);
    INFO(rec.describe());
    report_events(rec, "reset(cp, other) of temporaries in the buffer");
    CHECK(alloc.empty());
    CHECK(alloc.statistics().fences == 0);  // the own instance was not fenced
    CHECK(rec.count(ToolEvent::allocation) + rec.count(ToolEvent::deallocation) == 0);
    if (fences_observable()) {
      CHECK(rec.count(ToolEvent::fence) == 1);
      CHECK(rec.count(is_other_fence) == 1);
      CHECK(rec.kbuf_fences_of(other) == 1);
      CHECK(rec.global_fences() == 0);
    }
  }
  SUBCASE("a live fallback: the other instance, then the own one, then the free") {
    const auto cp = alloc.checkpoint();
    auto t = alloc.allocate<double*>(big_count);
    (void)t;
    REQUIRE(alloc.live_fallbacks() == 1);
    ToolRecorder rec;
    alloc.reset(cp, other);
    INFO(rec.describe());
    report_events(rec, "reset(cp, other) that frees a fallback");
    CHECK(alloc.statistics().fences == 1);
    CHECK(rec.count(is_deallocation) == 1);
    if (fences_observable()) {
      CHECK(rec.kbuf_fences() == 2);
      CHECK(rec.first(is_other_fence) == rec.first(kbuf_test::is_kbuf_fence));
      CHECK(rec.kbuf_fences_of(exec) >= 1);
      CHECK(rec.unexplained_global_fences() == 0);
    }
  }
  SUBCASE("a released checkpoint throws before anything is fenced") {
    const auto cp = alloc.checkpoint();
    auto t = alloc.allocate<double*>(64);
    (void)t;
    const auto inner = alloc.checkpoint();
    alloc.reset(cp);
    ToolRecorder rec;
    CHECK_THROWS_AS(alloc.reset(inner, other), kbuf::logic_error);
    CHECK(rec.events().empty());
  }
}

#if KOKKOS_VERSION >= 40000
/// Two instances from partition_space where it can make them: an OpenMP instance needs an OpenMP
/// thread of its own (partition_space aborts otherwise, e.g. with OMP_NUM_THREADS=1); there the
/// default instance twice, and the fences are told apart by the allocators' labels and counts.
std::vector<exec_space> two_instances() {
#if defined(KOKKOS_ENABLE_OPENMP)
  if (std::is_same<exec_space, Kokkos::OpenMP>::value && exec_space().concurrency() < 2) {
    MESSAGE("OpenMP runs " << exec_space().concurrency()
                           << " thread: both allocators use the default instance");
    return {exec_space(), exec_space()};
  }
#endif
  const auto parts = Kokkos::Experimental::partition_space(exec_space(), 1, 1);
  return std::vector<exec_space>(parts.begin(), parts.end());  // a std::array on newer Kokkos
}

TEST_CASE("allocators on two instances fence only their own instance") {
  const auto parts = two_instances();
  const exec_space a_exec = parts[0];
  const exec_space b_exec = parts[1];
  Alloc a(a_exec, 256, Alloc::default_alignment, "kbuf-a");
  Alloc b(b_exec, 256, Alloc::default_alignment, "kbuf-b");
  const auto cp_a = a.checkpoint();
  const auto cp_b = b.checkpoint();
  auto ta = a.allocate<double*>(big_count);
  auto tb = b.allocate<double*>(big_count);
  (void)ta, (void)tb;
  ToolRecorder rec;
  a.reset(cp_a);
  INFO(rec.describe());
  report_events(rec, "two instances: allocator a frees its fallback");
  CHECK(a.statistics().fences == 1);
  CHECK(b.statistics().fences == 0);
  CHECK(b.live_fallbacks() == 1);
  if (fences_observable()) {
    const auto names = [](const char* label) {
      return [label](const ToolEvent& e) {
        return kbuf_test::is_kbuf_fence(e) && e.name.find(label) != std::string::npos;
      };
    };
    CHECK(rec.count(names("[kbuf-a]")) == 1);
    CHECK(rec.count(names("[kbuf-b]")) == 0);
    CHECK(rec.kbuf_fences_of(a_exec) == 1);
    CHECK(rec.unexplained_global_fences() == 0);
    if (kbuf_test::tool_device_id(a_exec) != kbuf_test::tool_device_id(b_exec)) {
      CHECK(rec.kbuf_fences_of(b_exec) == 0);
    } else {
      MESSAGE(
          "both instances report under one tool id (one instance, or a backend that reports "
          "every instance under one, as Kokkos' Serial does): the fences are told apart by the "
          "allocators' labels only");
    }
  }
  rec.clear();
  b.reset(cp_b);
  CHECK(b.statistics().fences == 1);
  CHECK(a.statistics().fences == 1);
}
#endif

TEST_CASE("a pool bound to an instance makes allocators that fence that instance only") {
  const exec_space exec = make_instance();
  kbuf::AllocatorPool<space> pool(exec, 256, Alloc::default_alignment, "pool-a");
  Alloc& alloc = pool.local();
  CHECK(kbuf_test::tool_device_id(alloc.execution_space_instance()) ==
        kbuf_test::tool_device_id(exec));
  CHECK(kbuf_test::tool_device_id(pool.execution_space_instance()) ==
        kbuf_test::tool_device_id(exec));
  CHECK(alloc.capacity() == kbuf::buffer_size(256));
  const auto cp = alloc.checkpoint();
  auto t = alloc.allocate<double*>(big_count);  // does not fit: a fallback
  (void)t;
  ToolRecorder rec;
  alloc.reset(cp);  // frees the fallback after fencing the bound instance
  INFO(rec.describe());
  CHECK(alloc.statistics().fences == 1);
  if (fences_observable()) {
    CHECK(rec.count([](const ToolEvent& e) {
      return kbuf_test::is_kbuf_fence(e) && e.name.find("[pool-a[0]]") != std::string::npos;
    }) == 1);
    CHECK(rec.kbuf_fences_of(exec) == 1);
    CHECK(rec.unexplained_global_fences() == 0);
  }
}

namespace {
// Each team takes a few doubles from its arena and writes one.
struct TakeOne {
  kbuf::Workspace<space> ws;
  KOKKOS_INLINE_FUNCTION void operator()(
      const typename Kokkos::TeamPolicy<exec_space>::member_type& team) const {
    auto arena = ws.arena(team);
    auto v = arena.take<double*>(8);
    Kokkos::single(Kokkos::PerTeam(team), [&]() { v.data()[0] = team.league_rank(); });
  }
};
}  // namespace

TEST_CASE("finish() copies the counters on the allocator's instance and fences that one only") {
  const exec_space exec = make_instance();
  Alloc alloc(exec, 64 * 1024, Alloc::default_alignment, "kbuf-finish");
  const Kokkos::TeamPolicy<exec_space> policy(alloc.execution_space_instance(), 8, 1);
  auto scope = alloc.scope();
  auto ws = alloc.workspace(policy, kbuf::per_team{1024}, "finish fences");
  Kokkos::parallel_for("takes", policy, TakeOne{ws});
  const std::size_t fences_before = alloc.statistics().fences;
  ToolRecorder rec;
  const kbuf::WorkspaceReport r = ws.finish();
  INFO(rec.describe());
  report_events(rec, "finish()");
  CHECK(r.takes == 8);
  CHECK(alloc.statistics().fences == fences_before + 1);
  if (fences_observable()) {
    // A deep_copy without the instance would show here as Kokkos' global fences
    // ("Kokkos::deep_copy: copy between contiguous views, ...").
    CHECK(rec.unexplained_global_fences() == 0);
    CHECK(rec.kbuf_fences() == 1);
    CHECK(rec.kbuf_fences_of(exec) == 1);
  }
}

// Kernels of its own touch the foreign space only through foreign_kernels.hpp: this case runs in
// the default space (on a GPU, its memory; here the host's).
#if !(defined(KBUF_TEST_FOREIGN_SPACE) && KBUF_TEST_FOREIGN_SPACE)
namespace {
// A round's temporary: base + i.
struct FillRound {
  Alloc::view<double*> t;
  double base;
  KOKKOS_INLINE_FUNCTION void operator()(const int i) const { t(i) = base + i; }
};
// Row r of out: the round's temporary.
struct CopyRow {
  Kokkos::View<double**, space> out;
  Alloc::view<double*> t;
  int r;
  KOKKOS_INLINE_FUNCTION void operator()(const int i) const { out(r, i) = t(i); }
};
}  // namespace

TEST_CASE(
    "temporaries handed back and forth between two instances (two streams on a GPU): "
    "every result right, no fence by kbuf, no global fence") {
  const exec_space a = make_instance();
  const exec_space b = make_instance();
  Alloc alloc(1 << 16);
  constexpr int n = 1 << 12;
  constexpr int rounds = 8;
  const Kokkos::View<double**, space> out("out", rounds, n);
  Kokkos::fence();
  ToolRecorder rec;
  for (int r = 0; r < rounds; ++r) {
    const exec_space& on = r % 2 == 0 ? a : b;
    auto s = alloc.scope();
    auto t = alloc.allocate<double*>(on, "handed", n);
    Kokkos::parallel_for("fill round", Kokkos::RangePolicy<exec_space>(on, 0, n),
                         FillRound{t, 1000.0 * r});
    Kokkos::parallel_for("copy round", Kokkos::RangePolicy<exec_space>(on, 0, n),
                         CopyRow{out, t, r});
  }  // each scope's end: no fence
  const std::size_t kbuf_fences = rec.kbuf_fences();
  // With a tool loaded, Kokkos 4 fences before each kernel itself ("Kokkos Profile Tool
  // Fence"): the tool's price, not kbuf's, and there without kbuf too.
  const std::size_t global_fences = rec.count([](const ToolEvent& e) {
    return kbuf_test::is_global_fence(e) && !kbuf_test::is_fence_inside_a_free(e) &&
           e.name.find("Kokkos Profile Tool Fence") == std::string::npos;
  });
  INFO(rec.describe());
  a.fence();
  b.fence();
  const auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), out);
  std::size_t wrong = 0;
  for (int r = 0; r < rounds; ++r) {
    for (int i = 0; i < n; ++i) wrong += host(r, i) != 1000.0 * r + i ? 1 : 0;
  }
  CHECK(wrong == 0);
  CHECK(kbuf_fences == 0);
  CHECK(global_fences == 0);
  CHECK(alloc.statistics().fences == 0);
  CHECK(alloc.statistics().host_waits == 0);
}
#endif
