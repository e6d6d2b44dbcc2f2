#ifndef KBUF_ERRORS_HPP
#define KBUF_ERRORS_HPP

/// @file
/// The two exception types kbuf throws.

#include <new>
#include <stdexcept>
#include <string>

namespace kbuf {

/// Misuse or an invalid argument: a negative extent, a byte count that overflows `size_t`, a
/// non-power-of-two alignment, a released or foreign checkpoint, `resize` with live temporaries.
/// The call that throws it has changed nothing. The message names the call, the allocator's
/// label and the offending value.
class logic_error : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

/// Memory could not be had (the buffer, a regrowth or a fallback allocation failed). The call
/// that throws it has changed nothing that was live: every earlier temporary is intact. The
/// message names the call, the allocator's label, the size and the memory space.
class out_of_memory : public std::bad_alloc {
 public:
  /// An exception whose `what()` is `what`.
  explicit out_of_memory(const std::string& what) : message_(what) {}
  /// The message: the size that could not be had and the memory space.
  [[nodiscard]] const char* what() const noexcept override { return message_.what(); }

 private:
  std::runtime_error message_;  // nothrow-copyable string storage
};

}  // namespace kbuf

#endif  // KBUF_ERRORS_HPP
