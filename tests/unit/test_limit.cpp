// Memory limits: BufferAllocator::limit (buffer and live fallbacks never pass it) and the
// combined limit of an AllocatorPool. Every refusal raises kbuf::out_of_memory naming the limit,
// the request and what is held, and changes nothing but the high-water mark and the counter of
// refusals.
#include <doctest/doctest.h>

#include "test_support.hpp"

#include <cstdint>
#include <limits>
#include <string>
#include <thread>

using namespace kbuf_test;
using namespace kbuf::literals;

namespace {

struct State {
  std::size_t capacity, used, held, live_fallbacks, fallbacks, regrows;
  bool empty;
};
State state_of(const Alloc& a) {
  return {a.capacity(),           a.used(), a.held(), a.live_fallbacks(), a.statistics().fallbacks,
          a.statistics().regrows, a.empty()};
}
void check_same(const State& x, const State& y) {
  CHECK(x.capacity == y.capacity);
  CHECK(x.used == y.used);
  CHECK(x.held == y.held);
  CHECK(x.live_fallbacks == y.live_fallbacks);
  CHECK(x.fallbacks == y.fallbacks);
  CHECK(x.regrows == y.regrows);
  CHECK(x.empty == y.empty);
}

// The message of the kbuf::out_of_memory that `f` raises ("" if none).
template <class F>
std::string oom_message(F&& f) {
  try {
    f();
  } catch (const kbuf::out_of_memory& e) {
    return e.what();
  }
  return "";
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("by default there is no limit, and held() is the buffer plus the live fallbacks") {
  Alloc alloc(4_KiB);
  CHECK(alloc.limit() == std::numeric_limits<std::size_t>::max());
  CHECK(alloc.held() == 4_KiB);
  auto a = alloc.allocate<double*>(16);  // carved: held does not change
  CHECK(alloc.held() == 4_KiB);
  auto b = alloc.allocate<double*>(1000);  // a fallback of 8000 bytes
  CHECK(alloc.held() == 4_KiB + 8000);
  (void)a, (void)b;
  alloc.reset();
  CHECK(alloc.held() == 4_KiB);
}

TEST_CASE("a fallback past the limit raises out_of_memory, records the need, changes nothing") {
  Alloc alloc(4_KiB);
  alloc.limit(10_KiB);
  auto a = alloc.allocate<double*>(384);  // 3 KiB carved: 1 KiB of the buffer left
  auto b = alloc.allocate<double*>(512);  // 4 KiB: a fallback, 8 KiB held
  (void)a, (void)b;
  REQUIRE(alloc.live_fallbacks() == 1);
  REQUIRE(alloc.held() == 8_KiB);
  const State before = state_of(alloc);
  const auto cp = alloc.checkpoint();
  const std::size_t hwm = alloc.high_water_mark();

  const std::string what = oom_message([&] { (void)alloc.allocate<double*>(512); });  // 4 KiB
  CHECK(has(what, "kbuf::BufferAllocator::allocate on allocator 'kbuf'"));
  CHECK(has(what, "a fallback of 4096 bytes"));
  CHECK(has(what, "limit of 10240 bytes"));
  CHECK(has(what, "it holds 8192 (a buffer of 4096 and 4096 in fallbacks)"));
  check_same(before, state_of(alloc));
  CHECK(alloc.statistics().limit_refusals == 1);
  CHECK(alloc.high_water_mark() >= hwm + 4096);  // the need is recorded all the same
  alloc.reset(cp);  // the checkpoint taken before the refusal is still valid

  // Within the limit a fallback is still served; released fallbacks make room again.
  auto c = alloc.allocate<double*>(256);  // 2 KiB: a fallback, 10 KiB held
  CHECK(alloc.held() == 10_KiB);
  CHECK(alloc.live_fallbacks() == 2);
  (void)c;
  alloc.reset(cp);
  CHECK(alloc.held() == 8_KiB);
  alloc.reset();
  CHECK(alloc.held() == 4_KiB);
}

TEST_CASE("a fallback past the limit by one byte or by far is refused") {
  Alloc alloc(4_KiB);
  alloc.limit(4_KiB + 8000);
  auto a = alloc.allocate<unsigned char*>(4_KiB);  // fills the buffer: what follows falls back
  (void)a;
  REQUIRE(alloc.used() == 4_KiB);
  REQUIRE(alloc.held() == 4_KiB);
  const auto cp = alloc.checkpoint();
  const State before = state_of(alloc);
  std::size_t refusals = 0;
  for (const std::size_t n : {std::size_t{8001}, std::size_t{8000} + 4_KiB, std::size_t{1} << 40}) {
    CAPTURE(n);
    const std::string what = oom_message([&] { (void)alloc.allocate<unsigned char*>(n); });
    CHECK(has(what, "a fallback of " + std::to_string(n) + " bytes"));
    CHECK(has(what, "limit of " + std::to_string(4_KiB + 8000) + " bytes"));
    check_same(before, state_of(alloc));
    CHECK(alloc.statistics().limit_refusals == ++refusals);
  }
  {  // more than any address space holds: refused as such before the limit is asked
    const std::size_t n = std::numeric_limits<std::size_t>::max() / 2;
    const std::string what = oom_message([&] { (void)alloc.allocate<unsigned char*>(n); });
    CHECK(has(what, "a fallback of " + std::to_string(n) + " bytes"));
    CHECK(has(what, "more than any address space holds"));
    check_same(before, state_of(alloc));
    CHECK(alloc.statistics().limit_refusals == refusals);
  }
  alloc.reset(cp);  // still valid: nothing was added after it

  auto b = alloc.allocate<unsigned char*>(8000);  // exactly at the limit: served
  CHECK(alloc.held() == alloc.limit());
  CHECK(alloc.live_fallbacks() == 1);
  (void)b;
  CHECK(oom_message([&] { (void)alloc.allocate<unsigned char*>(1); }) != "");  // one byte past
  CHECK(alloc.live_fallbacks() == 1);
  alloc.reset();
  CHECK(alloc.held() == 4_KiB);
}

TEST_CASE("growth stops at the largest buffer the limit leaves room for") {
  Alloc alloc(4_KiB);
  (void)alloc.allocate<double*>(4096);  // 32 KiB: a fallback (no limit yet)
  alloc.reset();
  REQUIRE(alloc.high_water_mark() >= 32_KiB);
  const std::size_t hwm = alloc.high_water_mark();
  alloc.limit(20_KiB + 100);
  auto small = alloc.allocate<double*>(8);  // regrows, but only to the limit
  (void)small;
  CHECK(alloc.capacity() == kbuf::Impl::buffer_size_floor(20_KiB + 100));
  CHECK(alloc.capacity() == 20_KiB);
  CHECK(alloc.statistics().regrows == 1);
  CHECK(alloc.high_water_mark() == hwm);  // still what the workload wanted
  alloc.reset();

  // The workload again: its big temporary fits neither the buffer nor, as a fallback, the limit.
  const State before = state_of(alloc);
  const std::string what = oom_message([&] { (void)alloc.allocate<double*>(4096); });
  CHECK(has(what, "a fallback of 32768 bytes would pass the allocator's limit of 20580 bytes"));
  check_same(before, state_of(alloc));
  CHECK(alloc.empty());
  // ...while smaller work still runs, from the buffer, again and again without regrowing.
  for (int i = 0; i < 3; ++i) {
    auto t = alloc.allocate<double*>(2000);
    CHECK(inside_buffer(alloc, t));
    alloc.reset();
  }
  CHECK(alloc.statistics().regrows == 1);
  CHECK(alloc.statistics().fallbacks == 1);
}

TEST_CASE("a first temporary larger than the limit on an empty allocator changes nothing") {
  Alloc alloc;  // no buffer yet
  alloc.limit(4_KiB);
  const std::string what = oom_message([&] { (void)alloc.allocate<double*>(1024); });  // 8 KiB
  CHECK(has(what, "a fallback of 8192 bytes"));
  CHECK(has(what, "limit of 4096 bytes"));
  CHECK(alloc.capacity() == 0);
  CHECK(alloc.held() == 0);
  CHECK(alloc.statistics().regrows == 0);
  CHECK(alloc.high_water_mark() >= 8_KiB);
  // What fits the limit is served: the buffer grows to the limit and carves it.
  auto t = alloc.allocate<double*>(256);
  CHECK(alloc.capacity() == 4_KiB);
  CHECK(inside_buffer(alloc, t));
}

TEST_CASE("resize past the limit raises out_of_memory and keeps the buffer") {
  Alloc alloc(4_KiB);
  alloc.limit(16_KiB);
  const State before = state_of(alloc);
  const std::string what = oom_message([&] { alloc.resize(32_KiB); });
  CHECK(has(what, "kbuf::BufferAllocator::resize on allocator 'kbuf': a buffer of 32768 bytes"));
  CHECK(has(what, "limit of 16384 bytes: it holds 4096"));
  check_same(before, state_of(alloc));
  CHECK(alloc.statistics().limit_refusals == 1);
  alloc.resize(16_KiB);  // exactly the limit
  CHECK(alloc.capacity() == 16_KiB);
  alloc.resize(1_KiB);  // shrinking is always allowed
  CHECK(alloc.capacity() == 1_KiB);
}

TEST_CASE("a limit below what is held raises logic_error and changes nothing") {
  Alloc alloc(8_KiB);
  auto f = alloc.allocate<double*>(2048);  // 16 KiB fallback: 24 KiB held
  (void)f;
  try {
    alloc.limit(20_KiB);
    FAIL("limit below what is held did not throw");
  } catch (const kbuf::logic_error& e) {
    const std::string what = e.what();
    CHECK(has(what, "kbuf::BufferAllocator::limit(20480) on allocator 'kbuf'"));
    CHECK(has(what, "it holds 24576 bytes (a buffer of 8192 and 16384 in live fallbacks)"));
  }
  CHECK(alloc.limit() == std::numeric_limits<std::size_t>::max());
  alloc.limit(24_KiB);  // exactly what is held
  CHECK(alloc.limit() == 24_KiB);
  alloc.reset();
  alloc.limit(8_KiB);  // the fallback is gone
  CHECK(alloc.limit() == 8_KiB);
  alloc.limit(std::numeric_limits<std::size_t>::max());  // no limit again
  auto big = alloc.allocate<double*>(100000);
  CHECK(alloc.live_fallbacks() == 1);
  (void)big;
}

TEST_CASE("a pool's combined limit counts every allocator's buffer and fallbacks") {
  kbuf::AllocatorPool<space> pool(4_KiB);
  CHECK(pool.limit() == std::numeric_limits<std::size_t>::max());
  pool.limit(40_KiB);
  CHECK(pool.limit() == 40_KiB);
  Alloc& mine = pool.local();  // 4 KiB buffer
  CHECK(pool.held() == 4_KiB);
  auto f = mine.allocate<double*>(3072);  // a 24 KiB fallback
  (void)f;
  CHECK(pool.held() == 28_KiB);

  std::string refused;
  std::size_t other_held = 0;
  std::thread other([&] {
    Alloc& theirs = pool.local();  // another 4 KiB buffer: 32 KiB held
    refused = oom_message([&] { (void)theirs.allocate<double*>(2048); });  // 16 KiB: too much
    other_held = theirs.held();
    // The refused need is recorded: the next round grows the buffer as far as the room left
    // (8 KiB besides its own 4 KiB) allows.
    auto ok = theirs.allocate<double*>(512);
    CHECK(theirs.capacity() == 12_KiB);
    (void)ok;
    theirs.reset();
  });
  other.join();
  CHECK(has(refused,
            "a fallback of 16384 bytes would pass the combined limit of 40960 bytes of "
            "its pool: its allocators hold 32768 bytes (this one 4096)"));
  CHECK(other_held == 4_KiB);
  CHECK(pool.held() == 40_KiB);

  // A limit below what the pool holds is refused.
  CHECK_THROWS_AS(pool.limit(16_KiB), kbuf::logic_error);
  CHECK(pool.limit() == 40_KiB);

  mine.reset();  // frees the fallback: the room comes back
  CHECK(pool.held() == 16_KiB);
  std::thread again([&] {
    Alloc& theirs = pool.local();             // the exited thread's allocator, reused
    auto t = theirs.allocate<double*>(2048);  // now it grows to its high-water mark
    CHECK(theirs.capacity() == 16_KiB);
    CHECK(inside_buffer(theirs, t));
    theirs.reset();
  });
  again.join();
  CHECK(pool.held() == 20_KiB);
  CHECK(pool.statistics().limit_refusals == 1);
}

TEST_CASE("a pool's regrowth stops at the room left by the other allocators") {
  kbuf::AllocatorPool<space> pool(8_KiB);
  pool.limit(40_KiB);
  Alloc& mine = pool.local();  // 8 KiB
  {
    auto s = mine.scope();
    auto f = mine.allocate<double*>(3584);  // a 28 KiB fallback: 36 KiB held
    CHECK(mine.live_fallbacks() == 1);
    (void)f;
  }
  std::thread other([&] {
    Alloc& theirs = pool.local();          // a second allocator: 16 KiB held
    (void)theirs.allocate<double*>(2560);  // a 20 KiB fallback
    theirs.reset();
    (void)theirs.allocate<double*>(8);  // regrows to 20 KiB: 28 KiB held
    theirs.reset();
  });
  other.join();
  REQUIRE(pool.size() == 2);
  REQUIRE(pool.held() == 28_KiB);

  (void)mine.allocate<double*>(8);  // wants 28 KiB; 12 KiB are left besides its own 8 KiB
  CHECK(mine.capacity() == 20_KiB);
  CHECK(pool.held() == 40_KiB);
  mine.reset();
  const std::string what = oom_message([&] { (void)mine.allocate<double*>(3584); });
  CHECK(has(what, "a fallback of 28672 bytes would pass the combined limit of 40960 bytes"));
  CHECK(mine.capacity() == 20_KiB);
  CHECK(mine.empty());
  CHECK(pool.held() == 40_KiB);
}

TEST_CASE("a new allocator's first buffer counts against its pool's combined limit") {
  kbuf::AllocatorPool<space> pool(16_KiB);
  pool.limit(24_KiB);
  Alloc& mine = pool.local();
  (void)mine;
  std::string refused;
  std::thread other([&] { refused = oom_message([&] { (void)pool.local(); }); });
  other.join();
  CHECK(has(refused,
            "kbuf::BufferAllocator on allocator 'kbuf::AllocatorPool[1]': a buffer of "
            "16384 bytes would pass the combined limit of 24576 bytes"));
  CHECK(pool.size() == 1);
  CHECK(pool.held() == 16_KiB);
}
