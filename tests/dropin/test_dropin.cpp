// kbuf dropped into a library it does not own: the halo library (halo/, built on its own as
// kbuf_test_halo) allocates fresh send and receive buffers on every gather and scatter, as
// Cabana's do, through kbuf::temporary under a kbuf::scope. Its caller runs the same workload
// with no allocator, under kbuf::use(alloc), under kbuf::use(pool) from several host threads at
// once, and with kbuf::process_allocator(): the results are those of a host reference every
// time, and after one warm-up pass no memory is allocated (counted through Kokkos Tools).
#include <doctest/doctest.h>

#include <kbuf/kbuf.hpp>

#include "allocation_counter.hpp"
#include "halo.hpp"
#include "halo_workload.hpp"
#include "test_support.hpp"

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

namespace {

using space = kbuf_test::space;  // the default space, or the foreign one (test_support.hpp)
static_assert(std::is_same<space, halo::memory_space>::value,
              "the test and the halo library it links must work in the same memory space");
using Alloc = kbuf::BufferAllocator<space>;
using Pool = kbuf::AllocatorPool<space>;
using kbuf_test::AllocationCounter;
using kbuf_test::AllocationCounts;
using namespace halo_workload;

// Threads that wait for each other at each numbered point.
class Barrier {
 public:
  explicit Barrier(unsigned n) : n_(n) {}
  void wait() {
    const unsigned generation = generation_.load();
    if (arrived_.fetch_add(1) + 1 == n_) {
      arrived_.store(0);
      generation_.fetch_add(1);
    } else {
      while (generation_.load() == generation) std::this_thread::yield();
    }
  }

 private:
  unsigned n_;
  std::atomic<unsigned> arrived_{0};
  std::atomic<unsigned> generation_{0};
};

// Each of `nthreads` threads runs two passes on its own halos and data under the guard
// `make_guard` returns; the second pass is counted. Returns what the counter saw in it;
// `results[t]` is thread t's data after both passes. No View is shared between threads: a
// Serial-only Kokkos 3.4 counts View references without atomics.
template <class MakeGuard>
AllocationCounts run_threads(unsigned nthreads, MakeGuard make_guard,
                             std::vector<std::vector<double>>& results) {
  AllocationCounter counter;
  results.assign(nthreads, {});
  Barrier barrier(nthreads + 1);  // the threads and this one
  AllocationCounts counted;
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < nthreads; ++t) {
    threads.emplace_back([&, t] {
      const auto halos = make_halos();
      halo::Data data = make_data();
      {
        auto guard = make_guard();
        run_pass(halos, data);  // warm-up: the allocators learn their size
        barrier.wait();         // 1: everyone warmed up
        barrier.wait();         // 2: the counter is cleared
        run_pass(halos, data);
        barrier.wait();  // 3: everyone done
      }
      barrier.wait();  // 4: counted
      results[t] = to_host(data);
    });
  }
  barrier.wait();  // 1
  AllocationCounter::clear();
  barrier.wait();  // 2
  barrier.wait();  // 3
  counted = AllocationCounter::counts();
  barrier.wait();  // 4
  for (auto& th : threads) th.join();
  return counted;
}

}  // namespace

TEST_CASE(
    "without a current allocator the library allocates its buffers on every call, as before") {
  const auto halos = make_halos();
  halo::Data data = make_data();
  AllocationCounter counter;
  REQUIRE(kbuf::current<space>() == nullptr);
  run_pass(halos, data);
  const AllocationCounts n = AllocationCounter::counts();
  MESSAGE("no current allocator: per step (a gather and a scatter) ",
          static_cast<double>(n.allocations) / steps, " allocations of ",
          static_cast<double>(n.bytes) / steps, " bytes");
  INFO("allocations ", n.allocations, ", deallocations ", n.deallocations);
  // A send and a receive buffer per gather and per scatter, at least (the empty buffers of the
  // constructors may count too).
  CHECK(n.allocations >= 2 * 2 * steps);
  CHECK(n.deallocations == n.allocations);
  CHECK(AllocationCounter::live("send_buffer") == 0);
  CHECK(AllocationCounter::live("recv_buffer") == 0);
  CHECK(n.temporaries == 0);
  CHECK(to_host(data) == reference(1));
}

