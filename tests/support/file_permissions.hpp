// Files and folders this process cannot read or write, also when it runs as root (as CI and
// containers do): root's capabilities to override file permissions are dropped from the
// process's effective set first, so that mode bits decide as they do for everyone else.
#ifndef KBUF_TEST_FILE_PERMISSIONS_HPP
#define KBUF_TEST_FILE_PERMISSIONS_HPP

#include <string>

#if defined(__linux__)
#include <linux/capability.h>
#include <sys/syscall.h>
#endif
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace kbuf_test {

/// Lets mode bits bind this process even if it is root: drops CAP_DAC_OVERRIDE,
/// CAP_DAC_READ_SEARCH and CAP_FOWNER from its effective capabilities (for the rest of the
/// process). True when they now bind (or the process held none of them).
inline bool obey_file_permissions() {
#if defined(__linux__)
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2]{};
  if (::syscall(SYS_capget, &header, data) != 0) return ::geteuid() != 0;
  data[0].effective &=
      ~((1u << CAP_DAC_OVERRIDE) | (1u << CAP_DAC_READ_SEARCH) | (1u << CAP_FOWNER));
  return ::syscall(SYS_capset, &header, data) == 0;
#else
  return ::geteuid() != 0;
#endif
}

/// Whether this process can create a file in `folder` (tried, and removed again).
inline bool can_create_in(const std::string& folder) {
  const std::string probe = folder + "/.kbuf-probe";
  const int fd = ::open(probe.c_str(), O_CREAT | O_EXCL | O_WRONLY, 0644);
  if (fd < 0) return false;
  ::close(fd);
  ::unlink(probe.c_str());
  return true;
}

/// Makes `folder` (created if needed) read-only: true when this process can no longer create
/// files in it (obey_file_permissions first).
inline bool make_read_only_folder(const std::string& folder) {
  ::mkdir(folder.c_str(), 0755);
  if (::chmod(folder.c_str(), 0555) != 0) return false;
  return obey_file_permissions() && !can_create_in(folder);
}

}  // namespace kbuf_test

#endif  // KBUF_TEST_FILE_PERMISSIONS_HPP
