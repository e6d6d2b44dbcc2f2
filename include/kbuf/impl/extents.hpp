#ifndef KBUF_IMPL_EXTENTS_HPP
#define KBUF_IMPL_EXTENTS_HPP

/// @file
/// The byte count of a temporary, checked: a one-test helper for `allocate`'s hot path
/// (`fast_byte_count`), the exact check for what it cannot decide (`checked_byte_count`), and
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

/// bad_extents_reason for extents wider than 64 bits (no compiled path takes them).
template <class DataType, class View, class... Extents>
KBUF_IMPL_COLD std::string bad_extents_reason_generic(Extents... extents) {
  using T = typename View::value_type;
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
  return why;
}

/// An extent as the messages print it: its magnitude and its sign.
struct ExtentValue {
  std::uint64_t magnitude = 0;
  bool negative = false;
};

template <class E>
constexpr ExtentValue extent_value(E e) noexcept {
  if (extent_is_negative(e)) {
    // -(e + 1) + 1: no overflow for the most negative value.
    return ExtentValue{static_cast<std::uint64_t>(-(e + 1)) + 1, true};
  }
  return ExtentValue{static_cast<std::uint64_t>(+e), false};
}

/// What is wrong with `n` extents that `checked_byte_count` refused (libkbuf): the offending
/// extent, or the size that overflows.
KBUF_IMPL_EXPORT std::string bad_extents_text(const ExtentValue* extents, std::size_t n,
                                              bool held_in_32_bits, std::size_t bytes_per_entry);

/// `n` extents joined by `separator` (libkbuf).
KBUF_IMPL_EXPORT std::string joined_extents(const char* separator, const ExtentValue* extents,
                                            std::size_t n);

/// Raises the `kbuf::logic_error` of `call` for `n` refused extents (libkbuf).
[[noreturn]] KBUF_IMPL_EXPORT void throw_bad_extents_text(const char* call,
                                                          const std::string& label,
                                                          const ExtentValue* extents, std::size_t n,
                                                          bool held_in_32_bits,
                                                          std::size_t bytes_per_entry);

template <class... Extents>
constexpr bool extents_fit_64_bits = ((sizeof(Extents) <= sizeof(std::uint64_t)) && ...);

/// What is wrong with extents that `checked_byte_count` refused: the offending extent, or the
/// size that overflows. The text is made in libkbuf; a translation unit only lists the extents.
template <class DataType, class View, class... Extents>
KBUF_IMPL_COLD std::string bad_extents_reason(Extents... extents) {
  if constexpr (extents_fit_64_bits<Extents...>) {
    const ExtentValue values[] = {extent_value(extents)..., ExtentValue{}};
    return bad_extents_text(
        values, sizeof...(Extents), extents_held_in_32_bits<View>,
        static_extent_product<DataType>::value * sizeof(typename View::value_type));
  } else {
    return bad_extents_reason_generic<DataType, View>(extents...);
  }
}

/// The extents joined by `separator`, as the messages print them.
template <class... Extents>
KBUF_IMPL_COLD std::string joined_extent_list(const char* separator, Extents... extents) {
  if constexpr (extents_fit_64_bits<Extents...>) {
    const ExtentValue values[] = {extent_value(extents)..., ExtentValue{}};
    return joined_extents(separator, values, sizeof...(Extents));
  } else {
    return joined(separator, extents...);
  }
}

/// Raises the `kbuf::logic_error` for extents that `checked_byte_count` refused, with a message
/// naming `call`, the allocator's `label` and the offending extent (or the size).
template <class DataType, class View, class... Extents>
[[noreturn]] KBUF_IMPL_COLD void throw_bad_extents(const char* call, const std::string& label,
                                                   Extents... extents) {
  if constexpr (extents_fit_64_bits<Extents...>) {
    const ExtentValue values[] = {extent_value(extents)..., ExtentValue{}};
    throw_bad_extents_text(
        call, label, values, sizeof...(Extents), extents_held_in_32_bits<View>,
        static_extent_product<DataType>::value * sizeof(typename View::value_type));
  } else {
    throw_logic_error(call, "(", joined(", ", extents...), ") on allocator '", label,
                      "': ", bad_extents_reason_generic<DataType, View>(extents...));
  }
}

/// ceil(log2(n)) for n >= 1.
constexpr unsigned ceil_log2(std::size_t n) noexcept {
  unsigned bits = 0;
  while (bits < 64 && (std::size_t{1} << bits) < n) ++bits;
  return bits;
}

/// The bound of `fast_byte_count`'s single test: every runtime extent below 2^bits. Chosen so
/// that the product of `N` such extents and the bytes per entry stays below 2^62 (so that no
/// size computed on the hot path can overflow, nor an address computed from it), and so that a
/// View keeping its extents in 32 bits holds each of them.
template <class DataType, class View, std::size_t N>
constexpr unsigned fast_extent_bits() noexcept {
  using T = typename View::value_type;
  constexpr unsigned entry_bits = ceil_log2(static_extent_product<DataType>::value * sizeof(T));
  constexpr unsigned bits = entry_bits >= 62 ? 0 : static_cast<unsigned>((62 - entry_bits) / N);
  if constexpr (extents_held_in_32_bits<View>) {
    return bits < 32 ? bits : 32;
  } else {
    return bits;
  }
}

/// The hot path's extent check: true, with the byte count in `nbytes`, when every runtime extent
/// is below 2^fast_extent_bits; false otherwise, and `checked_byte_count` must decide. One OR of
/// the extents and one shift: an extent cast to 64 bits unsigned is large when it was negative
/// (an `int` of -1 becomes 2^64 - 1), so one unsigned comparison checks the sign, the width the
/// View can hold and the overflow of the size at once. Extents wider than 64 bits always take
/// the exact check.
template <class DataType, class View, class... Extents>
KBUF_IMPL_ALWAYS_INLINE bool fast_byte_count(std::size_t& nbytes, Extents... extents) noexcept {
  using T = typename View::value_type;
  constexpr std::size_t n = sizeof...(Extents);
  constexpr std::size_t entry = static_extent_product<DataType>::value * sizeof(T);
  if constexpr (ceil_log2(entry) >= 62 || !((sizeof(Extents) <= sizeof(std::uint64_t)) && ...)) {
    return false;
  } else if constexpr (n == 0) {
    nbytes = entry;
    return true;
  } else {
    constexpr unsigned bits = fast_extent_bits<DataType, View, n>();
    if (KBUF_IMPL_UNLIKELY(((static_cast<std::uint64_t>(extents) | ...) >> bits) != 0)) {
      return false;
    }
    std::size_t product = entry;
    ((product *= static_cast<std::size_t>(extents)), ...);
    nbytes = product;
    return true;
  }
}

/// The size in bytes of a temporary of `DataType` (a View of type `View`) with these runtime
/// extents. Calls `refuse(extents...)`, which must not return, for what `allocate` refuses: a
/// negative extent; an extent of 2^32 or more where the View keeps extents in 32 bits
/// (`extents_held_in_32_bits`); a size that overflows `size_t`, unless an extent is zero (the
/// size is 0 then, whatever the others multiply to). Inlined into every `allocate`: a few
/// compares and multiplications; `refuse` is the cold path (`throw_bad_extents` says which).
/// `allocate` calls it only when `fast_byte_count` could not decide.
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
