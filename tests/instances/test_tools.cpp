// Temporaries visible to Kokkos Tools: with a tool loaded when an allocator is made, every
// temporary and every release is reported through Kokkos' profiling interface in a space of
// its own, "kbuf:<label>", with the temporary's address and size; without one, nothing is.
#include <doctest/doctest.h>

#include <kbuf/kbuf.hpp>

#include "test_support.hpp"
#include "tool_recorder.hpp"

#include <cstddef>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace {

using kbuf_test::ToolEvent;
using kbuf_test::ToolRecorder;
using namespace kbuf::literals;

using space = kbuf_test::space;  // the default space, or the foreign one (test_support.hpp)
using Alloc = kbuf::BufferAllocator<space>;

bool is_temporary(const ToolEvent& e) {
  return e.kind == ToolEvent::temporary;
}
bool is_release(const ToolEvent& e) {
  return e.kind == ToolEvent::release;
}

std::vector<ToolEvent> of_kind(const ToolRecorder& rec, ToolEvent::Kind kind) {
  std::vector<ToolEvent> out;
  for (const ToolEvent& e : rec.events()) {
    if (e.kind == kind) out.push_back(e);
  }
  return out;
}

template <class View>
std::uint64_t bytes_of(const View& v) {
  return v.span() * sizeof(typename View::value_type);
}

// Live bytes over the event stream of one space: the most at any time.
std::uint64_t peak_live_bytes(const ToolRecorder& rec) {
  std::uint64_t live = 0, peak = 0;
  for (const ToolEvent& e : rec.events()) {
    if (e.kind == ToolEvent::temporary) live += e.bytes;
    if (e.kind == ToolEvent::release) live -= e.bytes;
    if (live > peak) peak = live;
  }
  return peak;
}

// Each team takes a few doubles from its arena and writes one.
struct TakeInKernel {
  kbuf::Workspace<space> ws;
  KOKKOS_INLINE_FUNCTION void operator()(
      const typename Kokkos::TeamPolicy<Alloc::execution_space>::member_type& team) const {
    auto arena = ws.arena(team);
    auto v = arena.take<double*>(16);
    Kokkos::single(Kokkos::PerTeam(team), [&]() { v.data()[0] = team.league_rank(); });
  }
};

}  // namespace

TEST_CASE(
    "a workspace is one temporary to a tool, and its takes inside the kernel allocate nothing") {
  ToolRecorder rec;
  Alloc alloc(Alloc::execution_space(), 64_KiB, Alloc::default_alignment, "tools-ws");
  const Kokkos::TeamPolicy<Alloc::execution_space> policy(alloc.execution_space_instance(), 32, 1);
  rec.clear();
  {
    auto scope = alloc.scope();
    auto ws = alloc.workspace(policy, kbuf::per_team{1024}, "in kernels");
    Kokkos::parallel_for("takes", policy, TakeInKernel{ws});
    const kbuf::WorkspaceReport r = ws.finish();
    CHECK(r.takes == 32);
    INFO(rec.describe());
    const auto temps = of_kind(rec, ToolEvent::temporary);
    REQUIRE(temps.size() == 1);
    CHECK(temps[0].space == "kbuf:tools-ws");
    CHECK(temps[0].bytes >= ws.bytes());
    // The buffer held it: no allocation but Kokkos' own for the team kernel (its scratch).
    CHECK(rec.count([](const ToolEvent& e) {
      return e.kind == ToolEvent::allocation && e.name.rfind("Kokkos::", 0) != 0;
    }) == 0);
    CHECK(rec.count(is_release) == 0);
  }
  INFO(rec.describe());
  CHECK(rec.count(is_release) == 1);         // the scope's end releases it
  CHECK(alloc.statistics().fallbacks == 0);  // the buffer held it: nothing allocated, nothing freed
  CHECK(alloc.statistics().regrows == 0);
}

