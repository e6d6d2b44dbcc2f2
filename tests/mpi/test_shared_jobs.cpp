// kbuf::mpi::shared_indices and kbuf::mpi::gather_ordered: jobs shared round-robin, their lines
// printed by rank 0 in job order as if one process had run them all.
#include <doctest/doctest.h>

#include <kbuf/mpi.hpp>

#include "mpi_test_support.hpp"

#include <string>
#include <utility>
#include <vector>

namespace {

using kbuf_mpi_test::world_rank;
using kbuf_mpi_test::world_size;

}  // namespace

TEST_CASE("shared_indices: every job on exactly one rank, round-robin") {
  const int r = world_rank();
  const int p = world_size();
  for (std::size_t n : {0u, 1u, 2u, 7u, 10u}) {
    const std::vector<std::size_t> mine = kbuf::mpi::shared_indices(n, MPI_COMM_WORLD);
    for (std::size_t k = 0; k < mine.size(); ++k) {
      CHECK(mine[k] == static_cast<std::size_t>(r) + k * static_cast<std::size_t>(p));
    }
    int count = static_cast<int>(mine.size());
    int total = 0;
    MPI_Allreduce(&count, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(total == static_cast<int>(n));
  }
}

TEST_CASE("gather_ordered: rank 0 gets every rank's lines in job order") {
  const int r = world_rank();
  const std::size_t n = 7;
  std::vector<std::pair<std::size_t, std::string>> lines;
  const std::vector<std::size_t> mine = kbuf::mpi::shared_indices(n, MPI_COMM_WORLD);
  for (auto it = mine.rbegin(); it != mine.rend(); ++it) {  // any order will do
    lines.emplace_back(*it, "job " + std::to_string(*it) + (*it == 3 ? "" : ",with,csv"));
  }
  const std::vector<std::string> all = kbuf::mpi::gather_ordered(lines, MPI_COMM_WORLD);
  if (r == 0) {
    REQUIRE(all.size() == n);
    for (std::size_t i = 0; i < n; ++i) {
      CHECK(all[i] == "job " + std::to_string(i) + (i == 3 ? "" : ",with,csv"));
    }
  } else {
    CHECK(all.empty());
  }
  // Another root, and ranks with nothing to say.
  const int last = world_size() - 1;
  std::vector<std::pair<std::size_t, std::string>> some;
  if (r % 2 == 0) some.emplace_back(static_cast<std::size_t>(r), std::string(1000, 'a' + r));
  const auto got = kbuf::mpi::gather_ordered(some, MPI_COMM_WORLD, last);
  if (r == last) {
    REQUIRE(got.size() == static_cast<std::size_t>((world_size() + 1) / 2));
    for (std::size_t k = 0; k < got.size(); ++k) {
      CHECK(got[k] == std::string(1000, static_cast<char>('a' + 2 * k)));
    }
  }
}
