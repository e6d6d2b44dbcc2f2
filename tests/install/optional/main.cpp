// Runs the halo library two passes and checks the results against the host reference; where the
// library was built with kbuf, under kbuf::use_process_allocators, and checks that kbuf served
// its buffers (none allocated in the second pass).
#include <Kokkos_Core.hpp>

#include "halo.hpp"
#include "halo_workload.hpp"

#if HALO_WITH_KBUF
#include <kbuf/kbuf.hpp>
#endif

#include <cstdio>

int main(int argc, char* argv[]) {
  Kokkos::ScopeGuard kokkos(argc, argv);
  int status = 0;
  {
    using namespace halo_workload;
    const auto halos = make_halos();
    halo::Data data = make_data();
#if HALO_WITH_KBUF
    kbuf::use_process_allocators guard;
#endif
    run_pass(halos, data);
    run_pass(halos, data);
    if (to_host(data) != reference(2)) {
      std::printf("halo: results differ from the reference\n");
      status = 1;
    }
#if HALO_WITH_KBUF
    const kbuf::Statistics s = kbuf::process_allocator<halo::memory_space>().statistics();
    std::printf("halo with kbuf: %zu temporaries, %zu fallbacks\n", s.temporaries, s.fallbacks);
    if (s.temporaries + s.fallbacks < 2 * 2 * 2 * steps || s.temporaries == 0) status = 1;
#else
    std::printf("halo without kbuf: plain Views\n");
#endif
  }
  return status;
}
