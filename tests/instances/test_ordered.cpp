// Temporaries ordered on the execution space instance that uses them (allocate(exec, ...),
// kbuf::temporary(exec, ...)), in the host model of asynchronous instances (async_instance.hpp):
// work submitted to a model instance runs later on a thread of its own, so memory handed out
// again without an order is written while late work still reads it. Without instances the
// model shows the hazard (the first case must see the corruption); with them, every result is
// right, no hand-off blocks the host, and kbuf issues no fence for them.
#include <doctest/doctest.h>

#include <kbuf/kbuf.hpp>

#include "async_instance.hpp"
#include "tool_recorder.hpp"

#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <thread>
#include <vector>

namespace {

using kbuf_test::AsyncInstance;
using Alloc = kbuf::BufferAllocator<Kokkos::HostSpace>;
using Out = std::vector<double>;

constexpr std::size_t n = 4096;  // doubles: 32 KiB

/// Submits to `on` a write of `value` into `t`, then a copy of `t` into `out`.
void fill_then_copy(const AsyncInstance& on, double* t, double value, Out& out) {
  on.submit([t, value] {
    for (std::size_t i = 0; i < n; ++i) t[i] = value;
  });
  on.submit([t, &out] {
    for (std::size_t i = 0; i < n; ++i) out[i] = t[i];
  });
}

/// Submits to `on` a write of `value` into the `count` elements of `t`.
void overwrite(const AsyncInstance& on, double* t, double value, std::size_t count = n) {
  on.submit([t, value, count] {
    for (std::size_t i = 0; i < count; ++i) t[i] = value;
  });
}

std::size_t count_not(const Out& out, double value) {
  std::size_t wrong = 0;
  for (double x : out) wrong += x != value ? 1 : 0;
  return wrong;
}

constexpr kbuf::owner library{"ordered_library"};

/// A library call shaped like ArborX's: it runs on the instance its caller gives, takes its
/// temporaries in a scope of its own, and returns before the instance's work has run.
void library_call(const AsyncInstance& space, double value, Out& out) {
  auto scope = kbuf::scope<Kokkos::HostSpace>(library);
  auto t = kbuf::temporary<double*, Kokkos::LayoutRight, Kokkos::HostSpace>(space, library,
                                                                            "library_tmp", n);
  fill_then_copy(space, t.data(), value, out);
}  // no fence: the scope's end hands the memory on in order

}  // namespace

TEST_CASE(
    "without instances the model shows the hazard: released memory reused by another "
    "instance is overwritten while late work still reads it") {
  Alloc alloc(1 << 20);
  AsyncInstance j("j");
  AsyncInstance k("k");
  Out out(n, 0.0);
  j.hold();  // j's work runs late
  double* first = nullptr;
  {
    auto s = alloc.scope();
    auto t = alloc.allocate<double*>(n);  // no instance: 0.7's only way
    first = t.data();
    fill_then_copy(j, t.data(), 1.0, out);
  }
  auto u = alloc.allocate<double*>(n);
  REQUIRE(u.data() == first);  // the same memory, handed out again
  overwrite(k, u.data(), 2.0);
  k.fence();  // k's write ran before j's copy
  j.go();
  j.fence();
  // j's late fill ran after k's write: k's temporary holds j's values, not its own.
  std::vector<double> seen(u.data(), u.data() + n);
  CHECK(count_not(seen, 2.0) == n);
}

TEST_CASE(
    "with instances a hand-off waits for the releasing instance's work, on the instance "
    "and not the host") {
  Alloc alloc(1 << 20);
  AsyncInstance j("j");
  AsyncInstance k("k");
  Out out(n, 0.0);
  const std::size_t host_waits = AsyncInstance::host_waits();
  j.hold();
  double* first = nullptr;
  {
    auto s = alloc.scope();
    auto t = alloc.allocate<double*>(j, "on_j", n);
    first = t.data();
    fill_then_copy(j, t.data(), 1.0, out);
  }
  auto u = alloc.allocate<double*>(k, "on_k", n);
  REQUIRE(u.data() == first);
  overwrite(k, u.data(), 2.0);  // runs after j's copy: k waits for j's event
  j.go();
  k.fence();
  j.fence();
  CHECK(count_not(out, 1.0) == 0);
  std::vector<double> seen(u.data(), u.data() + n);
  CHECK(count_not(seen, 2.0) == 0);
  const kbuf::Statistics st = alloc.statistics();
  CHECK(st.handoffs == 1);
  CHECK(st.host_waits == 0);
  CHECK(AsyncInstance::host_waits() == host_waits);
  CHECK(st.fences == 0);
  alloc.reset();
}

TEST_CASE(
    "a temporary of the allocator's own instance after another instance's: the host "
    "waits (the allocator's instance here runs on the host), and only then") {
  Alloc alloc(1 << 20);
  AsyncInstance j("j");
  Out out(n, 0.0);
  const std::size_t host_waits = AsyncInstance::host_waits();
  {
    auto s = alloc.scope();
    auto t = alloc.allocate<double*>(j, n);
    fill_then_copy(j, t.data(), 3.0, out);
  }
  auto u = alloc.allocate<double*>(n);  // the allocator's instance (Serial or OpenMP)
  for (std::size_t i = 0; i < n; ++i) u(i) = 4.0;
  CHECK(count_not(out, 3.0) == 0);  // j's copy ran before the host wrote
  CHECK(AsyncInstance::host_waits() == host_waits + 1);
  CHECK(alloc.statistics().host_waits == 1);
  alloc.reset();
  auto v = alloc.allocate<double*>(n);  // nothing pending: the hot path again
  (void)v;
  CHECK(AsyncInstance::host_waits() == host_waits + 1);
}

