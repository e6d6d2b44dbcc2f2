// Debug checks (compiled with KBUF_ENABLE_DEBUG=1): the fill pattern of released and new
// memory, and the aborts for scopes ended out of LIFO order and allocators destroyed with
// live scopes.
#include <doctest/doctest.h>

#include "reliability_support.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

using namespace kbuf_rel;
using namespace kbuf::literals;
using kbuf_test::Alloc;  // the default space, or the foreign one (test_support.hpp)

static_assert(KBUF_ENABLE_DEBUG == 1, "kbuf-test-debug must be compiled with KBUF_ENABLE_DEBUG=1");

namespace {

template <class View>
bool all_nan(const View& v) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  for (std::size_t i = 0; i < h.span(); ++i) {
    if (!std::isnan(h.data()[i])) return false;
  }
  return h.span() > 0;
}

bool bytes_are(const void* p, std::size_t n, unsigned char byte) {
  return space_bytes_are<Alloc::memory_space>(p, n, byte);
}

}  // namespace

TEST_CASE("debug checks are on and the fill byte makes doubles and floats NaN") {
  CHECK(kbuf::debug_checks_enabled);
  CHECK(kbuf::debug_fill_byte == 0xFF);
  double d;
  float f;
  std::int32_t i;
  std::memset(&d, kbuf::debug_fill_byte, sizeof d);
  std::memset(&f, kbuf::debug_fill_byte, sizeof f);
  std::memset(&i, kbuf::debug_fill_byte, sizeof i);
  CHECK(std::isnan(d));
  CHECK(std::isnan(f));
  CHECK(i == -1);
}

TEST_CASE("a new buffer is filled: an uninitialised temporary reads NaN") {
  Alloc alloc(4_KiB);
  auto v = alloc.allocate<double*>(100);
  CHECK(all_nan(v));
  CHECK(bytes_are(alloc.buffer().data(), alloc.capacity(), kbuf::debug_fill_byte));
}

TEST_CASE("released bytes are filled, live ones keep their values") {
  Alloc alloc(4_KiB);
  auto keep = alloc.allocate<double*>(8);
  Kokkos::deep_copy(keep, 3.0);
  const auto cp = alloc.checkpoint();
  auto gone = alloc.allocate<double*>(8);
  auto gone2 = alloc.allocate<float**>(3, 5);
  Kokkos::deep_copy(gone, 1.0);
  Kokkos::deep_copy(gone2, 2.0f);
  alloc.reset(cp);
  CHECK(bytes_are(gone.data(), 8 * sizeof(double), kbuf::debug_fill_byte));
  CHECK(bytes_are(gone2.data(), 15 * sizeof(float), kbuf::debug_fill_byte));
  const auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), keep);
  for (int i = 0; i < 8; ++i) CHECK(h(i) == 3.0);
}

TEST_CASE("memory handed out again after a reset reads NaN, not the old values") {
  Alloc alloc(4_KiB);
  auto first = alloc.allocate<double*>(32);
  Kokkos::deep_copy(first, 42.0);
  alloc.reset();
  auto second = alloc.allocate<double*>(32);
  REQUIRE(second.data() == first.data());
  CHECK(all_nan(second));
}

TEST_CASE("a scope's end fills what it releases") {
  Alloc alloc(4_KiB);
  Alloc::view<double*> escaped;
  {
    auto s = alloc.scope();
    escaped = alloc.allocate<double*>(16);
    Kokkos::deep_copy(escaped, 7.0);
  }
  CHECK(bytes_are(escaped.data(), 16 * sizeof(double), kbuf::debug_fill_byte));
}

TEST_CASE("released fallbacks are filled before they are freed") {
  Alloc alloc(256);
  auto fallback = alloc.allocate<double*>(500);
  REQUIRE(alloc.live_fallbacks() == 1);
  Kokkos::deep_copy(fallback, 5.0);
  const unsigned char* begin = reinterpret_cast<const unsigned char*>(fallback.data());
  const std::size_t nbytes = 500 * sizeof(double);
  int checked = 0;
  bool filled = false;
  {
    DeallocationWatcher watcher([&](const std::string& label, const void*, std::uint64_t) {
      if (label.find("fallback") == std::string::npos) return;
      ++checked;
      filled = bytes_are(begin, nbytes, kbuf::debug_fill_byte);  // still allocated here
    });
    alloc.reset();
  }
  CHECK(checked == 1);
  CHECK(filled);
}