TEST_CASE(
    "under kbuf::use(alloc) the library's buffers come from the allocator: same results, "
    "no allocation after one warm-up pass") {
  const auto halos = make_halos();
  halo::Data data = make_data();
  AllocationCounter counter;  // loaded before the allocator is made: it reports its temporaries
  Alloc alloc;                // empty: the warm-up pass falls back and regrows
  {
    kbuf::use current(alloc);
    CHECK(kbuf::current<space>() == &alloc);
    run_pass(halos, data);  // warm-up
    CHECK(alloc.empty());   // each call's scope released its buffers
    const AllocationCounts warm = AllocationCounter::counts();
    MESSAGE("kbuf::use(alloc), warm-up pass of ", steps, " steps: ", warm.allocations,
            " allocations, ", alloc.statistics().fallbacks, " fallbacks, ",
            alloc.statistics().regrows, " regrowths, a buffer of ", alloc.capacity(), " bytes");
    AllocationCounter::clear();
    alloc.reset_peaks();
    run_pass(halos, data);
  }
  const AllocationCounts n = AllocationCounter::counts();
  MESSAGE("kbuf::use(alloc), second pass: per step ", static_cast<double>(n.allocations) / steps,
          " allocations, ", static_cast<double>(n.temporaries) / steps,
          " records in kbuf:* spaces");
  INFO("allocations ", n.allocations, ", temporaries ", n.temporaries);
  CHECK(n.allocations == 0);
  CHECK(n.deallocations == 0);
  CHECK(alloc.statistics().fallbacks == 0);
  CHECK(alloc.statistics().regrows == 0);
  // kbuf's own records, apart: a send and a receive buffer per call (the empty ones hold no
  // memory and are not reported), each released, each under its label.
  CHECK(n.temporaries == 2 * 2 * steps);
  CHECK(n.releases == n.temporaries);
  // The allocator counts what the tool saw; the empty buffers apart.
  CHECK(alloc.statistics().temporaries == n.temporaries);
  CHECK(alloc.statistics().empty == 2 * 2 * steps);
  CHECK(AllocationCounter::records("send_buffer") == 2 * steps);
  CHECK(AllocationCounter::records("recv_buffer") == 2 * steps);
  CHECK(alloc.empty());
  CHECK(kbuf::current<space>() == nullptr);
  CHECK(to_host(data) == reference(2));
}

TEST_CASE(
    "KBUF_TOOLS_REPORT=0 keeps kbuf's records from a counting tool: it sees real "
    "allocations only") {
  const auto halos = make_halos();
  halo::Data data = make_data();
  AllocationCounter counter;
  const kbuf_test::ScopedEnv off("KBUF_TOOLS_REPORT", "0");
  Alloc alloc;  // reads the switch now
  CHECK(!alloc.reports_to_tools());
  kbuf::use current(alloc);
  run_pass(halos, data);
  const AllocationCounts warm = AllocationCounter::counts();
  CHECK(warm.temporaries == 0);
  CHECK(warm.allocations > 0);  // the warm-up's fallbacks and regrowth are real allocations
  AllocationCounter::clear();
  run_pass(halos, data);
  const AllocationCounts n = AllocationCounter::counts();
  CHECK(n.allocations == 0);
  CHECK(n.temporaries == 0);
  CHECK(n.releases == 0);
  CHECK(to_host(data) == reference(2));
}

