// Counts the allocations and deallocations Kokkos reports to Kokkos Tools, from any thread at
// once (tool_recorder.hpp records single-threaded event streams). kbuf's own records (spaces
// "kbuf:<label>") are counted apart from real allocations.
#ifndef KBUF_TEST_ALLOCATION_COUNTER_HPP
#define KBUF_TEST_ALLOCATION_COUNTER_HPP

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace kbuf_test {

/// What the counter saw since it was installed or last cleared.
struct AllocationCounts {
  std::uint64_t allocations = 0;    // real allocations (any space but kbuf:*)
  std::uint64_t deallocations = 0;  // real deallocations
  std::uint64_t bytes = 0;          // bytes of the real allocations
  std::uint64_t temporaries = 0;    // kbuf's records of its temporaries (kbuf:* spaces)
  std::uint64_t releases = 0;       // and of their releases
};

namespace counter_detail {
struct State {
  std::mutex mutex;
  AllocationCounts counts;
  std::map<std::string, std::int64_t> live_by_label;      // real allocations minus deallocations
  std::map<std::string, std::uint64_t> records_by_label;  // kbuf's records, by the name given
};
inline State& state() {
  static State s;
  return s;
}
inline bool is_kbuf_space(const char* space) {
  return std::string(space).rfind("kbuf:", 0) == 0;
}
inline void on_allocate(const Kokkos::Tools::SpaceHandle space, const char* label, const void*,
                        const std::uint64_t bytes) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (is_kbuf_space(space.name)) {
    ++s.counts.temporaries;
    ++s.records_by_label[label];
  } else {
    ++s.counts.allocations;
    s.counts.bytes += bytes;
    ++s.live_by_label[label];
  }
}
inline void on_deallocate(const Kokkos::Tools::SpaceHandle space, const char* label, const void*,
                          const std::uint64_t) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (is_kbuf_space(space.name)) {
    ++s.counts.releases;
  } else {
    ++s.counts.deallocations;
    --s.live_by_label[label];
  }
}
}  // namespace counter_detail

/// Installs allocate and deallocate callbacks while it lives (the other callbacks it finds stay)
/// and puts back what it found when destroyed; its counts outlive it, so that what happens
/// inside `Kokkos::finalize` can be read after it. Only one counter may live at a time.
class AllocationCounter {
 public:
  AllocationCounter() : saved_(Kokkos::Tools::Experimental::get_callbacks()) {
    clear();
    Kokkos::Tools::Experimental::set_allocate_data_callback(&counter_detail::on_allocate);
    Kokkos::Tools::Experimental::set_deallocate_data_callback(&counter_detail::on_deallocate);
  }
  AllocationCounter(const AllocationCounter&) = delete;
  AllocationCounter& operator=(const AllocationCounter&) = delete;
  /// Puts back the callbacks it found. Skip with `release()` when Kokkos is already finalized.
  ~AllocationCounter() {
    if (!released_) Kokkos::Tools::Experimental::set_callbacks(saved_);
  }
  /// Forgets the callbacks it found: its destructor then changes nothing (after finalize).
  void release() { released_ = true; }

  /// The counts so far.
  static AllocationCounts counts() {
    counter_detail::State& s = counter_detail::state();
    std::lock_guard<std::mutex> lock(s.mutex);
    return s.counts;
  }
  /// Real allocations minus deallocations of the labels that start with `prefix`.
  static std::int64_t live(const std::string& prefix) {
    counter_detail::State& s = counter_detail::state();
    std::lock_guard<std::mutex> lock(s.mutex);
    std::int64_t n = 0;
    for (const auto& entry : s.live_by_label) {
      if (entry.first.rfind(prefix, 0) == 0) n += entry.second;
    }
    return n;
  }
  /// Starts the counts from zero.
  /// kbuf's records (of temporaries, not their releases) named `label`.
  static std::uint64_t records(const std::string& label) {
    counter_detail::State& s = counter_detail::state();
    std::lock_guard<std::mutex> lock(s.mutex);
    const auto it = s.records_by_label.find(label);
    return it == s.records_by_label.end() ? 0 : it->second;
  }
  static void clear() {
    counter_detail::State& s = counter_detail::state();
    std::lock_guard<std::mutex> lock(s.mutex);
    s.counts = AllocationCounts{};
    s.live_by_label.clear();
    s.records_by_label.clear();
  }

 private:
  Kokkos::Tools::Experimental::EventSet saved_;
  bool released_ = false;
};

}  // namespace kbuf_test

#endif
