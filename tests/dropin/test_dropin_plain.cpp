// The halo library built without kbuf (kbuf_test_halo_plain: its build links Kokkos alone, so
// kbuf_optional.hpp makes plain Views): the same calls allocate the library's buffers on every
// call, as before it adopted kbuf, also when its caller makes allocators current, and give the
// host reference's results.
#include <doctest/doctest.h>

#include <kbuf/kbuf.hpp>

#include "allocation_counter.hpp"
#include "halo.hpp"
#include "halo_workload.hpp"

using namespace halo_workload;
using kbuf_test::AllocationCounter;

TEST_CASE(
    "built without kbuf, the library allocates its buffers on every call, whatever its caller "
    "makes current, with the same results") {
  const auto halos = make_halos();
  halo::Data data = make_data();
  AllocationCounter counter;
  run_pass(halos, data);
  const kbuf_test::AllocationCounts plain = AllocationCounter::counts();
  CHECK(plain.allocations >= 2 * 2 * steps);  // a send and a receive buffer per call, at least
  CHECK(plain.deallocations == plain.allocations);
  CHECK(plain.temporaries == 0);
  AllocationCounter::clear();
  {
    kbuf::use_process_allocators guard;  // the caller uses kbuf; this library does not
    run_pass(halos, data);
  }
  const kbuf_test::AllocationCounts guarded = AllocationCounter::counts();
  CHECK(guarded.allocations == plain.allocations);
  CHECK(guarded.temporaries == 0);
  CHECK(AllocationCounter::live("send_buffer") == 0);
  CHECK(to_host(data) == reference(2));
  // A kept gather works the same.
  halo::KeptGather kept(halos[0], data);
  kept.apply();
  const std::vector<double> d = to_host(data);
  for (std::size_t i = 0; i < num_ghost(0); ++i) {
    CHECK(d[(num_owned + i) * comps] == d[static_cast<std::size_t>(export_id(0, i)) * comps]);
  }
}
