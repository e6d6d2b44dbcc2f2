// The process-wide state of the drop-in (kbuf/impl/process_registry.hpp): one per process, in
// libkbuf, also where adopting shared objects compile kbuf's headers with hidden visibility.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include <kbuf/impl/process_registry.hpp>

namespace kbuf {
namespace Impl {

ThreadStates& thread_states() noexcept {
  thread_local ThreadStates states;
  return states;
}

[[noreturn]] void too_many_spaces(const char* key) noexcept {
  std::fprintf(stderr, "kbuf: more than %zu memory spaces in one process (the next is '%s')\n",
               ThreadStates::max_spaces, key);
  std::abort();
}

ThreadSpaceState& thread_space_state(const char* key, const char* name) noexcept {
  ThreadStates& t = thread_states();
  for (std::size_t i = 0; i < t.count; ++i) {
    if (std::strcmp(t.spaces[i].key, key) == 0) return t.spaces[i];
  }
  if (t.count == ThreadStates::max_spaces) too_many_spaces(key);
  ThreadSpaceState& s = t.spaces[t.count++];
  s.key = key;
  s.name = name;
  s.thread = &t;
  s.current_serial = t.current_of(s);
  s.serve();
  return s;
}

ProcessStates& process_states() noexcept {
  static ProcessStates states;
  return states;
}

ProcessSpaceState& process_space_state(const char* key) noexcept {
  ProcessStates& p = process_states();
  std::lock_guard<std::mutex> lock(p.mutex);
  for (std::size_t i = 0; i < p.count; ++i) {
    if (std::strcmp(p.spaces[i].key, key) == 0) return p.spaces[i];
  }
  if (p.count == ThreadStates::max_spaces) too_many_spaces(key);
  ProcessSpaceState& s = p.spaces[p.count++];
  s.key = key;
  return s;
}

}  // namespace Impl
}  // namespace kbuf
