// What kbuf's MPI tests share: the calling process's rank and the number of ranks in
// MPI_COMM_WORLD.
#ifndef KBUF_MPI_TEST_SUPPORT_HPP
#define KBUF_MPI_TEST_SUPPORT_HPP

#include <mpi.h>

namespace kbuf_mpi_test {

inline int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
inline int world_size() {
  int s = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

}  // namespace kbuf_mpi_test

#endif  // KBUF_MPI_TEST_SUPPORT_HPP