TEST_CASE("with a tool loaded, each temporary and its release are reported in kbuf:<label>") {
  ToolRecorder rec;  // loaded before the allocator is made
  Alloc alloc(Alloc::execution_space(), 4_KiB, Alloc::default_alignment, "tools-test");
  rec.clear();
  auto a = alloc.allocate<double*>(10);
  auto b = alloc.allocate<float**>(3, 5);
  const auto cp = alloc.checkpoint();
  auto c = alloc.allocate<double*>(1000);  // 8000 bytes: a fallback, reported as a temporary too
  auto z = alloc.allocate<double*>(0);     // zero-sized: no memory, nothing reported
  (void)z;
  INFO(rec.describe());
  const auto temps = of_kind(rec, ToolEvent::temporary);
  REQUIRE(temps.size() == 3);
  CHECK(temps[0].space == "kbuf:tools-test");
  CHECK(temps[0].name == "temporary");
  CHECK(temps[0].ptr == a.data());
  CHECK(temps[0].bytes == 80);
  CHECK(temps[1].ptr == b.data());
  CHECK(temps[1].bytes == 60);
  CHECK(temps[2].ptr == c.data());
  CHECK(temps[2].bytes == 8000);
  CHECK(rec.count(ToolEvent::allocation) == 1);  // Kokkos' own: the fallback's memory
  CHECK(rec.count(is_release) == 0);

  rec.clear();
  alloc.reset(cp);  // releases c
  {
    INFO(rec.describe());
    const auto released = of_kind(rec, ToolEvent::release);
    REQUIRE(released.size() == 1);
    CHECK(released[0].ptr == c.data());
    CHECK(released[0].bytes == 8000);
    CHECK(released[0].space == "kbuf:tools-test");
    // the temporary's release is reported before Kokkos frees the fallback's memory
    CHECK(rec.first(is_release) <
          rec.first([](const ToolEvent& e) { return e.kind == ToolEvent::deallocation; }));
  }
  rec.clear();
  {
    auto s = alloc.scope();
    auto d = alloc.allocate<int*>(7);
    CHECK(rec.count(is_temporary) == 1);
    (void)d;
  }
  CHECK(rec.count(is_release) == 1);  // the scope's end
  rec.clear();
  alloc.reset();  // b, then a: newest first
  const auto released = of_kind(rec, ToolEvent::release);
  REQUIRE(released.size() == 2);
  CHECK(released[0].ptr == b.data());
  CHECK(released[1].ptr == a.data());
  CHECK(released[1].bytes == 80);
}

TEST_CASE("every reported temporary is released, and the reported peak is the live peak") {
  ToolRecorder rec;
  {
    Alloc alloc(1_KiB);
    for (int round = 0; round < 3; ++round) {  // fallbacks, regrowth, then the buffer
      std::uint64_t live = 0;
      {
        auto s = alloc.scope();
        for (int i = 1; i <= 70; ++i) {  // past the 64 records kept at first
          auto t = alloc.allocate<double*>(i);
          live += bytes_of(t);
        }
      }
      CHECK(rec.count(is_temporary) == 70);
      CHECK(rec.count(is_release) == 70);
      CHECK(peak_live_bytes(rec) == live);
      rec.clear();
    }
    auto left = alloc.allocate<double*>(5);  // live when the allocator is destroyed
    (void)left;
  }
  INFO(rec.describe());
  CHECK(rec.count(is_temporary) == 1);
  CHECK(rec.count(is_release) == 1);  // the destructor reports it
}

TEST_CASE("without a tool when the allocator is made, nothing of its temporaries is reported") {
  Alloc alloc(4_KiB);  // no tool loaded yet
  ToolRecorder rec;
  {
    auto s = alloc.scope();
    (void)alloc.allocate<double*>(10);
    (void)alloc.allocate<double*>(1000);  // a fallback: Kokkos reports its memory, kbuf nothing
  }
  INFO(rec.describe());
  CHECK(rec.count(is_temporary) == 0);
  CHECK(rec.count(is_release) == 0);
  CHECK(rec.count(ToolEvent::allocation) == 1);
}

TEST_CASE("a pool's allocators report in spaces named for them") {
  ToolRecorder rec;
  kbuf::AllocatorPool<space> pool(4_KiB, kbuf::BufferAllocator<space>::default_alignment, "pool");
  std::thread worker([&] {
    auto& alloc = pool.local();
    auto s = alloc.scope();
    (void)alloc.allocate<double*>(4);
  });
  worker.join();
  const auto temps = of_kind(rec, ToolEvent::temporary);
  REQUIRE(temps.size() == 1);
  CHECK(temps[0].space == "kbuf:pool[0]");
  CHECK(rec.count(is_release) == 1);
}

