#ifndef KBUF_IMPL_ERRORS_HPP
#define KBUF_IMPL_ERRORS_HPP

/// @file
/// How kbuf raises its errors: the `KBUF_EXPECTS` and `KBUF_FAIL_OOM` macros and the helpers that
/// build their messages. Not part of the API; the exception types are in `kbuf/errors.hpp`.
///
/// A message names the call, the allocator's label where there is one, and the values that
/// matter, in plain English: "kbuf::BufferAllocator::resize(4096) on allocator 'kbuf': 1
/// temporary is live; resize only an empty allocator". It says nothing of kbuf's own source
/// lines, which would point inside kbuf rather than at the caller.

#include <cstddef>
#include <initializer_list>
#include <ostream>
#include <sstream>
#include <string>

#include <kbuf/errors.hpp>
#include <kbuf/impl/macros.hpp>

namespace kbuf {
namespace Impl {

/// The parts streamed into one string.
template <class... Parts>
std::string concat(const Parts&... parts) {
  std::ostringstream os;
  (void)std::initializer_list<int>{((void)(os << parts), 0)...};
  return os.str();
}

/// Cold path: builds the message only when an error is raised.
template <class... Parts>
[[noreturn]] KBUF_IMPL_COLD void throw_logic_error(const Parts&... parts) {
  throw kbuf::logic_error(concat(parts...));
}

template <class... Parts>
[[noreturn]] KBUF_IMPL_COLD void throw_out_of_memory(const Parts&... parts) {
  throw kbuf::out_of_memory(concat(parts...));
}

/// Streams a count with the right noun: `count_of{n, "temporary", "temporaries"}` streams as
/// "1 temporary" or "2 temporaries".
struct count_of {
  std::size_t n;
  const char* singular;
  const char* plural;
  friend std::ostream& operator<<(std::ostream& os, const count_of& c) {
    return os << c.n << ' ' << (c.n == 1 ? c.singular : c.plural);
  }
};

/// The class name of a memory space for messages: "Kokkos::HostSpace", "Kokkos::CudaSpace".
template <class MemorySpace>
std::string space_name() {
  return concat("Kokkos::", MemorySpace::name(), "Space");
}

/// Integers joined by `separator`: joined(", ", 2, -7, 3) is "2, -7, 3".
template <class... Ints>
std::string joined(const char* separator, const Ints&... values) {
  std::ostringstream os;
  const char* before = "";
  (void)std::initializer_list<int>{((void)(os << before << +values, before = separator), 0)...};
  (void)before;  // an empty pack uses neither
  (void)separator;
  return os.str();
}

}  // namespace Impl
}  // namespace kbuf

/// Raises `kbuf::logic_error` unless `cond` holds. The remaining arguments are streamed into the
/// message, which names the call and the offending value.
#define KBUF_EXPECTS(cond, ...)                     \
  do {                                              \
    if (KBUF_IMPL_UNLIKELY(!(cond))) {              \
      ::kbuf::Impl::throw_logic_error(__VA_ARGS__); \
    }                                               \
  } while (false)

/// Raises `kbuf::out_of_memory`; the arguments are streamed into the message, which names the
/// call, the size and the memory space.
#define KBUF_FAIL_OOM(...) ::kbuf::Impl::throw_out_of_memory(__VA_ARGS__)

#endif  // KBUF_IMPL_ERRORS_HPP
