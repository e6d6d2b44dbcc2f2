// kbuf/current.hpp: kbuf::use makes an allocator (or a pool's per-thread allocator) the calling
// thread's current one, nesting; kbuf::current, kbuf::scope and kbuf::temporary follow it;
// kbuf::process_allocator gives each thread its own allocator of one pool per process.
#include <doctest/doctest.h>

#include <kbuf/kbuf.hpp>

#include "test_support.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace {

using space = kbuf_test::space;  // the default space, or the foreign one (test_support.hpp)
using Alloc = kbuf::BufferAllocator<space>;
using Pool = kbuf::AllocatorPool<space>;
using Matrix = Kokkos::View<double**, Kokkos::LayoutRight, space>;

// The message of the kbuf::logic_error `f` throws, or "" when it throws none.
template <class F>
std::string logic_error_of(F f) {
  try {
    f();
  } catch (const kbuf::logic_error& e) {
    return e.what();
  }
  return "";
}

// A library's object with View members of its own, assigned after construction.
struct Buffers {
  Matrix send;
  Kokkos::View<int*, space> ids;
};

static_assert(
    std::is_same<decltype(kbuf::temporary<double**, Kokkos::LayoutRight, space>("m", 2, 3)),
                 Matrix>::value,
    "kbuf::temporary returns the plain View type");
static_assert(
    std::is_same<decltype(kbuf::temporary<float*>(std::string("v"), 4)),
                 Kokkos::View<float*, Kokkos::LayoutRight, kbuf::default_memory_space>>::value,
    "kbuf::temporary defaults to LayoutRight and kbuf::default_memory_space");
static_assert(std::is_same<decltype(kbuf::current()), kbuf::BufferAllocator<>*>::value,
              "kbuf::current defaults to kbuf::default_memory_space");

}  // namespace

TEST_CASE("without a current allocator, temporary is a View allocated under its label") {
  REQUIRE(kbuf::current<space>() == nullptr);
  auto scope = kbuf::scope<space>();
  CHECK(scope.allocator() == nullptr);  // a scope that does nothing
  Buffers b;
  b.send = kbuf::temporary<double**, Kokkos::LayoutRight, space>("send_buffer", 5, 3);
  b.ids = kbuf::temporary<int*, Kokkos::LayoutRight, space>(std::string("ids"), 7);
  CHECK(b.send.label() == "send_buffer");
  CHECK(b.send.use_count() == 1);  // managed: it frees itself
  CHECK(b.send.extent(0) == 5);
  CHECK(b.send.extent(1) == 3);
  CHECK(b.ids.label() == "ids");
  CHECK(b.ids.extent(0) == 7);
}

TEST_CASE("under kbuf::use, temporary comes from the allocator and its scope releases it") {
  Alloc alloc(4096);
  kbuf::use current(alloc);
  CHECK(kbuf::current<space>() == &alloc);
  CHECK(&current.allocator() == &alloc);
  Buffers b;
  {
    auto scope = kbuf::scope<space>();
    CHECK(scope.allocator() == &alloc);
    b.send = kbuf::temporary<double**, Kokkos::LayoutRight, space>("send_buffer", 5, 3);
    CHECK(b.send.use_count() == 0);  // no reference count: Kokkos treats it as unmanaged
    CHECK(b.send.extent(0) == 5);
    CHECK(b.send.extent(1) == 3);
    CHECK(alloc.is_live(b.send));
    CHECK(alloc.buffer().data() <= reinterpret_cast<unsigned char*>(b.send.data()));
    CHECK(alloc.checkpoint().depth() == 1);
    CHECK(alloc.used() >= 5 * 3 * sizeof(double));
  }
  CHECK(alloc.empty());
  CHECK(!alloc.is_live(b.send));
  CHECK(alloc.statistics().temporaries == 1);
  CHECK(alloc.statistics().fallbacks == 0);
}

TEST_CASE("temporary takes static extents and LayoutLeft, as allocate does") {
  Alloc alloc(4096);
  kbuf::use current(alloc);
  auto scope = kbuf::scope<space>();
  const auto a = kbuf::temporary<double* [3], Kokkos::LayoutLeft, space>("a", 4);
  static_assert(std::is_same<std::remove_const_t<decltype(a)>,
                             Kokkos::View<double* [3], Kokkos::LayoutLeft, space>>::value,
                "the requested type");
  CHECK(a.extent(0) == 4);
  CHECK(a.extent(1) == 3);
  CHECK(a.stride(1) == 4);  // LayoutLeft
  CHECK(alloc.is_live(a));
  const auto s = kbuf::temporary<double[2], Kokkos::LayoutRight, space>("s");
  CHECK(s.extent(0) == 2);
  CHECK(alloc.checkpoint().depth() == 2);
}

