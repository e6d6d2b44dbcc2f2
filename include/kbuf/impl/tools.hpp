#ifndef KBUF_IMPL_TOOLS_HPP
#define KBUF_IMPL_TOOLS_HPP

/// @file
/// Temporaries visible to Kokkos Tools: when a tool is loaded as an allocator is made, each of
/// its temporaries and each release is reported through Kokkos' public profiling interface
/// (`allocateData`/`deallocateData`) in a space of its own, "kbuf:<label>", unless
/// `KBUF_TOOLS_REPORT=0` (or the CMake option of that name) turned the reports off. Not part of
/// the API.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

#include <Kokkos_Core.hpp>

#include <kbuf/config.hpp>

#ifndef KBUF_TOOLS_REPORT
#define KBUF_TOOLS_REPORT 0
#endif

namespace kbuf {
namespace Impl {

/// Whether a Kokkos Tools library is loaded (or tool callbacks are set) now.
inline bool tool_loaded() noexcept {
  return Kokkos::Profiling::profileLibraryLoaded();
}

/// True when an allocator made now reports its temporaries to a loaded tool:
/// `KBUF_TOOLS_REPORT=0` turns the reports off, any other value on; unset or empty, the
/// configured default holds (CMake option `KBUF_TOOLS_REPORT`, OFF unless set ON: a tool that
/// does not know kbuf's records would count them as allocations).
inline bool tools_report_requested() noexcept {
  const char* value = std::getenv("KBUF_TOOLS_REPORT");
  if (value == nullptr || value[0] == '\0') return KBUF_TOOLS_REPORT != 0;
  return !(value[0] == '0' && value[1] == '\0');
}

/// The reporting of one allocator: the space handle, and the address and size of every live
/// temporary (a tool is told the same pointer and size at the release), by depth. Exists only
/// while a tool is loaded and reports are on (KBUF_TOOLS_REPORT), so that the allocator keeps no
/// such records otherwise. It has room for `capacity()` live temporaries; the allocator grows it
/// before a deeper one is acquired.
class TemporaryReporter {
 public:
  /// For the allocator labelled `label`, with room for `capacity` live temporaries.
  TemporaryReporter(const std::string& label, std::size_t capacity)
      : space_(Kokkos::Profiling::make_space_handle(("kbuf:" + label).c_str())) {
    grow(capacity, 0);
  }
  TemporaryReporter(const TemporaryReporter&) = delete;
  TemporaryReporter& operator=(const TemporaryReporter&) = delete;

  /// Room for `capacity` live temporaries, keeping the first `live` records.
  /// @throws std::bad_alloc
  void grow(std::size_t capacity, std::size_t live) {
    std::unique_ptr<Record[]> records(new Record[capacity]);
    for (std::size_t i = 0; i < live; ++i) records[i] = std::move(records_[i]);
    records_ = std::move(records);
    capacity_ = capacity;
  }

  /// Live temporaries there is room for.
  std::size_t capacity() const noexcept { return capacity_; }

  /// The next temporary's label (null: "temporary"); it must live until that temporary is
  /// acquired.
  void name_next(const char* label) noexcept { next_name_ = label; }

  /// The temporary at `depth` (0 for the oldest live one) is [p, p + nbytes), named by the
  /// label name_next() gave, if any.
  void acquired(std::size_t depth, const void* p, std::size_t nbytes) noexcept {
    const char* name = next_name_ != nullptr ? next_name_ : "temporary";
    next_name_ = nullptr;
    try {
      records_[depth] = Record{p, nbytes, name};
      Kokkos::Profiling::allocateData(space_, records_[depth].name, p, nbytes);
    } catch (...) {  // a tool's failure (or no memory for the name) must not fail the allocation
    }
  }

  /// The temporaries at depths [to, from) are released, newest first, under the names they
  /// were acquired with.
  void released(std::size_t from, std::size_t to) noexcept {
    for (std::size_t i = from; i-- > to;) {
      try {
        Kokkos::Profiling::deallocateData(space_, records_[i].name, records_[i].p,
                                          records_[i].nbytes);
      } catch (...) {
      }
    }
  }

 private:
  struct Record {
    const void* p = nullptr;
    std::size_t nbytes = 0;
    std::string name;  // the temporary's label: no heap memory up to the small-string size
  };
  Kokkos::Profiling::SpaceHandle space_;
  const char* next_name_ = nullptr;
  std::unique_ptr<Record[]> records_;
  std::size_t capacity_ = 0;
};

}  // namespace Impl
}  // namespace kbuf

#endif  // KBUF_IMPL_TOOLS_HPP
