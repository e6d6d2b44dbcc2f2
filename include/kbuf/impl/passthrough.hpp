#ifndef KBUF_IMPL_PASSTHROUGH_HPP
#define KBUF_IMPL_PASSTHROUGH_HPP

/// @file
/// How kbuf's run-time switches are read from the environment, and pass-through mode's switch:
/// the environment variable `KBUF_PASSTHROUGH`, read when an allocator is made, over the
/// configured default (CMake option of the same name). Not part of the API.

#include <cstdlib>

#include <kbuf/config.hpp>

#ifndef KBUF_PASSTHROUGH
#define KBUF_PASSTHROUGH 0
#endif

namespace kbuf {
namespace Impl {

/// A run-time switch of kbuf's, read when an allocator is made: the environment variable `name`
/// set to anything but "0" is on, "0" is off; unset or empty, `configured` (the CMake option's
/// default) holds.
inline bool switch_requested(const char* name, bool configured) noexcept {
  const char* value = std::getenv(name);
  if (value == nullptr || value[0] == '\0') return configured;
  return !(value[0] == '0' && value[1] == '\0');
}

/// True when an allocator made now serves every temporary by its own allocation:
/// `KBUF_PASSTHROUGH=1` (any value but "0") turns it on, `KBUF_PASSTHROUGH=0` off; unset or
/// empty, the configured default holds.
inline bool passthrough_requested() noexcept {
  return switch_requested("KBUF_PASSTHROUGH", KBUF_PASSTHROUGH != 0);
}

}  // namespace Impl
}  // namespace kbuf

#endif  // KBUF_IMPL_PASSTHROUGH_HPP
