// Records the fences, allocations, deallocations and kernels Kokkos reports to Kokkos Tools,
// so tests can count what kbuf's calls cost in synchronisation and in memory traffic.
#ifndef KBUF_TEST_TOOL_RECORDER_HPP
#define KBUF_TEST_TOOL_RECORDER_HPP

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace kbuf_test {

/// One event reported to Kokkos Tools.
struct ToolEvent {
  // temporary / release: what kbuf reports of its temporaries (space "kbuf:<label>"), kept
  // apart from Kokkos' own allocations and deallocations.
  enum Kind { fence, allocation, deallocation, kernel, temporary, release } kind;
  std::string name;             // fence name, allocation label or kernel name
  std::uint32_t device_id = 0;  // fences and kernels: Kokkos' encoded device/instance id
  std::uint64_t bytes = 0;      // allocations and deallocations
  std::string space = {};       // allocations and deallocations: the space handle's name
  const void* ptr = nullptr;    // allocations and deallocations
};

inline bool is_kbuf_space(const char* space) {
  return std::string(space).rfind("kbuf:", 0) == 0;
}

/// Kokkos' device ids: 8 bits of device type, 7 of device, 17 of instance. A global
/// (device-wide) fence carries instance and device 0; 0x00ffffff marks a deep-copy fence.
constexpr std::uint32_t tool_id_low_mask = 0x00ffffffu;

inline bool is_global_fence(const ToolEvent& e) {
  return e.kind == ToolEvent::fence && (e.device_id & tool_id_low_mask) == 0;
}

/// Device type and instance bits of an id (instance fences leave the device bits 0).
constexpr std::uint32_t tool_id_instance_mask = 0xff01ffffu;

/// The id Kokkos reports for fences of the instance `exec`, without the device bits.
template <class ExecSpace>
std::uint32_t tool_device_id(const ExecSpace& exec) {
  return Kokkos::Tools::Experimental::device_id(exec) & tool_id_instance_mask;
}

/// True for the fences Kokkos itself issues inside a deallocation (Kokkos 4.x HostSpace fences
/// the whole host before every free; CUDA's asynchronous free fences the device).
inline bool is_fence_inside_a_free(const ToolEvent& e) {
  return e.kind == ToolEvent::fence &&
         (e.name.find("free") != std::string::npos || e.name.find("dealloc") != std::string::npos);
}

inline bool is_kbuf_fence(const ToolEvent& e) {
  return e.kind == ToolEvent::fence && e.name.rfind("kbuf::", 0) == 0;
}

namespace detail {
inline std::vector<ToolEvent>*& recorder_sink() {
  static std::vector<ToolEvent>* sink = nullptr;
  return sink;
}
inline void on_begin_fence(const char* name, const std::uint32_t device_id, std::uint64_t* handle) {
  *handle = 0;
  if (auto* sink = recorder_sink()) {
    sink->push_back(ToolEvent{ToolEvent::fence, name, device_id, 0});
  }
}
inline void on_allocate(const Kokkos::Tools::SpaceHandle space, const char* label, const void* ptr,
                        const std::uint64_t bytes) {
  if (auto* sink = recorder_sink()) {
    const auto kind = is_kbuf_space(space.name) ? ToolEvent::temporary : ToolEvent::allocation;
    sink->push_back(ToolEvent{kind, label, 0, bytes, space.name, ptr});
  }
}
inline void on_deallocate(const Kokkos::Tools::SpaceHandle space, const char* label,
                          const void* ptr, const std::uint64_t bytes) {
  if (auto* sink = recorder_sink()) {
    const auto kind = is_kbuf_space(space.name) ? ToolEvent::release : ToolEvent::deallocation;
    sink->push_back(ToolEvent{kind, label, 0, bytes, space.name, ptr});
  }
}
/// The kernel-begin callback installed before the recorder (foreign_kernels.hpp's), called
/// after the recorder's own.
inline Kokkos::Tools::beginFunction& previous_begin_kernel() {
  static Kokkos::Tools::beginFunction f = nullptr;
  return f;
}
inline void on_begin_kernel(const char* name, const std::uint32_t device_id,
                            std::uint64_t* handle) {
  *handle = 0;
  if (auto* sink = recorder_sink()) {
    sink->push_back(ToolEvent{ToolEvent::kernel, name, device_id, 0});
  }
  if (auto* previous = previous_begin_kernel()) previous(name, device_id, handle);
}
}  // namespace detail

/// Installs the callbacks while it lives and collects every event into `events()`; on
/// destruction puts back the callbacks it found. Only one recorder may live at a time. The
/// recorder sets no callbacks for kernel ends, so Kokkos adds no tool fences of its own around
/// kernels beyond the one it issues before each kernel begin; a kernel-begin callback installed
/// before it (foreign_kernels.hpp's) is called after its own, and the end callbacks installed
/// before it stay.
class ToolRecorder {
 public:
  ToolRecorder() : saved_(Kokkos::Tools::Experimental::get_callbacks()) {
    detail::recorder_sink() = &events_;
    detail::previous_begin_kernel() = saved_.begin_parallel_for;
    using namespace Kokkos::Tools::Experimental;
    set_begin_fence_callback(&detail::on_begin_fence);
    set_allocate_data_callback(&detail::on_allocate);
    set_deallocate_data_callback(&detail::on_deallocate);
    set_begin_parallel_for_callback(&detail::on_begin_kernel);
  }
  ToolRecorder(const ToolRecorder&) = delete;
  ToolRecorder& operator=(const ToolRecorder&) = delete;
  ~ToolRecorder() {
    Kokkos::Tools::Experimental::set_callbacks(saved_);
    detail::previous_begin_kernel() = nullptr;
    detail::recorder_sink() = nullptr;
  }

  const std::vector<ToolEvent>& events() const { return events_; }
  void clear() { events_.clear(); }

  template <class Pred>
  std::size_t count(Pred pred) const {
    std::size_t n = 0;
    for (const auto& e : events_) n += pred(e) ? 1 : 0;
    return n;
  }
  std::size_t count(ToolEvent::Kind kind) const {
    return count([kind](const ToolEvent& e) { return e.kind == kind; });
  }
  /// kbuf's own fences of the instance `exec`.
  template <class ExecSpace>
  std::size_t kbuf_fences_of(const ExecSpace& exec) const {
    const std::uint32_t id = tool_device_id(exec);
    return count([id](const ToolEvent& e) {
      return is_kbuf_fence(e) && (e.device_id & tool_id_instance_mask) == id;
    });
  }
  std::size_t kbuf_fences() const { return count(is_kbuf_fence); }
  /// Global fences that no deallocation inside Kokkos explains: must be none.
  std::size_t unexplained_global_fences() const {
    return count(
        [](const ToolEvent& e) { return is_global_fence(e) && !is_fence_inside_a_free(e); });
  }
  std::size_t global_fences() const { return count(is_global_fence); }
  /// Index of the first event matching `pred`, or events().size().
  template <class Pred>
  std::size_t first(Pred pred) const {
    for (std::size_t i = 0; i < events_.size(); ++i) {
      if (pred(events_[i])) return i;
    }
    return events_.size();
  }
  /// One line per event, for failure messages and for the measurement report.
  std::string describe() const {
    std::string s;
    for (const auto& e : events_) {
      static const char* const kinds[] = {"fence", "alloc", "free", "kernel", "temp", "release"};
      char line[96];
      std::snprintf(line, sizeof line, "  %-6s id=0x%08x bytes=%llu ", kinds[e.kind],
                    static_cast<unsigned>(e.device_id), static_cast<unsigned long long>(e.bytes));
      s += line;
      s += e.name;
      s += '\n';
    }
    return s;
  }

 private:
  Kokkos::Tools::Experimental::EventSet saved_;
  std::vector<ToolEvent> events_;
};

/// Whether this Kokkos reports fences to tools at all (Kokkos 3.4's Serial backend does not).
template <class ExecSpace>
bool fences_are_observable(const ExecSpace& exec) {
  ToolRecorder recorder;
  exec.fence();
  return recorder.count(ToolEvent::fence) != 0;
}

}  // namespace kbuf_test

#endif
