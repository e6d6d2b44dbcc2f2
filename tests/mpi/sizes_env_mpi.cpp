// KBUF_SIZES for all ranks (kbuf::mpi::share_sizes), for mpi.sizes_env_np2: each rank runs a
// labelled allocator whose need grows with its rank, a labelled workspace on it, and an
// allocator of its own label; rank 0 prints the largest counts over the ranks,
// "fallbacks F regrows R workspace_fallbacks W largest H" (H: the largest high-water mark of the
// shared label). At Kokkos::finalize the ranks' sizes are combined and written once.
#include <mpi.h>

#include <kbuf/kbuf.hpp>
#include <kbuf/mpi.hpp>

#include <cstdio>
#include <string>

#include "sizes_workload.hpp"

namespace {

using space = kbuf::default_memory_space;
using exec = space::execution_space;
using alloc_type = kbuf::BufferAllocator<space>;

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  {
    int kokkos_argc = 1;
    Kokkos::ScopeGuard guard(kokkos_argc, argv);
    (void)kbuf::mpi::share_sizes(MPI_COMM_WORLD);
    unsigned long counts[4] = {0, 0, 0, 0};  // fallbacks, regrows, workspace fallbacks, hwm
    {
      alloc_type a(exec(), 0, alloc_type::default_alignment, "sizes-env-mpi");
      alloc_type own(exec(), 0, alloc_type::default_alignment,
                     "sizes-env-rank" + std::to_string(rank));
      const Kokkos::TeamPolicy<exec> policy(a.execution_space_instance(), 256, 1);
      const Kokkos::View<long long*, space> wrong("wrong", 1);
      for (int step = 0; step < 3; ++step) {
        auto scope = a.scope();
        auto own_scope = own.scope();
        (void)own.allocate<double*>(512);
        for (int k = 1; k <= 24 + 8 * rank; ++k) (void)a.allocate<double*>(128 * k);
        auto ws = a.workspace(policy, kbuf::per_team{0}, "sizes-env ws");
        Kokkos::parallel_for("kbuf test: sizes env (MPI)", policy,
                             kbuf_test::SizesTakes{ws, 100, 2000, wrong});
        const kbuf::WorkspaceReport r = ws.finish();
        if (step == 0) counts[2] = r.fallbacks;
      }
      counts[0] = a.statistics().fallbacks + own.statistics().fallbacks;
      counts[1] = a.statistics().regrows + own.statistics().regrows;
      counts[3] = a.high_water_mark();
      long long wrong_entries = 0;
      Kokkos::deep_copy(wrong_entries, Kokkos::subview(wrong, 0));
      if (wrong_entries != 0) {
        std::fprintf(stderr, "rank %d: %lld workspace entries read back wrong\n", rank,
                     wrong_entries);
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
    }
    unsigned long most[4];
    MPI_Reduce(counts, most, 4, MPI_UNSIGNED_LONG, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) {
      std::printf("fallbacks %lu regrows %lu workspace_fallbacks %lu largest %lu\n", most[0],
                  most[1], most[2], most[3]);
    }
  }
  MPI_Finalize();
  return 0;
}
