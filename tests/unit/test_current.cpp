// kbuf/current.hpp: kbuf::use makes an allocator (or a pool's per-thread allocator) the calling
// thread's current one, nesting; kbuf::current, kbuf::scope and kbuf::temporary follow it;
// kbuf::process_allocator gives each thread its own allocator of one pool per process.
#include <doctest/doctest.h>

#include <kbuf/kbuf.hpp>

#include "allocation_counter.hpp"
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

namespace {
// A library's View types as adopters write them: through a Kokkos::Device, with a const data
// type, with a memory trait.
using device = Kokkos::Device<space::execution_space, space>;
using DeviceMatrix = Kokkos::View<double**, Kokkos::LayoutLeft, device>;
using ConstVector = Kokkos::View<const int*, space>;
using RandomVector = Kokkos::View<float*, space, Kokkos::MemoryTraits<Kokkos::RandomAccess>>;
constexpr kbuf::owner typed_owner{"typed"};

static_assert(std::is_same<decltype(kbuf::temporary<DeviceMatrix>(typed_owner, "m", 2, 3)),
                           DeviceMatrix>::value,
              "kbuf::temporary<ViewType> returns ViewType");
static_assert(std::is_same<decltype(kbuf::temporary<ConstVector>(typed_owner, "c", 2)),
                           ConstVector::non_const_type>::value,
              "kbuf::temporary<ViewType> of a const data type returns the non-const View type");
static_assert(std::is_same<decltype(kbuf::temporary<RandomVector>("r", 2)), RandomVector>::value,
              "kbuf::temporary<ViewType> keeps the memory traits");
static_assert(std::is_same<decltype(kbuf::temporary<double*, Kokkos::LayoutRight, device>(
                               typed_owner, std::string("d"), 2)),
                           Kokkos::View<double*, Kokkos::LayoutRight, device>>::value,
              "kbuf::temporary<DataType, Layout, Device> returns the View of that device type");
}  // namespace

