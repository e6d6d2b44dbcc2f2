#ifndef KBUF_IMPL_KOKKOS_VERSION_HPP
#define KBUF_IMPL_KOKKOS_VERSION_HPP

/// @file
/// Kokkos version numbers (`KOKKOS_VERSION`, `KOKKOSKERNELS_VERSION`: major * 10000 + minor * 100
/// + patch) as the Kokkos project spells its releases, and the names that changed between
/// versions.

#include <string>

#include <Kokkos_Core.hpp>

namespace kbuf {
namespace Impl {

#if defined(KOKKOS_ENABLE_HIP)
/// Kokkos' HIP backend and its memory space (in Kokkos::Experimental before 4.0).
#if KOKKOS_VERSION >= 40000
using hip_execution_space = Kokkos::HIP;
#else
using hip_execution_space = Kokkos::Experimental::HIP;
#endif
using hip_memory_space = hip_execution_space::memory_space;
#endif

/// "4.6.01" for 40601, "5.1.1" for 50101. Up to 4.x Kokkos writes the patch number with two
/// digits; from 5.0 on it follows semantic versioning and writes it plainly. Development
/// versions keep their 99 ("4.6.99", "5.0.99").
inline std::string kokkos_version_string(int version) {
  const int major = version / 10000;
  const int minor = version / 100 % 100;
  const int patch = version % 100;
  std::string s = std::to_string(major) + '.' + std::to_string(minor) + '.';
  if (major < 5 && patch < 10) s += '0';
  return s + std::to_string(patch);
}

}  // namespace Impl
}  // namespace kbuf

#endif  // KBUF_IMPL_KOKKOS_VERSION_HPP