TEST_CASE(
    "KBUF_TOOLS_REPORT=0, read when an allocator is made, keeps its temporaries from a "
    "loaded tool, which still sees every real allocation") {
  ToolRecorder rec;
  const auto run = [&rec](const char* setting) {
    const kbuf_test::ScopedEnv env("KBUF_TOOLS_REPORT", setting);
    Alloc alloc(Alloc::execution_space(), 1_KiB, Alloc::default_alignment, "switch");
    kbuf::AllocatorPool<space> pool(1_KiB, Alloc::default_alignment, "switch-pool");
    rec.clear();
    {
      auto s = alloc.scope();
      (void)alloc.allocate<double*>(10);
      (void)alloc.allocate<double*>(1000);  // 8000 bytes: a fallback, a real allocation
      auto p = pool.local().scope();
      (void)pool.local().allocate<double*>(10);
    }
    INFO("KBUF_TOOLS_REPORT=", (setting != nullptr ? setting : "(unset)"), "\n", rec.describe());
    const bool reports = alloc.reports_to_tools();
    CHECK(pool.local().reports_to_tools() == reports);
    CHECK(rec.count(is_temporary) == (reports ? 3 : 0));
    CHECK(rec.count(is_release) == (reports ? 3 : 0));
    // The fallback and the pool's first buffer are real: reported either way.
    CHECK(rec.count([](const ToolEvent& e) {
      return e.kind == ToolEvent::allocation && e.name == "switch::fallback";
    }) == 1);
    CHECK(rec.count([](const ToolEvent& e) {
      return e.kind == ToolEvent::allocation && e.name == "switch-pool[0]::buffer";
    }) == 1);
    return reports;
  };
  CHECK_FALSE(run("0"));
  CHECK(run("1"));
  CHECK(run(nullptr) == (KBUF_TOOLS_REPORT != 0));  // unset: the configured default
  CHECK(run("") == (KBUF_TOOLS_REPORT != 0));       // empty: the same
}

TEST_CASE(
    "a temporary's label names its record and its release and an unnamed one is 'temporary'") {
  ToolRecorder rec;
  Alloc alloc(Alloc::execution_space(), 1_KiB, Alloc::default_alignment, "labels");
  kbuf::use<space> current(alloc);
  constexpr kbuf::owner lib{"lib"};
  rec.clear();
  {
    auto scope = kbuf::scope<space>(lib);
    (void)alloc.allocate<double*>("work", 4);
    (void)alloc.allocate<double*>(std::string("a label longer than a small string's buffer"), 4);
    (void)alloc.allocate<double*>(4);
    (void)kbuf::temporary<double*, Kokkos::LayoutRight, space>(lib, "send_buffer",
                                                               400);  // fallback
    CHECK_THROWS_AS((void)alloc.allocate<double*>("refused", -1), kbuf::logic_error);
    (void)alloc.allocate<double*>(2);  // not the refused one's label
  }
  INFO(rec.describe());
  const auto temps = of_kind(rec, ToolEvent::temporary);
  const auto releases = of_kind(rec, ToolEvent::release);
  REQUIRE(temps.size() == 5);
  REQUIRE(releases.size() == 5);
  const std::vector<std::string> names = {"work", "a label longer than a small string's buffer",
                                          "temporary", "send_buffer", "temporary"};
  for (std::size_t i = 0; i < names.size(); ++i) {
    CHECK(temps[i].name == names[i]);
    CHECK(temps[i].space == "kbuf:labels");
    CHECK(releases[names.size() - 1 - i].name == names[i]);  // newest first
  }
}

TEST_CASE("without a tool loaded no allocator reports, whatever KBUF_TOOLS_REPORT says") {
  const kbuf_test::ScopedEnv env("KBUF_TOOLS_REPORT", "1");
  Alloc alloc(1_KiB);
  CHECK_FALSE(alloc.reports_to_tools());
}
