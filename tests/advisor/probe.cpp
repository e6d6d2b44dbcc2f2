// A Kokkos program that allocates a little and exits with the status its argument names: the
// advisor loaded into it must not change that status, whatever happens to its output.
#include <Kokkos_Core.hpp>

#include <cstdlib>

int main(int argc, char** argv) {
  const int status = argc > 1 ? std::atoi(argv[1]) : 0;
  Kokkos::initialize(argc, argv);
  {
    Kokkos::View<double*> state("probe::state", 100);
    for (int i = 0; i < 10; ++i) {
      Kokkos::View<double*> tmp(Kokkos::ViewAllocateWithoutInitializing("probe::tmp"), 50 + i);
      Kokkos::deep_copy(tmp, 1.0);
    }
  }
  Kokkos::finalize();
  return status;
}
