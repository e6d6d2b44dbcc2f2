#ifndef KBUF_IMPL_PASSTHROUGH_HPP
#define KBUF_IMPL_PASSTHROUGH_HPP

/// @file
/// Pass-through mode's switch: the environment variable `KBUF_PASSTHROUGH`, read when an
/// allocator is made, over the configured default (CMake option of the same name). Not part of
/// the API.

#include <cstdlib>

#include <kbuf/config.hpp>

#ifndef KBUF_PASSTHROUGH
#define KBUF_PASSTHROUGH 0
#endif

namespace kbuf {
namespace Impl {

/// True when an allocator made now serves every temporary by its own allocation:
/// `KBUF_PASSTHROUGH=1` (any value but "0") turns it on, `KBUF_PASSTHROUGH=0` off; unset or
/// empty, the configured default holds.
inline bool passthrough_requested() noexcept {
  const char* value = std::getenv("KBUF_PASSTHROUGH");
  if (value == nullptr || value[0] == '\0') return KBUF_PASSTHROUGH != 0;
  return !(value[0] == '0' && value[1] == '\0');
}

}  // namespace Impl
}  // namespace kbuf

#endif  // KBUF_IMPL_PASSTHROUGH_HPP
