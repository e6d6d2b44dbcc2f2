#ifndef KBUF_IMPL_VIEW_TRAITS_HPP
#define KBUF_IMPL_VIEW_TRAITS_HPP

/// @file
/// Facts about a `Kokkos::View` type that differ between Kokkos' two View implementations: the
/// legacy View (Kokkos 3.x and 4.x, and 5.0 where it falls back to it) and the View built on
/// mdspan (Kokkos 5, and `develop` builds that report 4.6.99). They are decided from the View
/// type itself, not from `KOKKOS_VERSION`: the version number does not say which one was built.

#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

#include <Kokkos_Core.hpp>

namespace kbuf {
namespace Impl {

/// True when `View` is the mdspan-based View. That View has an mdspan `extents_type`; the legacy
/// View has none (even where Kokkos can convert it to an mdspan).
template <class View, class = void>
struct view_is_mdspan_based : std::false_type {};
template <class View>
struct view_is_mdspan_based<View, std::void_t<typename View::extents_type>> : std::true_type {};

template <class View, bool = view_is_mdspan_based<View>::value>
struct view_extents_are_32bit_impl
    // The legacy View keeps the runtime extents of a View with three or more of them in
    // `unsigned` (ViewDimension), so a wider extent comes back truncated.
    : std::integral_constant<bool, (static_cast<std::size_t>(View::rank_dynamic) >= 3)> {};
template <class View>
struct view_extents_are_32bit_impl<View, true>
    // The mdspan View stores extents as its extents_type's index_type (std::size_t in Kokkos).
    : std::integral_constant<
          bool, static_cast<std::uint64_t>(
                    std::numeric_limits<typename View::extents_type::index_type>::max()) <=
                    std::uint64_t{0xFFFFFFFFu}> {};

/// True when a View of type `View` cannot hold a runtime extent of 2^32 or more.
template <class View>
constexpr bool view_extents_are_32bit = view_extents_are_32bit_impl<View>::value;

/// The bytes from `v.data()` to the end of the last element `v` can reach, computed from its
/// extents and strides alone: `(1 + sum over r of (extent(r) - 1) * stride(r)) * sizeof(value)`,
/// 0 when an extent is 0. The same on every Kokkos version, unlike `View::span()` (the product of
/// the extents with padding on the legacy View, mdspan's `required_span_size()` on the new one:
/// 20 and 16 elements for a column of a 4x5 LayoutRight view). Saturates at SIZE_MAX instead of
/// overflowing (no real view reaches that far).
template <class View>
std::size_t view_bytes_touched(const View& v) noexcept {
  constexpr std::size_t rank = static_cast<std::size_t>(View::rank);
  constexpr std::size_t max = std::numeric_limits<std::size_t>::max();
  std::size_t last = 0;  // offset of the last element, in elements
  for (std::size_t r = 0; r < rank; ++r) {
    const std::size_t extent = static_cast<std::size_t>(v.extent(r));
    if (extent == 0) return 0;
    const std::size_t stride = static_cast<std::size_t>(v.stride(r));
    if (stride != 0 && extent - 1 > (max - last) / stride) return max;
    last += (extent - 1) * stride;
  }
  constexpr std::size_t size = sizeof(typename View::value_type);
  if (last >= max / size) return max;
  return (last + 1) * size;
}

/// An unmanaged View of type `V` over `p` with these runtime extents, already checked. Kokkos 3's
/// pointer-and-extents constructor builds and destroys a std::string label for a rank check
/// (about half of a temporary's cost there), so Kokkos 3 gets the layout's constructor.
template <class V, class... Extents>
KOKKOS_FORCEINLINE_FUNCTION V unmanaged_view(void* p, Extents... extents) {
  using pointer = typename V::pointer_type;
#if KOKKOS_VERSION < 40000
  return V(reinterpret_cast<pointer>(p),
           typename V::array_layout(static_cast<std::size_t>(extents)...));
#else
  return V(reinterpret_cast<pointer>(p), static_cast<std::size_t>(extents)...);
#endif
}

}  // namespace Impl
}  // namespace kbuf

#endif  // KBUF_IMPL_VIEW_TRAITS_HPP
