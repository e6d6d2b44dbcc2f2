#ifndef KBUF_SIZES_HPP
#define KBUF_SIZES_HPP

/// @file
/// Buffer size rounding, the OS page size, alignment arithmetic and byte literals.

#include <cstddef>
#include <cstdint>
#include <limits>

#include <kbuf/errors.hpp>
#include <kbuf/impl/errors.hpp>

#if defined(__unix__) || defined(__APPLE__)
#include <unistd.h>
#endif

namespace kbuf {

/// The operating system's page size in bytes (4096 if it cannot be asked). Thread-safe.
inline std::size_t page_size() noexcept {
  static const std::size_t size = [] {
#if defined(_SC_PAGESIZE)
    const long p = ::sysconf(_SC_PAGESIZE);
    if (p > 0) return static_cast<std::size_t>(p);
#endif
    return std::size_t{4096};
  }();
  return size;
}

/// True when `n` is a power of two (0 is not).
constexpr bool is_power_of_two(std::size_t n) noexcept {
  return n != 0 && (n & (n - 1)) == 0;
}

/// The capacity a buffer for `nbytes` gets: 0 for 0; the next power of two up to one page;
/// above a page, `nbytes` rounded up to a whole number of pages.
/// @throws kbuf::logic_error if the rounded size does not fit in `size_t`.
inline std::size_t buffer_size(std::size_t nbytes) {
  if (nbytes == 0) return 0;
  const std::size_t page = page_size();
  if (nbytes <= page) {
    std::size_t p = 1;
    while (p < nbytes) p <<= 1;
    return p;
  }
  KBUF_EXPECTS(nbytes <= std::numeric_limits<std::size_t>::max() - (page - 1), "kbuf::buffer_size(",
               nbytes, "): rounding up to a whole number of pages of ", page,
               " bytes overflows size_t");
  return (nbytes + page - 1) / page * page;
}

namespace Impl {

/// Rounds `n` up to a multiple of the power of two `a`; the caller guarantees no overflow.
constexpr std::size_t align_up(std::size_t n, std::size_t a) noexcept {
  return (n + (a - 1)) & ~(a - 1);
}

}  // namespace Impl

/// Byte literals: `using namespace kbuf::literals; alloc.resize(5_MiB);`
namespace literals {
/// `n` kibibytes (`n * 1024`) in bytes.
constexpr std::size_t operator""_KiB(unsigned long long n) noexcept {
  return static_cast<std::size_t>(n) << 10;
}
/// `n` mebibytes (`n * 1024 * 1024`) in bytes.
constexpr std::size_t operator""_MiB(unsigned long long n) noexcept {
  return static_cast<std::size_t>(n) << 20;
}
/// `n` gibibytes (`n * 1024 * 1024 * 1024`) in bytes.
constexpr std::size_t operator""_GiB(unsigned long long n) noexcept {
  return static_cast<std::size_t>(n) << 30;
}
}  // namespace literals

}  // namespace kbuf

#endif  // KBUF_SIZES_HPP
