// Helpers of kbuf's reliability tests: running a body in a child process that is expected to
// die (death tests), reading memory behind AddressSanitizer's back, and watching Kokkos'
// deallocations through Kokkos Tools.
#ifndef KBUF_TEST_RELIABILITY_SUPPORT_HPP
#define KBUF_TEST_RELIABILITY_SUPPORT_HPP

#include <kbuf/kbuf.hpp>

#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <string>
#include <vector>

#include "test_support.hpp"

namespace kbuf_rel {

using HostAlloc = kbuf::BufferAllocator<Kokkos::HostSpace>;

/// How a child process ended and what it wrote to stdout and stderr.
struct ChildResult {
  bool exited = false;  // exited normally (else killed by a signal)
  int exit_code = -1;
  int signal = 0;
  std::string output;

  bool survived() const { return exited && exit_code == 0; }
  bool aborted() const { return !exited && signal == SIGABRT; }
  bool says(const std::string& text) const { return output.find(text) != std::string::npos; }
};

/// Runs `body` in a forked child with stdout and stderr captured. The child exits 0 when the
/// body returns, 70 when it throws; a sanitizer report or an abort ends it otherwise. Only
/// host memory may be touched in the body (a device context does not survive fork).
inline ChildResult run_in_child(const std::function<void()>& body) {
  ChildResult result;
  int fds[2];
  if (::pipe(fds) != 0) {
    result.output = "pipe() failed";
    return result;
  }
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    result.output = "fork() failed";
    ::close(fds[0]);
    ::close(fds[1]);
    return result;
  }
  if (pid == 0) {
    ::dup2(fds[1], STDOUT_FILENO);
    ::dup2(fds[1], STDERR_FILENO);
    ::close(fds[0]);
    ::close(fds[1]);
    int code = 0;
    try {
      body();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "child threw: %s\n", e.what());
      code = 70;
    } catch (...) {
      code = 70;
    }
    std::fflush(nullptr);
    ::_exit(code);  // no atexit handlers, no leak check, no Kokkos finalize in the child
  }
  ::close(fds[1]);
  char chunk[4096];
  for (;;) {
    const ssize_t n = ::read(fds[0], chunk, sizeof chunk);
    if (n <= 0) break;
    result.output.append(chunk, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (WIFEXITED(status)) {
    result.exited = true;
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.signal = WTERMSIG(status);
  }
  return result;
}

/// Reads a byte without AddressSanitizer's check (poisoned memory that is still mapped).
#if defined(__GNUC__) || defined(__clang__)
__attribute__((no_sanitize_address, noinline))
#endif
inline unsigned char
peek(const void* p) {
  return *static_cast<const volatile unsigned char*>(p);
}

/// True when every byte of [p, p + n) equals `byte`, read without AddressSanitizer's check.
#if defined(__GNUC__) || defined(__clang__)
__attribute__((no_sanitize_address, noinline))
#endif
inline bool
all_bytes_are(const void* p, std::size_t n, unsigned char byte) {
  const volatile unsigned char* q = static_cast<const volatile unsigned char*>(p);
  for (std::size_t i = 0; i < n; ++i) {
    if (q[i] != byte) return false;
  }
  return true;
}

/// all_bytes_are for memory of `MemorySpace`: read in place where the host may touch it, else
/// through deep_copy into a host mirror (memory the host may not touch is never poisoned).
template <class MemorySpace>
bool space_bytes_are(const void* p, std::size_t n, unsigned char byte) {
  if constexpr (Kokkos::SpaceAccessibility<Kokkos::DefaultHostExecutionSpace,
                                           MemorySpace>::accessible) {
    return all_bytes_are(p, n, byte);
  } else {
    // Not a View of const: Kokkos 3.4's deep_copy out of a logical space takes a void* source.
    Kokkos::View<unsigned char*, MemorySpace, Kokkos::MemoryUnmanaged> bytes(
        static_cast<unsigned char*>(const_cast<void*>(p)), n);
    const auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), bytes);
    for (std::size_t i = 0; i < n; ++i) {
      if (h(i) != byte) return false;
    }
    return true;
  }
}

/// Calls `on_free(label, ptr, bytes)` for every deallocation Kokkos reports while it lives,
/// before the memory is freed. One watcher at a time.
class DeallocationWatcher {
 public:
  using Callback = std::function<void(const std::string&, const void*, std::uint64_t)>;
  explicit DeallocationWatcher(Callback on_free) {
    callback() = std::move(on_free);
    Kokkos::Tools::Experimental::set_deallocate_data_callback(&on_deallocate);
  }
  DeallocationWatcher(const DeallocationWatcher&) = delete;
  DeallocationWatcher& operator=(const DeallocationWatcher&) = delete;
  ~DeallocationWatcher() {
    Kokkos::Tools::Experimental::set_deallocate_data_callback(nullptr);
    callback() = nullptr;
  }

 private:
  static Callback& callback() {
    static Callback c;
    return c;
  }
  // Kokkos' deallocations only, not kbuf's reports of released temporaries ("kbuf:" spaces).
  static void on_deallocate(const Kokkos::Tools::SpaceHandle space, const char* label,
                            const void* ptr, const std::uint64_t bytes) {
    if (std::string(space.name).rfind("kbuf:", 0) == 0) return;
    if (callback()) callback()(label, ptr, bytes);
  }
};

}  // namespace kbuf_rel

#endif  // KBUF_TEST_RELIABILITY_SUPPORT_HPP
