// halo_caller: see halo_caller.hpp.
#include "halo_caller.hpp"

namespace halo_caller {

void run(const std::vector<halo::Halo>& halos, const halo::Data& data, std::size_t steps) {
  for (std::size_t s = 0; s < steps; ++s) {
    halo::gather(halos[s % halos.size()], data);
    halo::scatter(halos[s % halos.size()], data);
  }
}

void run_using(Alloc& alloc, const std::vector<halo::Halo>& halos, const halo::Data& data,
               std::size_t steps) {
  kbuf::use current(alloc);
  run(halos, data, steps);
}

void run_with_process_allocators(const std::vector<halo::Halo>& halos, const halo::Data& data,
                                 std::size_t steps) {
  kbuf::use_process_allocators guard;
  run(halos, data, steps);
}

Alloc* current_here() {
  return kbuf::current<halo::memory_space>();
}

Alloc* process_allocator_here() {
  return &kbuf::process_allocator<halo::memory_space>();
}

}  // namespace halo_caller
