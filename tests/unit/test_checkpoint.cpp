// Checkpoints, reset and Scope: LIFO release, validation of released and foreign checkpoints,
// exception safety.
#include <doctest/doctest.h>

#include "test_support.hpp"

#include <memory>
#include <stdexcept>
#include <string>

using namespace kbuf_test;
using namespace kbuf::literals;

namespace {
struct Observed {
  std::size_t capacity, used, hwm, depth, live_fallbacks, resets;
  bool operator==(const Observed& o) const {
    return capacity == o.capacity && used == o.used && hwm == o.hwm && depth == o.depth &&
           live_fallbacks == o.live_fallbacks && resets == o.resets;
  }
};
Observed observe(const Alloc& a) {
  return {a.capacity(),           a.used(),           a.high_water_mark(),
          a.checkpoint().depth(), a.live_fallbacks(), a.statistics().resets};
}
std::string message_of(Alloc& alloc, Alloc::Checkpoint cp) {
  try {
    alloc.reset(cp);
  } catch (const kbuf::logic_error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("reset to a checkpoint releases everything allocated after it") {
  Alloc alloc(8_KiB);
  auto a = alloc.allocate<double*>(10);
  const auto cp = alloc.checkpoint();
  CHECK(cp.used() == alloc.used());
  CHECK(cp.depth() == 1);
  auto b = alloc.allocate<double*>(20);
  auto c = alloc.allocate<double*>(30);
  CHECK(alloc.checkpoint().depth() == 3);
  alloc.reset(cp);
  CHECK(alloc.used() == cp.used());
  CHECK(alloc.checkpoint().depth() == 1);
  CHECK(!alloc.empty());
  // The released space is handed out again at the same place.
  auto d = alloc.allocate<double*>(20);
  CHECK(d.data() == b.data());
  (void)a, (void)c;
}

TEST_CASE("reset to a released checkpoint throws and changes nothing") {
  Alloc alloc(8_KiB);
  const auto root = alloc.checkpoint();
  auto a = alloc.allocate<double*>(10);
  const auto cp1 = alloc.checkpoint();
  auto b = alloc.allocate<double*>(10);
  const auto cp2 = alloc.checkpoint();
  alloc.reset(cp1);                      // releases b, so cp2 names a point that no longer exists
  auto c = alloc.allocate<double*>(10);  // same size: same offset as cp2, but another point
  const Observed before = observe(alloc);
  const std::string what = message_of(alloc, cp2);
  CHECK(what.find("kbuf::BufferAllocator::reset") != std::string::npos);
  CHECK(what.find("released") != std::string::npos);
  CHECK(observe(alloc) == before);
  alloc.reset(root);
  CHECK_THROWS_AS(alloc.reset(cp1), kbuf::logic_error);
  CHECK(alloc.empty());
  (void)a, (void)b, (void)c;
}

TEST_CASE("reset to a checkpoint of another allocator throws and changes nothing") {
  Alloc alloc(8_KiB), other(8_KiB);
  auto a = alloc.allocate<double*>(3);
  auto x = other.allocate<double*>(3);
  const auto foreign = other.checkpoint();
  const Observed before = observe(alloc);
  const std::string what = message_of(alloc, foreign);
  CHECK(what.find("another allocator") != std::string::npos);
  CHECK(observe(alloc) == before);
  CHECK(message_of(alloc, Alloc::Checkpoint{}).find("no allocator") != std::string::npos);
  CHECK(observe(alloc) == before);
  (void)a, (void)x;
}

TEST_CASE("a checkpoint stays valid across repeated resets to it") {
  Alloc alloc(8_KiB);
  auto a = alloc.allocate<double*>(5);
  const auto cp = alloc.checkpoint();
  for (int i = 0; i < 10; ++i) {
    auto b = alloc.allocate<double*>(1 + i);
    const auto inner = alloc.checkpoint();
    auto c = alloc.allocate<double*>(2);
    alloc.reset(inner);
    alloc.reset(cp);
    CHECK(alloc.used() == cp.used());
    (void)b, (void)c;
  }
  CHECK(alloc.statistics().resets == 20);
  (void)a;
}

TEST_CASE("a checkpoint on an empty allocator stays valid through regrowth") {
  Alloc alloc;
  const auto root = alloc.checkpoint();
  auto a = alloc.allocate<double*>(1000);  // fallback
  alloc.reset(root);
  auto b = alloc.allocate<double*>(1000);  // regrows first, then carves
  CHECK(alloc.statistics().regrows == 1);
  CHECK(inside_buffer(alloc, b));
  alloc.reset(root);
  CHECK(alloc.empty());
  (void)a;
}

TEST_CASE("reset frees the fallbacks allocated after the checkpoint and keeps older ones") {
  Alloc alloc(64);
  auto f1 = alloc.allocate<double*>(100);
  Kokkos::deep_copy(f1, 7.0);
  const auto cp = alloc.checkpoint();
  auto f2 = alloc.allocate<double*>(100);
  auto f3 = alloc.allocate<double*>(100);
  CHECK(alloc.live_fallbacks() == 3);
  alloc.reset(cp);
  CHECK(alloc.live_fallbacks() == 1);
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), f1);
  CHECK(h(0) == 7.0);
  CHECK(h(99) == 7.0);
  alloc.reset();
  CHECK(alloc.live_fallbacks() == 0);
  (void)f2, (void)f3;
}

TEST_CASE("a partial reset never resizes, even with a regrowth pending") {
  Alloc alloc(1_KiB);
  auto a = alloc.allocate<double*>(10);
  const auto cp = alloc.checkpoint();
  auto big = alloc.allocate<double*>(10000);
  CHECK(alloc.high_water_mark() > alloc.capacity());
  alloc.reset(cp);
  auto b = alloc.allocate<double*>(10);  // not empty: no regrowth
  CHECK(alloc.capacity() == 1_KiB);
  CHECK(alloc.statistics().regrows == 0);
  (void)a, (void)big, (void)b;
}

TEST_CASE("reset() empties the allocator and keeps its capacity") {
  Alloc alloc(4_KiB);
  for (int i = 0; i < 5; ++i) (void)alloc.allocate<float*>(100);
  alloc.reset();
  CHECK(alloc.empty());
  CHECK(alloc.used() == 0);
  CHECK(alloc.capacity() == 4_KiB);
  alloc.reset();  // resetting an empty allocator is harmless
  CHECK(alloc.empty());
}

TEST_CASE("a scope releases its temporaries when it ends") {
  Alloc alloc(8_KiB);
  auto a = alloc.allocate<double*>(4);
  const auto used = alloc.used();
  {
    auto s = alloc.scope();
    CHECK(s.checkpoint().used() == used);
    auto b = alloc.allocate<double*>(100);
    {
      auto inner = alloc.scope();
      auto c = alloc.allocate<double*>(100);
      CHECK(alloc.checkpoint().depth() == 3);
      (void)c;
    }
    CHECK(alloc.checkpoint().depth() == 2);
    (void)b;
  }
  CHECK(alloc.used() == used);
  CHECK(alloc.checkpoint().depth() == 1);
  (void)a;
}

TEST_CASE("a scope releases its temporaries when an exception unwinds through it") {
  Alloc alloc(8_KiB);
  auto run = [&] {
    auto s = alloc.scope();
    auto b = alloc.allocate<double*>(100);
    auto f = alloc.allocate<double*>(10000);  // a fallback, freed by the unwinding scope too
    (void)b, (void)f;
    throw std::runtime_error("solver diverged");
  };
  CHECK_THROWS_AS(run(), std::runtime_error);
  CHECK(alloc.empty());
  CHECK(alloc.used() == 0);
  CHECK(alloc.live_fallbacks() == 0);
}

TEST_CASE("a moved scope resets once, when its new owner ends") {
  Alloc alloc(8_KiB);
  std::unique_ptr<Alloc::Scope> held;
  {
    auto s = alloc.scope();
    auto b = alloc.allocate<double*>(10);
    held = std::make_unique<Alloc::Scope>(std::move(s));
    (void)b;
  }  // the moved-from scope does nothing
  CHECK(alloc.checkpoint().depth() == 1);
  held.reset();
  CHECK(alloc.empty());
  CHECK(alloc.statistics().resets == 1);
}

#if !KBUF_ENABLE_DEBUG
TEST_CASE("a scope whose checkpoint an explicit reset released does nothing when it ends") {
  Alloc alloc(8_KiB);
  auto a = alloc.allocate<double*>(10);
  {
    auto s = alloc.scope();
    alloc.reset();  // goes back past the scope's checkpoint
    auto b = alloc.allocate<double*>(10);
    auto c = alloc.allocate<double*>(10);
    (void)b, (void)c;
  }  // must not throw and must not release b and c (they belong to the outer program)
  CHECK(alloc.checkpoint().depth() == 2);
  (void)a;
}
#endif

TEST_CASE("reset with another instance fences it and resets") {
  Alloc alloc(8_KiB);
  auto cp = alloc.checkpoint();
  auto a = alloc.allocate<double*>(10);
  alloc.reset(cp, Alloc::execution_space());
  CHECK(alloc.empty());
  auto b = alloc.allocate<double*>(10);
  Alloc other(1_KiB);
  const Observed before = observe(alloc);
  CHECK_THROWS_AS(alloc.reset(other.checkpoint(), Alloc::execution_space()), kbuf::logic_error);
  CHECK(observe(alloc) == before);
  (void)a, (void)b;
}
