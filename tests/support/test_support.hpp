// Types and helpers shared by kbuf's tests and its fuzzer.
#ifndef KBUF_TEST_SUPPORT_HPP
#define KBUF_TEST_SUPPORT_HPP

#include <kbuf/any_space.hpp>  // the foreign spaces are not among libkbuf's
#include <kbuf/kbuf.hpp>

#include "foreign_space.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <string>
#include <vector>

namespace kbuf_test {

struct Pod12 {  // 12 bytes, 4-byte aligned: sizes that are not multiples of the alignment
  float x, y, z;
};
struct Pod32 {  // 32 bytes
  double a, b, c, d;
};
struct alignas(128) Wide {  // over-aligned beyond the host default of 64
  double v;
};
struct alignas(4096) Page {  // over-aligned to a whole page
  unsigned char b[4096];
};
inline bool operator==(const Pod12& a, const Pod12& b) {
  return a.x == b.x && a.y == b.y && a.z == b.z;
}
inline bool operator==(const Pod32& a, const Pod32& b) {
  return a.a == b.a && a.b == b.b && a.c == b.c && a.d == b.d;
}
inline bool operator==(const Wide& a, const Wide& b) {
  return a.v == b.v;
}

static_assert(sizeof(Pod12) == 12, "Pod12 must be 12 bytes");
static_assert(sizeof(Pod32) == 32, "Pod32 must be 32 bytes");
static_assert(alignof(Wide) == 128 && sizeof(Wide) == 128, "Wide must be 128 bytes, aligned");
static_assert(alignof(Page) == 4096 && sizeof(Page) == 4096, "Page must be a page, aligned");

/// A host copy of the entries of a rank-1 View in any space (the foreign space too: through
/// deep_copy).
template <class T, class... P>
std::vector<T> host_vector(const Kokkos::View<T*, P...>& v) {
  std::vector<T> h(v.extent(0));
  Kokkos::deep_copy(
      Kokkos::View<T*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(h.data(), h.size()), v);
  return h;
}

/// The entries of a counter View (a kernel's error counts) that are not zero, as "[1] = 3 [2] = 1";
/// empty when all are: `CHECK(kbuf_test::nonzero_entries(out) == "")` names the failed counter.
template <class T, class... P>
std::string nonzero_entries(const Kokkos::View<T*, P...>& v) {
  std::string found;
  const std::vector<T> h = host_vector(v);
  for (std::size_t i = 0; i < h.size(); ++i) {
    if (h[i] != T())
      found += (found.empty() ? "[" : " [") + std::to_string(i) + "] = " + std::to_string(h[i]);
  }
  return found;
}

/// Sets the environment variable `name` to `value` (null: unsets it) while it lives, and puts
/// back what was there (allocators read KBUF_PASSTHROUGH and KBUF_TOOLS_REPORT when made).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) {
      had_ = true;
      old_ = old;
    }
    if (value != nullptr) {
      ::setenv(name, value, 1);
    } else {
      ::unsetenv(name);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
  ~ScopedEnv() {
    if (had_) {
      ::setenv(name_, old_.c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  const char* name_;
  bool had_ = false;
  std::string old_;
};

/// The memory space the tests' allocators live in: the configured default, or, in the
/// executables that kbuf_add_test(... FOREIGN) builds a second time with
/// KBUF_TEST_FOREIGN_SPACE=1, the foreign space the host may not touch (foreign_space.hpp).
#if defined(KBUF_TEST_FOREIGN_SPACE) && KBUF_TEST_FOREIGN_SPACE
#if !KBUF_TEST_HAVE_FOREIGN_SPACE
#error "KBUF_TEST_FOREIGN_SPACE=1 needs a Kokkos that provides the foreign space"
#endif
using space = foreign_space;
inline constexpr bool foreign = true;
#else
using space = kbuf::default_memory_space;
inline constexpr bool foreign = false;
#endif
using Alloc = kbuf::BufferAllocator<space>;

/// What the workspace tests share: the execution space of `space`, its workspace, team policy
/// and team member (`using namespace kbuf_test::workspace_types;`).
namespace workspace_types {
using exec = Alloc::execution_space;
using WS = kbuf::Workspace<space>;
using team_policy = Kokkos::TeamPolicy<exec>;
using member = team_policy::member_type;
}  // namespace workspace_types

/// A host copy of a contiguous view, in memory aligned for its value type. Kokkos' managed host
/// Views (what create_mirror_view makes from a foreign view) are aligned to 64 bytes on Kokkos
/// 3.4, less than an over-aligned type such as Wide needs: UBSan reports every access to one.
/// `view()` is an unmanaged HostSpace View of the same layout; `copy_back()` writes it to the
/// original. Move-only.
template <class V>
class HostCopy {
 public:
  using value_type = typename V::non_const_value_type;
  using host_view = Kokkos::View<typename V::non_const_data_type, typename V::array_layout,
                                 Kokkos::HostSpace, Kokkos::MemoryUnmanaged>;

  /// A copy of `v`'s contents (`copy`), or uninitialised memory of its shape.
  explicit HostCopy(const V& v, bool copy = true) : v_(v) {
    constexpr std::size_t align = alignof(value_type) > 64 ? alignof(value_type) : 64;
    const std::size_t bytes = v.span() * sizeof(value_type);
    mem_.reset(static_cast<unsigned char*>(
        std::aligned_alloc(align, ((bytes + align - 1) / align + 1) * align)));
    if (!mem_) throw std::bad_alloc();
    view_ = host_view(reinterpret_cast<value_type*>(mem_.get()), v.layout());
    if (copy) Kokkos::deep_copy(view_, v);
  }
  /// The host copy.
  const host_view& view() const noexcept { return view_; }
  /// Element access, as on the copy.
  template <class... I>
  value_type& operator()(I... i) const {
    return view_(i...);
  }
  /// Writes the copy back to the view it was made from.
  void copy_back() const { Kokkos::deep_copy(v_, view_); }

 private:
  struct Free {
    void operator()(unsigned char* p) const noexcept { std::free(p); }
  };
  V v_;
  std::unique_ptr<unsigned char[], Free> mem_;
  host_view view_;
};

/// `HostCopy` of `v`'s contents.
template <class V>
HostCopy<V> host_copy(const V& v) {
  return HostCopy<V>(v);
}

inline std::uintptr_t address(const void* p) {
  return reinterpret_cast<std::uintptr_t>(p);
}

/// Byte range [begin, end) of a view's data.
template <class View>
std::uintptr_t begin_of(const View& v) {
  return address(v.data());
}
template <class View>
std::uintptr_t end_of(const View& v) {
  return address(v.data()) + v.span() * sizeof(typename View::value_type);
}

/// True when the view's bytes lie inside the allocator's buffer.
template <class A, class View>
bool inside_buffer(const A& alloc, const View& v) {
  const std::uintptr_t b = address(alloc.buffer().data());
  return begin_of(v) >= b && end_of(v) <= b + alloc.capacity();
}

}  // namespace kbuf_test

#endif