TEST_CASE("temporary takes a View type and a Kokkos::Device: the same memory as the data type's") {
  Alloc alloc(4096);
  kbuf::use current(alloc);
  DeviceMatrix kept;  // a member of a library's object, typed by its View type
  {
    auto scope = kbuf::scope<device>(typed_owner);  // a Device names its memory space
    CHECK(scope.allocator() == &alloc);
    kept = kbuf::temporary<decltype(kept)>(typed_owner, "m", 4, 3);
    CHECK(kept.extent(0) == 4);
    CHECK(kept.extent(1) == 3);
    CHECK(kept.stride(1) == 4);  // the View type's LayoutLeft
    CHECK(alloc.is_live(kept));
    CHECK(kept.use_count() == 0);  // from the allocator: no reference count
    const ConstVector c = kbuf::temporary<ConstVector>(typed_owner, std::string("c"), 5);
    CHECK(c.extent(0) == 5);
    CHECK(alloc.is_live(c));
    const auto d = kbuf::temporary<double*, Kokkos::LayoutRight, device>(typed_owner, "d", 6);
    CHECK(d.extent(0) == 6);
    CHECK(alloc.is_live(d));
    CHECK(alloc.checkpoint().depth() == 3);
  }
  CHECK(alloc.empty());
  CHECK(!alloc.is_live(kept));
  CHECK(alloc.statistics().temporaries == 3);
  // Outside the scope: a plain View of the View type, allocated under its label.
  const auto plain = kbuf::temporary<DeviceMatrix>(typed_owner, "plain", 2, 2);
  CHECK(plain.use_count() == 1);
  CHECK(plain.label() == "plain");
  CHECK(!alloc.is_live(plain));
  const auto none = kbuf::temporary<RandomVector>("no_owner", 3);
  CHECK(none.label() == "no_owner");
  CHECK(alloc.statistics().temporaries == 3);
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
  CHECK(alloc.statistics().temporaries == 0);  // it holds no memory: counted apart,
  CHECK(alloc.statistics().empty == 1);        // as a zero-sized allocate is
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

namespace {
// Two libraries' owners, and a third object of the first one's name.
constexpr kbuf::owner lib_a{"lib_a"};
constexpr kbuf::owner lib_b{"lib_b"};
constexpr kbuf::owner lib_a_elsewhere{"lib_a"};  // e.g. lib_a's owner in another shared object
static_assert(std::is_trivially_copyable<kbuf::owner>::value, "an owner is a plain value");
}  // namespace

TEST_CASE("a scope serves only the temporaries of its own owner") {
  Alloc alloc(4096);
  kbuf::use current(alloc);
  {
    auto scope = kbuf::scope<space>(lib_a);
    CHECK(scope.allocator() == &alloc);
    CHECK(scope.owner_of() == &lib_a);
    const auto mine = kbuf::temporary<double*, Kokkos::LayoutRight, space>(lib_a, "mine", 8);
    CHECK(mine.use_count() == 0);
    CHECK(alloc.is_live(mine));
    const auto also = kbuf::temporary<double*, Kokkos::LayoutRight, space>(
        lib_a_elsewhere, std::string("also"), 8);  // the same name: the same owner
    CHECK(also.use_count() == 0);
    CHECK(alloc.checkpoint().depth() == 2);
    // Another library's, and one of no owner: plain Views, nothing from the allocator.
    const auto theirs = kbuf::temporary<double*, Kokkos::LayoutRight, space>(lib_b, "theirs", 8);
    CHECK(theirs.use_count() == 1);
    CHECK(theirs.label() == "theirs");
    const auto nobody = kbuf::temporary<double*, Kokkos::LayoutRight, space>("nobody", 8);
    CHECK(nobody.use_count() == 1);
    CHECK(alloc.checkpoint().depth() == 2);
    {
      auto inner = kbuf::scope<space>(lib_b);  // lib_b's call inside lib_a's
      const auto b = kbuf::temporary<double*, Kokkos::LayoutRight, space>(lib_b, "b", 8);
      CHECK(b.use_count() == 0);
      const auto a = kbuf::temporary<double*, Kokkos::LayoutRight, space>(lib_a, "a", 8);
      CHECK(a.use_count() == 1);  // not lib_a's innermost scope any more
      CHECK(alloc.checkpoint().depth() == 3);
    }
    CHECK(alloc.checkpoint().depth() == 2);
  }
  CHECK(alloc.empty());
  CHECK(alloc.statistics().temporaries == 3);
}

TEST_CASE(
    "a scope a caller opens for itself never serves a library's temporaries: an object built "
    "there and kept holds plain Views") {
  Alloc alloc(4096);
  kbuf::use current(alloc);
  Buffers kept;  // the library's long-lived object, kept by the caller
  {
    auto callers = kbuf::scope<space>();  // the caller's own scope (no owner)
    const auto own = kbuf::temporary<double*, Kokkos::LayoutRight, space>("own", 8);
    CHECK(own.use_count() == 0);  // the caller's temporaries are served
    kept.send = kbuf::temporary<double**, Kokkos::LayoutRight, space>(lib_a, "send_buffer", 5, 3);
    CHECK(kept.send.use_count() == 1);  // the library's are its own Views
    {
      auto with_owner = kbuf::scope<space>(lib_b);  // a caller with an owner of its own
      kept.ids = kbuf::temporary<int*, Kokkos::LayoutRight, space>(lib_a, "ids", 7);
      CHECK(kept.ids.use_count() == 1);
    }
  }
  CHECK(alloc.empty());
  CHECK(alloc.statistics().temporaries == 1);
  CHECK(kept.send.use_count() == 1);  // still valid: it owns its memory
  CHECK(kept.send.label() == "send_buffer");
}

TEST_CASE("an owner with a null name is refused, naming the call, and changes nothing") {
  Alloc alloc(4096);
  kbuf::use current(alloc);
  constexpr kbuf::owner unnamed{nullptr};
  const std::string scope_error = logic_error_of([&] { (void)kbuf::scope<space>(unnamed); });
  CHECK(scope_error.find("kbuf::scope<Kokkos::") == 0);
  CHECK(scope_error.find("the owner's name is null") != std::string::npos);
  auto scope = kbuf::scope<space>(lib_a);
  const std::string temporary_error = logic_error_of(
      [&] { (void)kbuf::temporary<double*, Kokkos::LayoutRight, space>(unnamed, "t", 4); });
  CHECK(temporary_error ==
        "kbuf::temporary(owner, \"t\", ...): the owner's name is null; name the owner "
        "(kbuf::owner{\"mylib\"})");
  CHECK(alloc.empty());
  CHECK(alloc.statistics().temporaries == 0);
}

TEST_CASE(
    "use_process_allocators makes each space's process allocator current, and nests with "
    "kbuf::use guards by age") {
  REQUIRE(kbuf::current<space>() == nullptr);
  Alloc alloc(4096);
  {
    kbuf::use_process_allocators all;
    Alloc& process = kbuf::process_allocator<space>();
    CHECK(kbuf::current<space>() == &process);
    CHECK(kbuf::current<Kokkos::HostSpace>() == &kbuf::process_allocator<Kokkos::HostSpace>());
    {
      kbuf::use mine(alloc);  // newer: it wins for its space
      CHECK(kbuf::current<space>() == &alloc);
      {
        kbuf::use_process_allocators again;  // newer still
        CHECK(kbuf::current<space>() == &process);
      }
      CHECK(kbuf::current<space>() == &alloc);
    }
    CHECK(kbuf::current<space>() == &process);
    {
      auto scope = kbuf::scope<space>(lib_a);
      CHECK(scope.allocator() == &process);
      const auto t = kbuf::temporary<double*, Kokkos::LayoutRight, space>(lib_a, "t", 8);
      CHECK(t.use_count() == 0);
      CHECK(process.is_live(t));
    }
    CHECK(process.empty());
    // Another thread has guards of its own: none.
    Alloc* there = &alloc;
    std::thread([&] { there = kbuf::current<space>(); }).join();
    CHECK(there == nullptr);
  }
  CHECK(kbuf::current<space>() == nullptr);
  CHECK(kbuf::current<Kokkos::HostSpace>() == nullptr);
}

#if KBUF_TEST_HAVE_FOREIGN_SPACE
namespace {
// A library that picks its memory space at run time, as CabanaMD's --device-type does: the same
// call allocates in the host space or in the foreign one.
template <class Space>
std::size_t library_step(std::size_t n) {
  auto scope = kbuf::scope<Space>(lib_a);
  const auto send = kbuf::temporary<double*, Kokkos::LayoutRight, Space>(lib_a, "send_buffer", n);
  const auto recv = kbuf::temporary<double*, Kokkos::LayoutRight, Space>(lib_a, "recv_buffer", n);
  return static_cast<std::size_t>(send.use_count() + recv.use_count());  // 0: both served
}
std::size_t library_call(bool on_host, std::size_t n) {
  return on_host ? library_step<Kokkos::HostSpace>(n) : library_step<kbuf_test::foreign_space>(n);
}
}  // namespace

TEST_CASE(
    "one use_process_allocators serves a library that picks its memory space at run time and one "
    "kbuf::use serves its own space only") {
  kbuf_test::AllocationCounter counter;
  {
    kbuf::use_process_allocators all;
    for (const bool on_host : {true, false, true, false}) {
      INFO("host space: ", on_host);
      CHECK(library_call(on_host, 100) == 0);
    }
    kbuf_test::AllocationCounter::clear();  // warm: both allocators hold what they need
    for (const bool on_host : {false, true}) CHECK(library_call(on_host, 100) == 0);
    CHECK(kbuf_test::AllocationCounter::counts().allocations == 0);
    const kbuf::Statistics host = kbuf::process_allocator<Kokkos::HostSpace>().statistics();
    const kbuf::Statistics foreign =
        kbuf::process_allocator<kbuf_test::foreign_space>().statistics();
    CHECK(host.temporaries + host.fallbacks >= 6);  // three calls of two buffers
    CHECK(foreign.temporaries + foreign.fallbacks >= 6);
  }
  kbuf::BufferAllocator<Kokkos::HostSpace> host(4096);
  kbuf::use only_host(host);
  CHECK(library_call(true, 100) == 0);
  CHECK(library_call(false, 100) == 2);  // no allocator for the foreign space: plain Views
}
#endif
