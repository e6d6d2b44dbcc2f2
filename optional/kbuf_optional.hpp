// kbuf_optional.hpp: kbuf as an optional dependency of a Kokkos library. Copy this file into
// your library's tree as it is. With kbuf it serves the library's per-call buffers from the
// allocator its caller makes current (kbuf::use, kbuf::use_process_allocators); without kbuf it
// makes the plain Views the library made before. The calls are the same either way:
//
//   struct my_owner { static constexpr const char* name = "mylib"; };  // your library's name
//   using buffers = kbuf_optional_v1::library<my_owner>;
//
//   void gather(...) {
//     auto scope = buffers::scope<memory_space>();  // releases this call's buffers at '}'
//     auto send = buffers::temporary<double**, Kokkos::LayoutRight, memory_space>(
//         "send_buffer", n, m);                      // uninitialised, like WithoutInitializing
//     ...
//   }
//
// Which one it is: KBUF_OPTIONAL_USE_KBUF, 0 or 1, if the build defines it; else 1 exactly when
// the kbuf::kbuf CMake target is linked (it defines KBUF_LINKED). The CMake lines:
//
//   find_package(kbuf 0.6 QUIET)  # any 0.x from 0.6 keeps these calls (SameMajorVersion)
//   if(kbuf_FOUND)
//     target_link_libraries(mylib PUBLIC kbuf::kbuf)
//   endif()
//
// A temporary is served by kbuf only inside a scope of the same library (the owner's name):
// a scope its caller opened never holds the library's buffers, so an object the library builds
// and its caller keeps holds plain Views. Docs: kbuf's docs/dropin.md. BSD-3-Clause, as kbuf.
#ifndef KBUF_OPTIONAL_V1_HPP
#define KBUF_OPTIONAL_V1_HPP

#ifndef KBUF_OPTIONAL_USE_KBUF
#ifdef KBUF_LINKED
#define KBUF_OPTIONAL_USE_KBUF 1
#else
#define KBUF_OPTIONAL_USE_KBUF 0
#endif
#endif

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <string>
#include <type_traits>
#include <utility>

#if KBUF_OPTIONAL_USE_KBUF
#include <kbuf/kbuf.hpp>
#endif

namespace kbuf_optional_v1 {

/// The buffers of the library whose owner is `Owner` (a type with `static constexpr const
/// char* name`, the library's name).
template <class Owner>
struct library {
#if KBUF_OPTIONAL_USE_KBUF
  /// kbuf's owner of the library's scopes and temporaries.
  static constexpr kbuf::owner owner{Owner::name};

  /// A scope of the library's current allocator for `Space`: its temporaries are released when
  /// it ends. With no current allocator, one that does nothing.
  template <class Space = Kokkos::DefaultExecutionSpace::memory_space>
  static kbuf::CurrentScope<Space> scope() {
    return kbuf::scope<Space>(owner);
  }

  /// A buffer, uninitialised: a temporary of the innermost scope when it is the library's own
  /// and an allocator is current, else a View allocated under `label`.
  template <class DataType, class Layout = Kokkos::LayoutRight,
            class Space = Kokkos::DefaultExecutionSpace::memory_space, class... Extents>
  static Kokkos::View<DataType, Layout, Space> temporary(const char* label, Extents... extents) {
    return kbuf::temporary<DataType, Layout, Space>(owner, label, extents...);
  }

  /// As above, for a buffer used on the execution space instance `exec` (the one the library's
  /// caller gave it): served by a scope, its memory goes to the next user only after `exec`'s
  /// work submitted before the scope's end (no fence); else a View allocated on `exec`.
  template <class DataType, class Layout = Kokkos::LayoutRight,
            class Space = Kokkos::DefaultExecutionSpace::memory_space, class ExecSpace,
            class... Extents,
            typename std::enable_if<Kokkos::is_execution_space<ExecSpace>::value, int>::type = 0>
  static Kokkos::View<DataType, Layout, Space> temporary(const ExecSpace& exec, const char* label,
                                                         Extents... extents) {
    return kbuf::temporary<DataType, Layout, Space>(exec, owner, label, extents...);
  }

  /// A buffer of the View type `ViewType` (`decltype(member)`, a caller's View type) used on
  /// `exec`: its data type, layout and memory space, returned as its non-const type.
  template <class ViewType, class ExecSpace, class... Extents>
  static typename ViewType::non_const_type temporary_like(const ExecSpace& exec, const char* label,
                                                          Extents... extents) {
    return kbuf::temporary<typename ViewType::non_const_type>(exec, owner, label, extents...);
  }

  /// The newest buffer (rank 1) gives back all but its first `n` elements (kbuf::shrink).
  template <class V>
  static void shrink(V& v, std::size_t n) {
    kbuf::shrink(owner, v, n);
  }
#else
  /// Without kbuf: a scope that does nothing.
  struct scope_type {
    scope_type() = default;
    scope_type(const scope_type&) = delete;
    scope_type& operator=(const scope_type&) = delete;
    ~scope_type() {}  // not trivial: `auto s = scope();` is no unused variable
  };

  /// Without kbuf: a scope that does nothing.
  template <class Space = Kokkos::DefaultExecutionSpace::memory_space>
  static scope_type scope() {
    (void)Owner::name;  // the owner names itself with and without kbuf
    return scope_type();
  }

  /// Without kbuf: a View allocated under `label`, uninitialised.
  template <class DataType, class Layout = Kokkos::LayoutRight,
            class Space = Kokkos::DefaultExecutionSpace::memory_space, class... Extents>
  static Kokkos::View<DataType, Layout, Space> temporary(const char* label, Extents... extents) {
    (void)Owner::name;
    return Kokkos::View<DataType, Layout, Space>(
        Kokkos::view_alloc(std::string(label), Kokkos::WithoutInitializing),
        static_cast<std::size_t>(extents)...);
  }

  /// Without kbuf: a View allocated on `exec` under `label`, uninitialised.
  template <class DataType, class Layout = Kokkos::LayoutRight,
            class Space = Kokkos::DefaultExecutionSpace::memory_space, class ExecSpace,
            class... Extents,
            typename std::enable_if<Kokkos::is_execution_space<ExecSpace>::value, int>::type = 0>
  static Kokkos::View<DataType, Layout, Space> temporary(const ExecSpace& exec, const char* label,
                                                         Extents... extents) {
    (void)Owner::name;
    return Kokkos::View<DataType, Layout, Space>(
        Kokkos::view_alloc(exec, std::string(label), Kokkos::WithoutInitializing),
        static_cast<std::size_t>(extents)...);
  }

  /// Without kbuf: a View of the View type `ViewType` allocated on `exec` under `label`.
  template <class ViewType, class ExecSpace, class... Extents>
  static typename ViewType::non_const_type temporary_like(const ExecSpace& exec, const char* label,
                                                          Extents... extents) {
    (void)Owner::name;
    return typename ViewType::non_const_type(
        Kokkos::view_alloc(exec, std::string(label), Kokkos::WithoutInitializing),
        static_cast<std::size_t>(extents)...);
  }

  /// Without kbuf: `v` becomes a View of its first `n` elements in the same allocation.
  template <class V>
  static void shrink(V& v, std::size_t n) {
    v = V(v, std::make_pair(std::size_t{0}, n));
  }
#endif
};

}  // namespace kbuf_optional_v1

#endif  // KBUF_OPTIONAL_V1_HPP