TEST_CASE("the default memory space is filled too (device spaces through deep_copy)") {
  kbuf_test::Alloc alloc(4_KiB);
  auto v = alloc.allocate<double*>(64);
  CHECK(all_nan(v));
  Kokkos::deep_copy(v, 1.0);
  alloc.reset();
  auto again = alloc.allocate<double*>(64);
  CHECK(all_nan(again));
  auto fb = alloc.allocate<double*>(4096);  // a fallback: not filled when taken
  (void)fb;
  alloc.reset();
  CHECK(alloc.empty());
}

TEST_CASE("scopes ended in LIFO order do not abort") {
  const ChildResult r = run_in_child([] {
    Alloc alloc(1_KiB);
    auto outer = std::make_unique<Alloc::Scope>(alloc.scope());
    auto t = alloc.allocate<double*>(4);
    auto inner = std::make_unique<Alloc::Scope>(alloc.scope());
    auto u = alloc.allocate<double*>(4);
    (void)t;
    (void)u;
    inner.reset();
    outer.reset();
  });
  CHECK(r.survived());
  INFO(r.output);
}

TEST_CASE("a scope ended out of LIFO order aborts with a message naming the allocator") {
  const ChildResult r = run_in_child([] {
    Alloc alloc(kbuf_test::space::execution_space(), 1_KiB, 64, "lifo-test");
    auto outer = std::make_unique<Alloc::Scope>(alloc.scope());
    auto inner = std::make_unique<Alloc::Scope>(alloc.scope());
    outer.reset();  // the outer scope first: out of order
    inner.reset();
  });
  CHECK(r.aborted());
  CHECK(r.says("destroyed out of LIFO order"));
  CHECK(r.says("'lifo-test'"));
  INFO(r.output);
}

TEST_CASE("an allocator destroyed while a scope is live aborts with a message") {
  const auto body = [](bool end_scope_first) {
    auto alloc = std::make_unique<Alloc>(kbuf_test::space::execution_space(), 1_KiB, 64,
                                         std::string("dying-test"));
    auto scope = std::make_unique<Alloc::Scope>(alloc->scope());
    if (end_scope_first) {
      scope.reset();
    } else {
      (void)scope.release();  // the scope outlives its allocator (leaked on purpose)
    }
    alloc.reset();
  };
  CHECK(run_in_child([&] { body(true); }).survived());
  const ChildResult r = run_in_child([&] { body(false); });
  CHECK(r.aborted());
  CHECK(r.says("'dying-test'"));
  CHECK(r.says("destroyed while 1 of its scopes are live"));
  INFO(r.output);
}

TEST_CASE("a scope whose checkpoint an explicit reset released ends quietly in debug builds") {
  Alloc alloc(1_KiB);
  auto first = alloc.allocate<double*>(4);
  (void)first;
  {
    auto s = alloc.scope();  // its checkpoint: depth 1
    auto t = alloc.allocate<double*>(4);
    (void)t;
    alloc.reset();  // releases the scope's checkpoint too
    CHECK(alloc.empty());
  }
  CHECK(alloc.empty());
  CHECK(alloc.statistics().resets == 1);  // the scope's end did nothing
}

TEST_CASE("a moved scope keeps its place in the LIFO order") {
  Alloc alloc(1_KiB);
  const auto make = [&alloc] {
    auto s = alloc.scope();
    return s;
  };
  {
    auto outer = make();
    auto t = alloc.allocate<double*>(2);
    {
      auto inner = alloc.scope();
      auto moved = std::move(inner);
      auto u = alloc.allocate<double*>(2);
      (void)u;
    }
    (void)t;
    CHECK(alloc.used() > 0);
  }
  CHECK(alloc.empty());
}
