// Typed allocation from run-time choices, shared by the reference-model test
// (tests/unit/test_model.cpp) and the fuzzer (fuzz/fuzz_allocator.cpp): an element type picked by
// index, a layout, and a rank with its extents, turned into one `allocate<...>` call.
#ifndef KBUF_TEST_TYPED_ALLOCATE_HPP
#define KBUF_TEST_TYPED_ALLOCATE_HPP

#include <Kokkos_Core.hpp>

#include <cstddef>

#include "test_support.hpp"

namespace kbuf_test {

/// Carries an element type or a layout to a generic lambda.
template <class T>
struct type_tag {
  using type = T;
};

/// The element types, by index (the fuzzer's corpus encodes these indices: append only), with
/// their sizes and alignments read from the types themselves.
template <class... T>
struct element_type_list {
  static constexpr int count = static_cast<int>(sizeof...(T));
  static constexpr std::size_t sizes[sizeof...(T)] = {sizeof(T)...};
  static constexpr std::size_t aligns[sizeof...(T)] = {alignof(T)...};
};
using element_types =
    element_type_list<unsigned char, float, double, Pod12, Kokkos::complex<double>, Wide, Page>;
constexpr int element_type_count = element_types::count;
inline constexpr const std::size_t* element_sizes = element_types::sizes;
inline constexpr const std::size_t* element_aligns = element_types::aligns;

/// `f(type_tag<T>{})` for the type of index `index` in `types` (the last one for an index past
/// the end or below zero).
template <class F, class First, class... Rest>
decltype(auto) with_type_at(element_type_list<First, Rest...>, int index, F&& f) {
  if constexpr (sizeof...(Rest) == 0) {
    return f(type_tag<First>{});
  } else {
    if (index == 0) return f(type_tag<First>{});
    return with_type_at(element_type_list<Rest...>{}, index - 1, static_cast<F&&>(f));
  }
}

/// `f(type_tag<T>{})` for the element type of index `type` (0 <= type < element_type_count).
template <class F>
decltype(auto) with_element_type(int type, F&& f) {
  return with_type_at(element_types{}, type, static_cast<F&&>(f));
}

/// `f(type_tag<Kokkos::LayoutLeft>{})` or `f(type_tag<Kokkos::LayoutRight>{})`.
template <class F>
decltype(auto) with_layout(bool left, F&& f) {
  if (left) return f(type_tag<Kokkos::LayoutLeft>{});
  return f(type_tag<Kokkos::LayoutRight>{});
}

/// `f(alloc.allocate<...>(...))` for rank 1 to 4 (`T*` to `T****`, extents `e[0..rank)`), and
/// for any other `rank` a rank-2 temporary with one static extent, `T*[3]` (extent `e[0]`).
template <class T, class Layout, class Alloc, class Extent, class F>
decltype(auto) allocate_rank(Alloc& alloc, int rank, const Extent* e, F&& f) {
  switch (rank) {
    case 1:
      return f(alloc.template allocate<T*, Layout>(e[0]));
    case 2:
      return f(alloc.template allocate<T**, Layout>(e[0], e[1]));
    case 3:
      return f(alloc.template allocate<T***, Layout>(e[0], e[1], e[2]));
    case 4:
      return f(alloc.template allocate<T****, Layout>(e[0], e[1], e[2], e[3]));
    default:
      return f(alloc.template allocate<T* [3], Layout>(e[0]));
  }
}

/// The three choices at once: `f(view)` for the temporary of element type `type`, layout
/// `left`, rank `rank` and extents `e`.
template <class Alloc, class Extent, class F>
decltype(auto) allocate_typed(Alloc& alloc, int type, bool left, int rank, const Extent* e, F&& f) {
  return with_element_type(type, [&](auto t) -> decltype(auto) {
    using T = typename decltype(t)::type;
    return with_layout(left, [&](auto l) -> decltype(auto) {
      using Layout = typename decltype(l)::type;
      return allocate_rank<T, Layout>(alloc, rank, e, f);
    });
  });
}

}  // namespace kbuf_test

#endif  // KBUF_TEST_TYPED_ALLOCATE_HPP
