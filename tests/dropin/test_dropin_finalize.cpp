// kbuf::process_allocator across Kokkos' lifetime: refused before Kokkos::initialize, made on
// first use from any thread, and ended by Kokkos::finalize with nothing left allocated; refused
// again after it, naming the call. The halo library (halo/) runs under it from the main thread
// and from two others. This executable has its own main: the test initializes and finalizes
// Kokkos itself.
#define DOCTEST_CONFIG_IMPLEMENT
#include "doctest_run.hpp"  // tests/support: the run, and no-match-fails

#include <kbuf/kbuf.hpp>

#include "allocation_counter.hpp"
#include "halo.hpp"

#include <cstddef>
#include <string>
#include <thread>
#include <vector>

namespace {

using space = halo::memory_space;
using kbuf_test::AllocationCounter;

// The message of the logic_error process_allocator() throws, or "" when it throws none.
std::string refusal() {
  try {
    (void)kbuf::process_allocator<space>();
  } catch (const kbuf::logic_error& e) {
    return e.what();
  }
  return "";
}

// The same for a kbuf::use_process_allocators guard.
std::string guard_refusal() {
  try {
    kbuf::use_process_allocators guard;
  } catch (const kbuf::logic_error& e) {
    return e.what();
  }
  return "";
}

// A few gathers and scatters on 100 owned elements with 50 ghosts; the sum of the data after.
struct Fill {
  halo::Data data;
  KOKKOS_INLINE_FUNCTION void operator()(const std::size_t i) const {
    for (std::size_t c = 0; c < data.extent(1); ++c) data(i, c) = static_cast<double>(i % 10 + c);
  }
};
std::vector<double> work() {
  halo::Ids ids("export_ids", 50);
  auto host_ids = Kokkos::create_mirror_view(ids);
  for (std::size_t i = 0; i < 50; ++i) host_ids(i) = static_cast<int>((i * 3) % 100);
  Kokkos::deep_copy(ids, host_ids);
  const halo::Halo h(100, ids);
  halo::Data data("particles", 150, 2);
  Kokkos::parallel_for("fill", Kokkos::RangePolicy<halo::execution_space>(0, 150), Fill{data});
  Kokkos::fence();
  for (int step = 0; step < 4; ++step) {
    halo::gather(h, data);
    halo::scatter(h, data);
  }
  auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), data);
  return std::vector<double>(host.data(), host.data() + host.span());
}

}  // namespace

TEST_CASE(
    "process_allocator: refused before Kokkos::initialize, made on first use from any "
    "thread, ended by Kokkos::finalize with nothing left, refused after it") {
  REQUIRE(!Kokkos::is_initialized());
  const std::string before = refusal();
  CHECK(before.find("kbuf::process_allocator<") != std::string::npos);
  CHECK(before.find("Kokkos is not initialized") != std::string::npos);
  CHECK(guard_refusal() ==
        "kbuf::use_process_allocators: Kokkos is not initialized; the process allocators exist "
        "between Kokkos::initialize and Kokkos::finalize");

  Kokkos::initialize();
  // A hook of the program's own, pushed before the process allocator's, runs after it: by then
  // the allocator is ended, though Kokkos still counts as initialized.
  static std::string in_hook = "not run";
  Kokkos::push_finalize_hook([] { in_hook = refusal(); });
  AllocationCounter counter;                 // loaded before the process allocator is made
  const std::vector<double> plain = work();  // no current allocator: plain Views
  std::vector<double> main_result;
  std::vector<std::vector<double>> thread_results(2);
  {
    kbuf::use current(kbuf::process_allocator<space>());
    CHECK(current.allocator().label().rfind("kbuf::process_allocator[", 0) == 0);
    main_result = work();
    std::vector<std::thread> threads;
    for (std::size_t t = 0; t < thread_results.size(); ++t) {
      threads.emplace_back([&thread_results, t] {
        kbuf::use mine(kbuf::process_allocator<space>());
        thread_results[t] = work();
      });
    }
    for (auto& th : threads) th.join();
  }
  {
    kbuf::use_process_allocators all;  // the same allocators, through the one-line guard
    CHECK(work() == main_result);
  }
  CHECK(guard_refusal().empty());
  CHECK(AllocationCounter::live("kbuf::process_allocator") > 0);  // its buffers, until finalize
  CHECK(AllocationCounter::counts().temporaries > 0);
  CHECK(refusal().empty());
  Kokkos::finalize();
  counter.release();  // Kokkos is finalized: nothing to put back

  // What Kokkos reported inside finalize: the process allocator's buffers (and fallbacks) freed,
  // every temporary it reported released.
  const kbuf_test::AllocationCounts n = AllocationCounter::counts();
  CHECK(AllocationCounter::live("kbuf::process_allocator") == 0);
  CHECK(AllocationCounter::live("send_buffer") == 0);
  CHECK(AllocationCounter::live("recv_buffer") == 0);
  CHECK(n.releases == n.temporaries);
  CHECK(main_result == plain);
  for (const auto& r : thread_results) CHECK(r == plain);

  CHECK(in_hook.find("Kokkos::finalize ended the process allocator") != std::string::npos);
  const std::string after = refusal();
  CHECK(after.find("kbuf::process_allocator<") != std::string::npos);
  CHECK(after.find("Kokkos::finalize ended the process allocator") != std::string::npos);
  CHECK(guard_refusal().find("Kokkos is not initialized") != std::string::npos);
}

int main(int argc, char** argv) {
  return kbuf_test::run_doctest(argc, argv);
}