TEST_CASE(
    "a gather built inside a scope its caller opened and used after it corrupts nothing: its "
    "buffers are its own") {
  // Cabana's createGather: the caller builds a gather and keeps it across steps. Here it builds
  // it inside a scope of its own, which ends before the gather is used. Were the gather's
  // buffers temporaries of that scope, the unrelated temporary taken afterwards would lie over
  // them, and apply() would write into it.
  const auto halos = make_halos();
  halo::Data data = make_data();
  Alloc alloc(1 << 20);  // room for everything: no fallback, the buffer is reused as is
  kbuf::use current(alloc);
  std::vector<halo::KeptGather> kept;
  for (const bool caller_owner : {false, true}) {
    INFO("the caller's scope has ", std::string(caller_owner ? "an owner of its own" : "no owner"));
    constexpr kbuf::owner app{"app"};
    kept.clear();
    {
      auto scope = caller_owner ? kbuf::scope<space>(app) : kbuf::scope<space>();
      const auto mine = caller_owner
                            ? kbuf::temporary<double*, Kokkos::LayoutRight, space>(app, "mine", 8)
                            : kbuf::temporary<double*, Kokkos::LayoutRight, space>("mine", 8);
      CHECK(alloc.is_live(mine));  // the caller's own temporaries are served
      kept.emplace_back(halos[3], data);
      CHECK(alloc.checkpoint().depth() == 1);  // the gather's buffers are not temporaries
    }
    REQUIRE(alloc.empty());
    constexpr std::size_t n = 4096;  // over everything the scope above could have held
    auto scope = kbuf::scope<space>();
    const auto unrelated = kbuf::temporary<double*, Kokkos::LayoutRight, space>("unrelated", n);
    Kokkos::deep_copy(unrelated, -1.0);
    kept.front().apply();
    auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), unrelated);
    std::size_t overwritten = 0;
    for (std::size_t i = 0; i < n; ++i) overwritten += host(i) != -1.0 ? 1 : 0;
    CHECK(overwritten == 0);
  }
  // And the gather did its job: every ghost holds the owned element it copies.
  const std::vector<double> d = to_host(data);
  for (std::size_t i = 0; i < num_ghost(3); ++i) {
    for (std::size_t c = 0; c < comps; ++c) {
      CHECK(d[(num_owned + i) * comps + c] == d[export_id(3, i) * comps + c]);
    }
  }
}

TEST_CASE("a library call releases its own buffers and leaves the caller's temporaries live") {
  const auto halos = make_halos();
  halo::Data data = make_data();
  Alloc alloc(64 * 1024);
  kbuf::use current(alloc);
  auto mine = alloc.allocate<double*>(100);  // the caller's, live across the calls
  const auto cp = alloc.checkpoint();
  halo::gather(halos[0], data);
  halo::scatter(halos[1], data);
  CHECK(alloc.checkpoint().depth() == 1);
  CHECK(alloc.is_live(mine));
  CHECK(alloc.statistics().temporaries == 1 + 2 * 2);  // each call: two real buffers
  CHECK(alloc.statistics().empty == 2 * 2);            // and two empty ones
  alloc.reset(cp);  // still valid: the library's scopes went back to it, not past it
  alloc.reset();
}

TEST_CASE(
    "under kbuf::use(pool) several threads run the library at once, each on its own "
    "allocator: same results, no allocation after warm-up") {
  constexpr unsigned nthreads = 3;
  Pool pool;
  std::vector<std::vector<double>> results;
  const AllocationCounts n = run_threads(
      nthreads, [&pool] { return std::make_unique<kbuf::use<space>>(pool); }, results);
  INFO("allocations ", n.allocations);
  CHECK(n.allocations == 0);
  CHECK(n.deallocations == 0);
  CHECK(n.releases == n.temporaries);
  CHECK(pool.size() == nthreads);  // the threads ran at once: one allocator each
  const std::vector<double> expected = reference(2);
  for (unsigned t = 0; t < nthreads; ++t) {
    INFO("thread ", t);
    CHECK(results[t] == expected);
  }
  CHECK(pool.statistics().fallbacks > 0);  // in the warm-up
}

TEST_CASE(
    "with kbuf::process_allocator() the main thread and others run the library: same "
    "results, no allocation after warm-up") {
  const auto halos = make_halos();
  const std::vector<double> expected = reference(2);
  {
    halo::Data data = make_data();
    kbuf::use current(kbuf::process_allocator<space>());
    CHECK(kbuf::current<space>() == &kbuf::process_allocator<space>());
    run_pass(halos, data);
    AllocationCounter counter;
    run_pass(halos, data);
    CHECK(AllocationCounter::counts().allocations == 0);
    CHECK(to_host(data) == expected);
    CHECK(kbuf::process_allocator<space>().empty());
  }
  constexpr unsigned nthreads = 2;
  std::vector<std::vector<double>> results;
  const AllocationCounts n = run_threads(
      nthreads, [] { return std::make_unique<kbuf::use<space>>(kbuf::process_allocator<space>()); },
      results);
  CHECK(n.allocations == 0);
  for (unsigned t = 0; t < nthreads; ++t) {
    INFO("thread ", t);
    CHECK(results[t] == expected);
  }
}