TEST_CASE("temporary of a zero extent is an empty View that takes nothing from the allocator") {
  Alloc alloc(4096);
  {
    const auto plain = kbuf::temporary<double**, Kokkos::LayoutRight, space>("empty", 0, 3);
    CHECK(plain.size() == 0);
    CHECK(plain.extent(1) == 3);
  }
  kbuf::use current(alloc);
  auto scope = kbuf::scope<space>();
  const auto v = kbuf::temporary<double**, Kokkos::LayoutRight, space>("empty", 0, 3);
  CHECK(v.size() == 0);
  CHECK(v.extent(0) == 0);
  CHECK(v.extent(1) == 3);
  CHECK(alloc.used() == 0);
  CHECK(alloc.empty());
  CHECK(alloc.statistics().temporaries == 1);  // counted, as a zero-sized allocate is
}

TEST_CASE(
    "bad extents raise logic_error naming kbuf::temporary, the label and the value, and "
    "allocate nothing") {
  const auto check_refused = [](Alloc* alloc) {
    INFO((alloc != nullptr ? "with a current allocator" : "without one"));
    const std::size_t used = alloc != nullptr ? alloc->used() : 0;
    const std::string negative = logic_error_of(
        [] { (void)kbuf::temporary<double**, Kokkos::LayoutRight, space>("send_buffer", 4, -2); });
    CHECK(negative ==
          "kbuf::temporary(\"send_buffer\", 4, -2): extent 1 is -2; extents must "
          "not be negative");
    const std::size_t huge = std::numeric_limits<std::size_t>::max() / 4;
    const std::string overflow = logic_error_of(
        [&] { (void)kbuf::temporary<double**, Kokkos::LayoutRight, space>("big", huge, 3); });
    CHECK(overflow.find("kbuf::temporary(\"big\", ") == 0);
    CHECK(overflow.find("overflows size_t") != std::string::npos);
    if (alloc != nullptr) {
      CHECK(alloc->used() == used);
      CHECK(alloc->statistics().temporaries == 0);
      CHECK(alloc->empty());
    }
  };
  check_refused(nullptr);
  Alloc alloc(4096);
  kbuf::use current(alloc);
  check_refused(&alloc);
}

TEST_CASE("use guards nest: the newest is current, and the one before it again after it ends") {
  Alloc a(1024), b(1024), c(1024);
  CHECK(kbuf::current<space>() == nullptr);
  {
    kbuf::use ga(a);
    CHECK(kbuf::current<space>() == &a);
    {
      kbuf::use gb(b);
      CHECK(kbuf::current<space>() == &b);
      {
        kbuf::use ga_again(a);  // the same allocator twice
        CHECK(kbuf::current<space>() == &a);
      }
      CHECK(kbuf::current<space>() == &b);
    }
    CHECK(kbuf::current<space>() == &a);
    {
      kbuf::use gc(c);
      CHECK(kbuf::current<space>() == &c);
    }
    CHECK(kbuf::current<space>() == &a);
  }
  CHECK(kbuf::current<space>() == nullptr);
}

TEST_CASE("guards that end out of order leave the newest live guard's allocator current") {
  Alloc a(1024), b(1024), c(1024);
  std::optional<kbuf::use<space>> ga, gb, gc;
  ga.emplace(a);
  gb.emplace(b);
  gc.emplace(c);
  gb.reset();  // the middle one first
  CHECK(kbuf::current<space>() == &c);
  gc.reset();
  CHECK(kbuf::current<space>() == &a);  // not b: its guard is gone
  gb.emplace(b);
  ga.reset();  // the oldest, under a newer one
  CHECK(kbuf::current<space>() == &b);
  gb.reset();
  CHECK(kbuf::current<space>() == nullptr);
}

TEST_CASE("a guard is its thread's: other threads see their own guards, or none") {
  Alloc mine(1024);
  kbuf::use current(mine);
  Alloc* seen = &mine;
  Alloc* seen_inside = nullptr;
  std::thread([&] {
    seen = kbuf::current<space>();
    Alloc theirs(1024);
    kbuf::use g(theirs);
    seen_inside = kbuf::current<space>() == &theirs ? &theirs : nullptr;
  }).join();
  CHECK(seen == nullptr);
  CHECK(seen_inside != nullptr);
  CHECK(kbuf::current<space>() == &mine);
}

