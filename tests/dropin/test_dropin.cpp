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

constexpr std::size_t num_owned = 300;
constexpr std::size_t comps = 3;
constexpr std::size_t num_halos = 4;            // ghost counts differ between them
constexpr std::size_t steps = 2 * num_halos;    // one pass: every halo twice
constexpr std::size_t max_ghost = 60 + 37 * 3;  // the largest halo's ghosts
constexpr std::size_t rows = num_owned + max_ghost;
constexpr long modulus = 1009;

std::size_t num_ghost(std::size_t k) {
  return 60 + 37 * k;
}
// The owned element ghost i of halo k copies: owned elements are copied by up to three ghosts.
int export_id(std::size_t k, std::size_t i) {
  return static_cast<int>((i * 7 + k * 13) % num_owned);
}
double initial(std::size_t i, std::size_t c) {
  return static_cast<double>((i * 31 + c * 7) % 101);
}

// The step between gather and scatter, on the owned elements and the halo's ghosts: integer
// arithmetic in doubles, exact (every value stays far below 2^53), so every run must give the
// same bits as the host reference.
struct Update {
  halo::Data data;
  KOKKOS_INLINE_FUNCTION void operator()(const std::size_t i) const {
    for (std::size_t c = 0; c < data.extent(1); ++c) {
      const long v = static_cast<long>(data(i, c));
      data(i, c) = static_cast<double>((v * 3 + static_cast<long>(i + c)) % modulus);
    }
  }
};
struct Fill {
  halo::Data data;
  KOKKOS_INLINE_FUNCTION void operator()(const std::size_t i) const {
    for (std::size_t c = 0; c < data.extent(1); ++c) {
      data(i, c) = static_cast<double>((i * 31 + c * 7) % 101);
    }
  }
};

// The halos, made once (their export ids are the caller's, not per-call buffers).
std::vector<halo::Halo> make_halos() {
  std::vector<halo::Halo> halos;
  for (std::size_t k = 0; k < num_halos; ++k) {
    halo::Ids ids("export_ids", num_ghost(k));
    auto host = Kokkos::create_mirror_view(ids);
    for (std::size_t i = 0; i < num_ghost(k); ++i) host(i) = export_id(k, i);
    Kokkos::deep_copy(ids, host);
    halos.emplace_back(num_owned, ids);
  }
  return halos;
}

// Particle data in its initial state.
halo::Data make_data() {
  halo::Data data("particles", rows, comps);
  Kokkos::parallel_for("fill", Kokkos::RangePolicy<halo::execution_space>(0, rows), Fill{data});
  Kokkos::fence();
  return data;
}

// One pass: `steps` steps of gather, update, scatter. Only kernels over ranges, fences and
// copies between Views: what Kokkos 3.4's Serial backend can take from several threads at once.
void run_pass(const std::vector<halo::Halo>& halos, const halo::Data& data) {
  for (std::size_t s = 0; s < steps; ++s) {
    const halo::Halo& h = halos[s % num_halos];
    halo::gather(h, data);
    Kokkos::parallel_for("update",
                         Kokkos::RangePolicy<halo::execution_space>(0, num_owned + h.num_ghost()),
                         Update{data});
    Kokkos::fence();
    halo::scatter(h, data);
  }
}

std::vector<double> to_host(const halo::Data& data) {
  auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), data);
  return std::vector<double>(host.data(), host.data() + rows * comps);
}

// The same passes on the host with plain loops.
std::vector<double> reference(std::size_t passes) {
  std::vector<double> d(rows * comps);
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t c = 0; c < comps; ++c) d[i * comps + c] = initial(i, c);
  }
  for (std::size_t p = 0; p < passes; ++p) {
    for (std::size_t s = 0; s < steps; ++s) {
      const std::size_t k = s % num_halos;
      for (std::size_t i = 0; i < num_ghost(k); ++i) {  // gather
        for (std::size_t c = 0; c < comps; ++c) {
          d[(num_owned + i) * comps + c] = d[export_id(k, i) * comps + c];
        }
      }
      for (std::size_t i = 0; i < num_owned + num_ghost(k); ++i) {  // update
        for (std::size_t c = 0; c < comps; ++c) {
          const long v = static_cast<long>(d[i * comps + c]);
          d[i * comps + c] = static_cast<double>((v * 3 + static_cast<long>(i + c)) % modulus);
        }
      }
      for (std::size_t i = 0; i < num_ghost(k); ++i) {  // scatter
        for (std::size_t c = 0; c < comps; ++c) {
          d[export_id(k, i) * comps + c] += d[(num_owned + i) * comps + c];
        }
      }
    }
  }
  return d;
}

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
  // memory and are not reported), each released.
  CHECK(n.temporaries == 2 * 2 * steps);
  CHECK(n.releases == n.temporaries);
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
  CHECK(alloc.statistics().temporaries == 1 + 2 * 4);  // each call: two empty, two real buffers
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
