#ifndef KBUF_IMPL_EXTENTS_HPP
#define KBUF_IMPL_EXTENTS_HPP

/// @file
/// The byte count of a temporary, checked: one inlined helper for `allocate`'s hot path, and
/// one cold function that says what was wrong. Not part of the API.

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

#include <Kokkos_Core.hpp>

#include <kbuf/impl/errors.hpp>
#include <kbuf/impl/macros.hpp>
#include <kbuf/impl/view_traits.hpp>

namespace kbuf {
namespace Impl {

/// Product of the compile-time extents of a Kokkos data type (`double*[3][4]` -> 12).
template <class T>
struct static_extent_product : std::integral_constant<std::size_t, 1> {};
template <class T, std::size_t N>
struct static_extent_product<T[N]>
    : std::integral_constant<std::size_t, N * static_extent_product<T>::value> {};

template <class E>
constexpr bool extent_is_negative(E e) noexcept {
  if constexpr (std::is_signed<E>::value) {
    return e < 0;
  } else {
    (void)e;
    return false;
  }
}

/// `*out = a * b`; true on overflow.
inline bool mul_overflow(std::size_t a, std::size_t b, std::size_t* out) noexcept {
#if defined(__GNUC__) || defined(__clang__)
  return __builtin_mul_overflow(a, b, out);
#else
  if (b != 0 && a > std::numeric_limits<std::size_t>::max() / b) return true;
  *out = a * b;
  return false;
#endif
}

template <class Layout>
constexpr bool is_contiguous_layout = std::is_same<Layout, Kokkos::LayoutLeft>::value ||
                                      std::is_same<Layout, Kokkos::LayoutRight>::value;

/// The largest runtime extent a View of type `View` can hold when it keeps its runtime extents
/// in 32 bits (`extents_held_in_32_bits`).
inline constexpr std::uint64_t max_32_bit_extent = 0xFFFFFFFFu;

/// Whether a View of type `View` keeps its runtime extents in 32 bits, so that a wider extent
/// would come back truncated: the legacy View does for three or more runtime extents, the
/// mdspan View does not (`view_extents_are_32bit`, decided from the View type).
template <class View>
inline constexpr bool extents_held_in_32_bits = view_extents_are_32bit<View>;

/// Raises the `kbuf::logic_error` for extents that `checked_byte_count` refused, with a message
/// naming `call`, the allocator's `label` and the offending extent (or the size).
template <class DataType, class View, class... Extents>
[[noreturn]] KBUF_IMPL_COLD void throw_bad_extents(const char* call, const std::string& label,
                                                   Extents... extents) {
  using T = typename View::value_type;
  const std::string head =
      concat(call, "(", joined(", ", extents...), ") on allocator '", label, "': ");
  std::size_t i = 0;
  bool found = false;
  std::string why;
  const auto negative = [&](auto e) {
    if (!found && extent_is_negative(e)) {
      found = true;
      why = concat("extent ", i, " is ", +e, "; extents must not be negative");
    }
    ++i;
  };
  (void)negative;  // unused for an empty pack
  (negative(extents), ...);
  if constexpr (extents_held_in_32_bits<View>) {
    i = 0;
    const auto wide = [&](auto e) {
      if (!found && static_cast<std::uint64_t>(e) > max_32_bit_extent) {
        found = true;
        why = concat("extent ", i, " is ", +e, ", but a View with ", sizeof...(Extents),
                     " runtime extents holds each below 2^32 (Kokkos stores them in 32 bits)");
      }
      ++i;
    };
    (void)wide;
    (wide(extents), ...);
  }
  if (!found) {
    const std::size_t bytes_per_entry = static_extent_product<DataType>::value * sizeof(T);
    why = concat("the size, ", joined(" x ", bytes_per_entry, extents...),
                 " bytes, overflows size_t");
  }
  throw_logic_error(head, why);
}

/// The size in bytes of a temporary of `DataType` (a View of type `View`) with these runtime
/// extents. Calls `refuse(extents...)`, which must not return, for what `allocate` refuses: a
/// negative extent; an extent of 2^32 or more where the View keeps extents in 32 bits
/// (`extents_held_in_32_bits`); a size that overflows `size_t`, unless an extent is zero (the
/// size is 0 then, whatever the others multiply to). Inlined into every `allocate`: a few
/// compares and multiplications; `refuse` is the cold path (`throw_bad_extents` says which).
template <class DataType, class View, class Refuse, class... Extents>
KBUF_IMPL_ALWAYS_INLINE std::size_t checked_byte_count(const Refuse& refuse, Extents... extents) {
  using T = typename View::value_type;
  if (KBUF_IMPL_UNLIKELY((extent_is_negative(extents) || ...))) refuse(extents...);
  if constexpr (extents_held_in_32_bits<View>) {
    if (KBUF_IMPL_UNLIKELY(((static_cast<std::uint64_t>(extents) > max_32_bit_extent) || ...))) {
      refuse(extents...);
    }
  }
  std::size_t nbytes = static_extent_product<DataType>::value * sizeof(T);
  bool overflow = false;
  ((overflow |= mul_overflow(nbytes, static_cast<std::size_t>(extents), &nbytes)), ...);
  // A zero extent makes the true byte count 0 (and nbytes 0) whatever the others overflow to.
  if (KBUF_IMPL_UNLIKELY(overflow) && ((static_cast<std::size_t>(extents) != 0) && ...)) {
    refuse(extents...);
  }
  return nbytes;
}

}  // namespace Impl
}  // namespace kbuf

#endif  // KBUF_IMPL_EXTENTS_HPP
