// kbuf::mpi::reduce_statistics against figures computed by hand: counters that depend on the
// rank in known ways, a tie for the peak, words near SIZE_MAX, and real allocators and pools.
#include <doctest/doctest.h>

#include <kbuf/kbuf.hpp>
#include <kbuf/mpi.hpp>

#include "mpi_test_support.hpp"

#include <cstddef>
#include <limits>
#include <sstream>
#include <string>

namespace {

using kbuf_mpi_test::world_rank;
using kbuf_mpi_test::world_size;

}  // namespace

TEST_CASE("reduce_statistics: min, max and sum of each counter, and the rank with the peak") {
  const std::size_t r = static_cast<std::size_t>(world_rank());
  const std::size_t p = static_cast<std::size_t>(world_size());
  kbuf::Statistics s;
  s.temporaries = 10 * (r + 1);  // 10, 20, 30, ...
  s.fallbacks = r;               // 0, 1, 2, ...
  s.fallback_bytes = 100 * r;
  s.regrows = 1;
  s.resets = 50 - r;
  s.fences = r * r;
  s.peak_used = r == 0 ? 4096 : 8192;  // ranks 1, 2, ... tie for the peak: the lowest wins
  s.peak_live = 3;
  s.limit_refusals = r == p - 1 ? std::numeric_limits<std::size_t>::max() : 0;

  const kbuf::mpi::ReducedStatistics got = kbuf::mpi::reduce_statistics(s, MPI_COMM_WORLD);
  CHECK(got.ranks == static_cast<int>(p));
  CHECK(got.min.temporaries == 10);
  CHECK(got.max.temporaries == 10 * p);
  CHECK(got.sum.temporaries == 5 * p * (p + 1));
  CHECK(got.min.fallbacks == 0);
  CHECK(got.max.fallbacks == p - 1);
  CHECK(got.sum.fallbacks == p * (p - 1) / 2);
  CHECK(got.sum.fallback_bytes == 50 * p * (p - 1));
  CHECK(got.min.regrows == 1);
  CHECK(got.sum.regrows == p);
  CHECK(got.min.resets == 50 - (p - 1));
  CHECK(got.max.resets == 50);
  CHECK(got.max.fences == (p - 1) * (p - 1));
  CHECK(got.max.peak_live == 3);
  CHECK(got.sum.peak_live == 3 * p);
  CHECK(got.min.limit_refusals == (p == 1 ? std::numeric_limits<std::size_t>::max() : 0));
  CHECK(got.max.limit_refusals == std::numeric_limits<std::size_t>::max());
  if (p == 1) {
    CHECK(got.max.peak_used == 4096);
    CHECK(got.peak_rank == 0);
  } else {
    CHECK(got.min.peak_used == 4096);
    CHECK(got.max.peak_used == 8192);
    CHECK(got.sum.peak_used == 4096 + 8192 * (p - 1));
    CHECK(got.peak_rank == 1);
  }
  if (p == 3) {  // the figures of the three-rank run, written out
    CHECK(got.sum.temporaries == 60);
    CHECK(got.sum.fallbacks == 3);
    CHECK(got.sum.fallback_bytes == 300);
    CHECK(got.min.resets == 48);
    CHECK(got.sum.resets == 147);
    CHECK(got.sum.fences == 5);
    CHECK(got.sum.peak_used == 20480);
  }

  std::ostringstream os;
  os << got;
  const std::string text = os.str();
  CHECK(text.find("kbuf statistics over " + std::to_string(p)) == 0);
  CHECK(text.find("largest peak used on rank " + std::to_string(got.peak_rank)) !=
        std::string::npos);
  CHECK(text.find("temporaries") != std::string::npos);
  CHECK(text.find("reserved bytes") == std::string::npos);  // no rank grows in place

  // A rank whose buffer grows in place: the three rows of growth in place, every rank's.
  s.reserved_bytes = r == 0 ? std::size_t{1} << 30 : 0;
  s.committed_bytes = 2097152 * (r + 1);
  s.grown_in_place = r;
  std::ostringstream in_place;
  in_place << kbuf::mpi::reduce_statistics(s, MPI_COMM_WORLD);
  CAPTURE(in_place.str());
  // The min, max and sum of the row `name`.
  const auto row = [&](const std::string& name) {
    const std::string& t = in_place.str();
    const std::size_t at = t.find("  " + name + " ");
    std::istringstream line(at == std::string::npos ? "" : t.substr(at + name.size() + 2));
    std::string min, max, sum;
    std::size_t v[3] = {0, 0, 0};
    line >> min >> v[0] >> max >> v[1] >> sum >> v[2];
    CHECK(min + max + sum == "minmaxsum");
    return std::to_string(v[0]) + " " + std::to_string(v[1]) + " " + std::to_string(v[2]);
  };
  CHECK(row("grown in place") ==
        "0 " + std::to_string(p - 1) + " " + std::to_string(p * (p - 1) / 2));
  CHECK(row("reserved bytes") ==
        (p == 1 ? "1073741824" : "0") + std::string(" 1073741824 1073741824"));
  CHECK(row("committed bytes") ==
        "2097152 " + std::to_string(2097152 * p) + " " + std::to_string(2097152 * p * (p + 1) / 2));
}

