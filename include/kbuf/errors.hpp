#ifndef KBUF_ERRORS_HPP
#define KBUF_ERRORS_HPP

/// @file
/// The two exception types kbuf throws, and the one place that builds their messages.

#include <cstddef>
#include <new>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

#if defined(__GNUC__) || defined(__clang__)
#define KBUF_IMPL_COLD __attribute__((noinline, cold))
#define KBUF_IMPL_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define KBUF_IMPL_COLD
#define KBUF_IMPL_UNLIKELY(x) (x)
#endif

namespace kbuf {

/// Misuse or an invalid argument: a negative extent, a byte count that overflows `size_t`, a
/// non-power-of-two alignment, a released or foreign checkpoint, `resize` with live temporaries.
/// The call that throws it has changed nothing. The message names the call and the value.
class logic_error : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

/// Memory could not be had (the buffer, a regrowth or a fallback allocation failed). The call
/// that throws it has changed nothing that was live: every earlier temporary is intact. The
/// message names the size and the memory space.
class out_of_memory : public std::bad_alloc {
 public:
  /// An exception whose `what()` is `what`.
  explicit out_of_memory(const std::string& what) : message_(what) {}
  /// The message: the size that could not be had and the memory space.
  [[nodiscard]] const char* what() const noexcept override { return message_.what(); }

 private:
  std::runtime_error message_;  // nothrow-copyable string storage
};

namespace Impl {

template <class... Parts>
std::string concat(const Parts&... parts) {
  std::ostringstream os;
  (void)std::initializer_list<int>{((void)(os << parts), 0)...};
  return os.str();
}

/// Cold path: builds the message only when an error is raised.
template <class... Parts>
[[noreturn]] KBUF_IMPL_COLD void throw_logic_error(const char* file, int line,
                                                                   const Parts&... parts) {
  throw kbuf::logic_error(concat(parts..., " [", file, ":", line, "]"));
}

template <class... Parts>
[[noreturn]] KBUF_IMPL_COLD void throw_out_of_memory(const char* file, int line,
                                                                     const Parts&... parts) {
  throw kbuf::out_of_memory(concat(parts..., " [", file, ":", line, "]"));
}

}  // namespace Impl
}  // namespace kbuf

/// Raises `kbuf::logic_error` unless `cond` holds. The remaining arguments are streamed into the
/// message, which should name the call and the offending value; file and line are appended.
#define KBUF_EXPECTS(cond, ...)                                          \
  do {                                                                   \
    if (KBUF_IMPL_UNLIKELY(!(cond))) {                                   \
      ::kbuf::Impl::throw_logic_error(__FILE__, __LINE__, __VA_ARGS__); \
    }                                                                    \
  } while (false)

/// Raises `kbuf::out_of_memory`; the arguments are streamed into the message.
#define KBUF_FAIL_OOM(...) ::kbuf::Impl::throw_out_of_memory(__FILE__, __LINE__, __VA_ARGS__)

#endif  // KBUF_ERRORS_HPP