TEST_CASE("use(pool) makes each thread's own allocator of the pool current") {
  Pool pool(1024);
  constexpr int nthreads = 3;
  std::vector<Alloc*> current(nthreads, nullptr), local(nthreads, nullptr);
  std::vector<int> depth(nthreads, -1);
  std::vector<std::thread> threads;
  std::atomic<int> started{0}, done{0};
  for (int t = 0; t < nthreads; ++t) {
    threads.emplace_back([&, t] {
      ++started;
      while (started.load() < nthreads) std::this_thread::yield();
      {
        kbuf::use g(pool);
        current[t] = kbuf::current<space>();
        local[t] = &pool.local();
        auto scope = kbuf::scope<space>();
        (void)kbuf::temporary<double*, Kokkos::LayoutRight, space>("t", 10 + t);
        depth[t] = static_cast<int>(pool.local().checkpoint().depth());
      }
      ++done;
      while (done.load() < nthreads) std::this_thread::yield();  // all alive at once
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < nthreads; ++t) {
    INFO("thread ", t);
    CHECK(current[t] != nullptr);
    CHECK(current[t] == local[t]);
    CHECK(depth[t] == 1);  // its own temporary only
    for (int u = 0; u < t; ++u) CHECK(current[t] != current[u]);
  }
  CHECK(pool.size() == nthreads);
  CHECK(pool.statistics().temporaries + pool.statistics().fallbacks == nthreads);
}

TEST_CASE("a scope resets the allocator it was opened on, whatever is current when it ends") {
  Alloc a(4096), b(4096);
  kbuf::use ga(a);
  {
    auto scope = kbuf::scope<space>();  // of a
    CHECK(scope.allocator() == &a);
    (void)kbuf::temporary<double*, Kokkos::LayoutRight, space>("from a", 8);
    {
      kbuf::use gb(b);
      {
        auto inner = kbuf::scope<space>();  // of b
        (void)kbuf::temporary<double*, Kokkos::LayoutRight, space>("from b", 8);
        CHECK(b.checkpoint().depth() == 1);
      }
      CHECK(b.empty());
      // b is current, but the innermost scope is a's: a plain View, from neither.
      const auto plain = kbuf::temporary<double*, Kokkos::LayoutRight, space>("plain", 8);
      CHECK(plain.use_count() == 1);
      CHECK(b.empty());
    }
    CHECK(a.checkpoint().depth() == 1);
    kbuf::use gb_again(b);  // current when the scope ends
  }
  CHECK(a.empty());
  CHECK(b.empty());
}

TEST_CASE("outside every kbuf::scope, temporary is a plain View even under kbuf::use") {
  Alloc alloc(4096);
  kbuf::use current(alloc);
  // An object made outside a call's scope may outlive it: it never holds a temporary.
  const auto kept = kbuf::temporary<double*, Kokkos::LayoutRight, space>("kept", 16);
  CHECK(kept.use_count() == 1);
  CHECK(kept.label() == "kept");
  CHECK(alloc.empty());
  CHECK(alloc.statistics().temporaries == 0);
  {
    auto scope = kbuf::scope<space>();
    const auto t = kbuf::temporary<double*, Kokkos::LayoutRight, space>("t", 16);
    CHECK(t.use_count() == 0);
    CHECK(alloc.is_live(t));
  }
  const auto again = kbuf::temporary<double*, Kokkos::LayoutRight, space>("again", 16);
  CHECK(again.use_count() == 1);
  CHECK(alloc.empty());
}

TEST_CASE(
    "a scope opened with no current allocator does nothing, and temporaries under a guard made "
    "inside it are plain Views") {
  Alloc c(4096);
  {
    auto scope = kbuf::scope<space>();
    CHECK(scope.allocator() == nullptr);
    kbuf::use gc(c);
    const auto late = kbuf::temporary<double*, Kokkos::LayoutRight, space>("late", 8);
    CHECK(late.use_count() == 1);
  }
  CHECK(c.empty());
  CHECK(c.statistics().temporaries == 0);
}

TEST_CASE("scopes that end out of order leave the newest live one innermost") {
  Alloc a(4096);
  kbuf::use ga(a);
  std::optional<kbuf::CurrentScope<space>> none, first;
  first.emplace(&a);
  none.emplace(nullptr);  // innermost: a scope of no allocator
  CHECK(kbuf::temporary<double*, Kokkos::LayoutRight, space>("plain", 4).use_count() == 1);
  first.reset();  // the older one first: `none` stays innermost
  CHECK(kbuf::temporary<double*, Kokkos::LayoutRight, space>("plain", 4).use_count() == 1);
  none.reset();
  CHECK(kbuf::temporary<double*, Kokkos::LayoutRight, space>("plain", 4).use_count() == 1);
  auto again = kbuf::scope<space>();
  CHECK(kbuf::temporary<double*, Kokkos::LayoutRight, space>("t", 4).use_count() == 0);
}

TEST_CASE("process_allocator gives each thread its own allocator, the same on every call") {
  Alloc& here = kbuf::process_allocator<space>();
  CHECK(&kbuf::process_allocator<space>() == &here);
  CHECK(here.label().rfind("kbuf::process_allocator[", 0) == 0);
  Alloc* there = nullptr;
  Alloc* there_again = nullptr;
  std::thread([&] {
    there = &kbuf::process_allocator<space>();
    there_again = &kbuf::process_allocator<space>();
  }).join();
  CHECK(there != nullptr);
  CHECK(there != &here);
  CHECK(there_again == there);
  kbuf::use current(kbuf::process_allocator<space>());
  CHECK(kbuf::current<space>() == &here);
}