TEST_CASE("reduce_statistics of allocators and pools: each rank's peak differs with its share") {
  const int r = world_rank();
  const int p = world_size();
  {
    kbuf::BufferAllocator<Kokkos::HostSpace> alloc(1 << 20);
    {
      auto scope = alloc.scope();
      auto a = alloc.allocate<double*>(1000 * (r + 1));  // 8000 (r + 1) bytes
      auto b = alloc.allocate<int*>(3);
      (void)a, (void)b;
    }
    const auto got = kbuf::mpi::reduce_statistics(alloc, MPI_COMM_WORLD);
    CHECK(got.sum.temporaries == static_cast<std::size_t>(2 * p));
    CHECK(got.sum.fallbacks == 0);
    CHECK(got.peak_rank == p - 1);  // the largest share
    CHECK(got.max.peak_used >= static_cast<std::size_t>(8000 * p + 12));
    CHECK(got.min.peak_used < static_cast<std::size_t>(8000 + 64 + 12 + 64));
    CHECK(got.sum.resets == static_cast<std::size_t>(p));
  }
  {
    kbuf::AllocatorPool<Kokkos::HostSpace> pool(1 << 16);
    for (int i = 0; i <= r; ++i) {
      auto scope = pool.local().scope();
      (void)pool.local().allocate<float*>(10);
    }
    (void)pool.local();  // a thread publishes its counters at each local() call
    const auto got = kbuf::mpi::reduce_statistics(pool, MPI_COMM_WORLD);
    CHECK(got.min.temporaries == 1);
    CHECK(got.max.temporaries == static_cast<std::size_t>(p));
    CHECK(got.sum.temporaries == static_cast<std::size_t>(p * (p + 1) / 2));
  }
}

TEST_CASE("reduce_statistics over a split communicator reduces within each part") {
  const int r = world_rank();
  MPI_Comm half;
  MPI_Comm_split(MPI_COMM_WORLD, r % 2, r, &half);
  kbuf::Statistics s;
  s.temporaries = static_cast<std::size_t>(r);
  const auto got = kbuf::mpi::reduce_statistics(s, half);
  int n = 0;
  MPI_Comm_size(half, &n);
  std::size_t want = 0;
  for (int q = r % 2; q < world_size(); q += 2) want += static_cast<std::size_t>(q);
  CHECK(got.ranks == n);
  CHECK(got.sum.temporaries == want);
  CHECK(got.min.temporaries == static_cast<std::size_t>(r % 2));
  MPI_Comm_free(&half);
}
