// Counting the memory allocations Kokkos makes in one memory space, the same way for every
// strategy an application compares: through Kokkos Tools' allocate and deallocate callbacks,
// chained to whatever tool the user loaded (its callbacks are called first, and put back when the
// counter goes). The counts are per host thread, so that runs on several threads at once each
// count their own.
//
// A Kokkos tool changes what kbuf does: an allocator made while one is loaded reports every
// temporary to it, off its hot path. So an application makes its allocators first and installs
// the counter after them (kbuf-tebd and kbuf-demo do), and its timings are then those of the
// hot path.
#ifndef KBUF_TIMING_ALLOCATIONS_HPP
#define KBUF_TIMING_ALLOCATIONS_HPP

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace kbuf_timing {

/// Allocations and their bytes, and deallocations.
struct AllocationCount {
  std::size_t allocations = 0, bytes = 0, deallocations = 0;

  friend AllocationCount operator-(const AllocationCount& a, const AllocationCount& b) {
    return {a.allocations - b.allocations, a.bytes - b.bytes, a.deallocations - b.deallocations};
  }
};

namespace detail {

struct CounterState {
  char space[64] = {};  // the counted space's name (SpaceHandle names are at most 64 bytes)
  Kokkos::Tools::allocateDataFunction previous_allocate = nullptr;
  Kokkos::Tools::deallocateDataFunction previous_deallocate = nullptr;
};

inline CounterState& counter_state() {
  static CounterState state;
  return state;
}

inline AllocationCount& thread_count() {
  thread_local AllocationCount count;
  return count;
}

inline void on_allocate(Kokkos::Tools::SpaceHandle handle, const char* label, const void* ptr,
                        std::uint64_t size) {
  const CounterState& s = counter_state();
  if (s.previous_allocate != nullptr) s.previous_allocate(handle, label, ptr, size);
  if (std::strncmp(handle.name, s.space, sizeof s.space) == 0) {
    AllocationCount& c = thread_count();
    ++c.allocations;
    c.bytes += static_cast<std::size_t>(size);
  }
}

inline void on_deallocate(Kokkos::Tools::SpaceHandle handle, const char* label, const void* ptr,
                          std::uint64_t size) {
  const CounterState& s = counter_state();
  if (s.previous_deallocate != nullptr) s.previous_deallocate(handle, label, ptr, size);
  if (std::strncmp(handle.name, s.space, sizeof s.space) == 0) ++thread_count().deallocations;
}

}  // namespace detail

/// Counts, while it lives, the allocations Kokkos makes in the memory space named `space_name`
/// (MemorySpace::name(): "Host", "Cuda", ...), per host thread. One at a time; make it after
/// Kokkos::initialize and destroy it before Kokkos::finalize.
class AllocationCounter {
 public:
  explicit AllocationCounter(const char* space_name) {
    detail::CounterState& s = detail::counter_state();
    std::strncpy(s.space, space_name, sizeof s.space - 1);
    saved_ = Kokkos::Tools::Experimental::get_callbacks();
    s.previous_allocate = saved_.allocate_data;
    s.previous_deallocate = saved_.deallocate_data;
    Kokkos::Tools::Experimental::set_allocate_data_callback(&detail::on_allocate);
    Kokkos::Tools::Experimental::set_deallocate_data_callback(&detail::on_deallocate);
  }
  AllocationCounter(const AllocationCounter&) = delete;
  AllocationCounter& operator=(const AllocationCounter&) = delete;
  ~AllocationCounter() {
    Kokkos::Tools::Experimental::set_allocate_data_callback(saved_.allocate_data);
    Kokkos::Tools::Experimental::set_deallocate_data_callback(saved_.deallocate_data);
    detail::CounterState& s = detail::counter_state();
    s.previous_allocate = nullptr;
    s.previous_deallocate = nullptr;
  }

  /// What the calling thread's allocations in the space came to so far (since the thread began,
  /// while a counter was installed): subtract two of them for a run.
  static AllocationCount now() { return detail::thread_count(); }

 private:
  Kokkos::Tools::Experimental::EventSet saved_;
};

}  // namespace kbuf_timing

#endif  // KBUF_TIMING_ALLOCATIONS_HPP