TEST_CASE(
    "a library's scope on its caller's instance ends without a fence, and the next call "
    "on another instance gets the memory in order") {
  Alloc alloc(1 << 20);
  kbuf::use current(alloc);
  AsyncInstance a("caller_a");
  AsyncInstance b("caller_b");
  Out out_a(n, 0.0);
  Out out_b(n, 0.0);
  a.hold();
  kbuf_test::ToolRecorder recorder;
  library_call(a, 5.0, out_a);
  library_call(b, 6.0, out_b);  // the same memory, ordered after a's work
  a.go();
  b.fence();
  a.fence();
  CHECK(count_not(out_a, 5.0) == 0);
  CHECK(count_not(out_b, 6.0) == 0);
  CHECK(alloc.statistics().fences == 0);
  CHECK(alloc.statistics().handoffs == 1);
  CHECK(alloc.statistics().host_waits == 0);
  CHECK(recorder.count(kbuf_test::ToolEvent::fence) == 0);
  CHECK(recorder.global_fences() == 0);
}

TEST_CASE("a fallback of another instance is freed only after that instance's work") {
  Alloc alloc(1024);  // too small: the temporary is a fallback
  AsyncInstance j("j");
  auto ran = std::make_shared<std::atomic<bool>>(false);
  const std::size_t host_waits = AsyncInstance::host_waits();
  {
    auto s = alloc.scope();
    auto t = alloc.allocate<double*>(j, n);
    double* p = t.data();
    j.submit([p, ran] {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      for (std::size_t i = 0; i < n; ++i) p[i] = 1.0;
      ran->store(true);
    });
  }  // the fallback's free waits for j
  CHECK(ran->load());
  CHECK(AsyncInstance::host_waits() == host_waits + 1);
  CHECK(alloc.statistics().fallbacks == 1);
}

TEST_CASE("allocate(exec) with bad extents changes nothing and an empty temporary orders nothing") {
  Alloc alloc(1 << 16);
  AsyncInstance j("j");
  const std::size_t used = alloc.used();
  CHECK_THROWS_AS((void)alloc.allocate<double*>(j, "bad", -1), kbuf::logic_error);
  CHECK(alloc.used() == used);
  CHECK(alloc.empty());
  auto e = alloc.allocate<double*>(j, 0);
  CHECK(e.size() == 0);
  CHECK(alloc.statistics().handoffs == 0);
  alloc.reset();
}

TEST_CASE(
    "several host threads, each with its own two instances, hand temporaries back and "
    "forth (kokkos-kernels#3189's pattern): every result right") {
  kbuf::AllocatorPool<Kokkos::HostSpace> pool(1 << 20);
  constexpr int threads = 4;
  constexpr int rounds = 20;
  std::atomic<std::size_t> wrong{0};
  std::vector<std::thread> team;
  for (int t = 0; t < threads; ++t) {
    team.emplace_back([&, t] {
      Alloc& alloc = pool.local();
      AsyncInstance a("a");
      AsyncInstance b("b");
      std::vector<Out> outs(rounds, Out(n, 0.0));
      for (int r = 0; r < rounds; ++r) {
        const AsyncInstance& on = r % 2 == 0 ? a : b;
        auto s = alloc.scope();
        auto tmp = alloc.allocate<double*>(on, "sort_tmp", n);
        fill_then_copy(on, tmp.data(), t * 1000.0 + r, outs[static_cast<std::size_t>(r)]);
      }
      a.fence();
      b.fence();
      for (int r = 0; r < rounds; ++r) {
        wrong += count_not(outs[static_cast<std::size_t>(r)], t * 1000.0 + r);
      }
      alloc.reset();
    });
  }
  for (auto& th : team) th.join();
  CHECK(wrong.load() == 0);
}

TEST_CASE(
    "a temporary of another instance that shrinks gives its tail back in that instance's "
    "order") {
  Alloc alloc(1 << 20);
  AsyncInstance j("j");
  AsyncInstance k("k");
  j.hold();
  auto s = alloc.scope();
  auto t = alloc.allocate<double*>(j, "bounded", n);
  double* p = t.data();
  j.submit([p] {
    for (std::size_t i = 0; i < n; ++i) p[i] = 1.0;  // writes the whole bound, tail included
  });
  alloc.shrink(t, n / 2);
  auto u = alloc.allocate<double*>(k, "in_the_tail", n / 2);
  REQUIRE(u.data() >= p + n / 2);
  REQUIRE(u.data() < p + n);
  overwrite(k, u.data(), 2.0, n / 2);  // waits for j's write of the tail
  j.go();
  k.fence();
  j.fence();
  std::vector<double> seen(u.data(), u.data() + n / 2);
  CHECK(count_not(seen, 2.0) == 0);
  CHECK(alloc.statistics().handoffs == 1);
  CHECK(alloc.statistics().host_waits == 0);
}
