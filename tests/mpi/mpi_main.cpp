// The main of kbuf's MPI tests: doctest on every rank, between MPI_Init and MPI_Finalize and
// under Kokkos::ScopeGuard. CTest runs it under mpirun (kbuf_add_mpi_test). A rank's failure
// fails every rank, so mpirun's status is the verdict; ranks other than 0 report only failures.
// A filter that matches no test case fails, so a renamed case cannot pass with nothing run.
#define DOCTEST_CONFIG_IMPLEMENT
#include <mpi.h>

#include <Kokkos_Core.hpp>

#include "doctest_run.hpp"  // tests/support: the run, and no-match-fails

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int result = 0;
  {
    Kokkos::ScopeGuard kokkos(argc, argv);
    result = kbuf_test::run_doctest(argc, argv, rank != 0);
  }
  int worst = 0;
  MPI_Allreduce(&result, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return worst;
}
