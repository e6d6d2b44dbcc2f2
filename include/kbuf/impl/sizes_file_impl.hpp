#ifndef KBUF_IMPL_SIZES_FILE_IMPL_HPP
#define KBUF_IMPL_SIZES_FILE_IMPL_HPP

/// @file
/// The process's saved sizes (kbuf/sizes_file.hpp): the starting sizes loaded, what destroyed
/// allocators learned, the list of live labelled allocators, `KBUF_SIZES` and its
/// `Kokkos::finalize` hook, and reading and writing files. All of it is one object,
/// `sizes_state()`. Not part of the API.

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <Kokkos_Core.hpp>

#include <kbuf/errors.hpp>
#include <kbuf/impl/errors.hpp>
#include <kbuf/impl/macros.hpp>
#include <kbuf/impl/sizes_format.hpp>
#include <kbuf/sizes_file.hpp>

#if defined(__unix__) || defined(__APPLE__)
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

namespace kbuf {
namespace Impl {

/// A live labelled allocator, in the process's list (SizesState::live): `read` adds what it has
/// learned so far to a table.
struct SizesNode {
  SizesNode* prev = nullptr;
  SizesNode* next = nullptr;
  void (*read)(const SizesNode&, SizesTable&) = nullptr;
};

/// Everything the process keeps about saved sizes. One per process: `sizes_state()`.
struct SizesState {
  std::mutex mutex;                     // guards everything below
  SizesTable loaded;                    // the starting sizes (the last load's)
  SizesFileReport last_load;            // what the last load gave
  SizesTable retired;                   // what destroyed allocators learned
  SizesNode live;                       // the list's sentinel (circular)
  bool env_read = false;                // KBUF_SIZES was looked at
  std::string env_path;                 // its value (empty: unset)
  bool hook_pushed = false;             // the Kokkos::finalize hook is waiting
  std::function<void()> saver;          // replaces the hook's save (kbuf::mpi::share_sizes)
  bool said_buffer = false;             // a saved buffer could not be had (said once)
  bool said_workspace = false;          // saved workspace sizes could not be had (said once)
  std::atomic<unsigned> temp_count{0};  // names temporary files
  SizesState() { live.prev = live.next = &live; }
};

/// The process's saved sizes. Made on first use and never destroyed, so that an allocator
/// destroyed late (in another static's destructor) still finds it. Of default visibility
/// (KBUF_IMPL_EXPORT, impl/process_registry.hpp): one per process, also where shared libraries
/// built with -fvisibility=hidden compile kbuf's headers.
KBUF_IMPL_EXPORT inline SizesState& sizes_state() {
  static SizesState* state = new SizesState;
  return *state;
}

/// This program's name as its sizes files record it (the name it was started under, without
/// the folder), or empty where the C library does not say.
inline std::string sizes_program_name() {
#if defined(__GLIBC__) && defined(_GNU_SOURCE)
  return program_invocation_short_name != nullptr ? program_invocation_short_name : "";
#else
  return {};
#endif
}

/// The rank an MPI launcher (Open MPI, MPICH, PMIx, Slurm) gave this process, 0 outside one:
/// only rank 0 prints what `KBUF_SIZES` has to say, so that a run says each thing once.
inline int launcher_rank() noexcept {
  for (const char* name :
       {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "MV2_COMM_WORLD_RANK", "SLURM_PROCID"}) {
    if (const char* v = std::getenv(name)) return std::atoi(v);
  }
  return 0;
}

/// `s` as one line: every run of white space (the newlines of a Kokkos error among them) one
/// space, none at either end.
inline std::string one_line(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  bool space = false;
  for (const char c : s) {
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') {
      space = !out.empty();
    } else {
      if (space) out.push_back(' ');
      space = false;
      out.push_back(c);
    }
  }
  return out;
}

/// Prints one line on stderr (on rank 0 of a launcher).
inline void say_line(const std::string& line) {
  if (launcher_rank() == 0) std::fprintf(stderr, "%s\n", line.c_str());
}

/// The public form of a table.
inline std::vector<SavedSize> saved_sizes_of(const SizesTable& table) {
  std::vector<SavedSize> out;
  out.reserve(table.size());
  for (const auto& kv : table) {
    SavedSize s;
    s.kind = kind_word(std::get<0>(kv.first));
    s.space = std::get<1>(kv.first);
    s.label = std::get<2>(kv.first);
    if (std::get<0>(kv.first) == SizeKind::allocator) {
      s.bytes = kv.second.bytes;
    } else {
      s.bytes = largest_need(kv.second.needs);
      s.arenas = kv.second.needs.arenas;
    }
    out.push_back(std::move(s));
  }
  return out;
}

/// How a file's reading went: its text, or why there is none.
struct FileText {
  SizesFileStatus status = SizesFileStatus::ok;
  std::string text;
  std::string why;  // for missing and unreadable
};

/// Opens `path` for reading if it is a regular file; else null, with `r` saying why. A pipe or
/// a device is refused without waiting: opening a pipe that no one writes would block the
/// program for good, and a device may never end.
inline std::FILE* open_sizes_file(const std::string& path, FileText& r) {
  errno = 0;
#if defined(__unix__) || defined(__APPLE__)
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  struct stat st;
  const bool opened = fd >= 0;
  if (opened && ::fstat(fd, &st) == 0 && !S_ISREG(st.st_mode)) {
    ::close(fd);
    r.status = SizesFileStatus::unreadable;
    r.why = S_ISDIR(st.st_mode)
                ? "cannot read it: it is a folder"
                : "cannot read it: not a regular file (a pipe, a socket or a device)";
    return nullptr;
  }
  // Blocking reads from here on (a regular file ignores the flag; cleared all the same).
  if (opened) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  std::FILE* f = opened ? ::fdopen(fd, "rb") : nullptr;
  if (opened && f == nullptr) ::close(fd);
#else
  std::FILE* f = std::fopen(path.c_str(), "rb");
#endif
  if (f == nullptr) {
    const int e = errno;
    r.status = e == ENOENT ? SizesFileStatus::missing : SizesFileStatus::unreadable;
    r.why = e == ENOENT ? "no such file" : concat("cannot open it: ", std::strerror(e));
  }
  return f;
}

/// Reads at most `sizes_max_file_bytes` + 1 bytes of `path` (a longer file is refused by the
/// parser without being read whole).
inline FileText read_sizes_text(const std::string& path) {
  FileText r;
  std::FILE* f = open_sizes_file(path, r);
  if (f == nullptr) return r;
  char chunk[65536];
  while (r.text.size() <= sizes_max_file_bytes) {
    const std::size_t n = std::fread(chunk, 1, sizeof chunk, f);
    r.text.append(chunk, n);
    if (n < sizeof chunk) break;
  }
  if (std::ferror(f) != 0) {
    const int e = errno;
    r.status = SizesFileStatus::unreadable;
    r.why = concat("cannot read it: ", e != 0 ? std::strerror(e) : "an I/O error");
    r.text.clear();
  }
  std::fclose(f);
  return r;
}

/// Writes `text` to a temporary file beside `path`, then renames it over `path`: a reader sees
/// the old file or the new one, never a part, and writers never share a file. Empty on
/// success, else why not.
inline std::string write_sizes_text(const std::string& path, const std::string& text) {
  long pid = 0;
#if defined(__unix__) || defined(__APPLE__)
  pid = static_cast<long>(::getpid());
#endif
  const std::string temp = concat(path, ".tmp.", pid, ".", sizes_state().temp_count.fetch_add(1));
  errno = 0;
  std::FILE* f = std::fopen(temp.c_str(), "wb");
  if (f == nullptr) {
    return concat("cannot create '", temp, "': ", std::strerror(errno));
  }
  const bool written = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  const int write_error = errno;
  const bool closed = std::fclose(f) == 0;
  if (!written || !closed) {
    const int e = !written ? write_error : errno;
    std::remove(temp.c_str());
    return concat("cannot write '", temp, "': ", e != 0 ? std::strerror(e) : "an I/O error");
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    std::remove(temp.c_str());
    return concat("cannot rename '", temp, "' to it: ", std::strerror(e));
  }
  return {};
}

/// How a message names the file: "KBUF_SIZES=<path>" when the environment named it.
inline std::string sizes_subject(const std::string& path, bool from_env) {
  return from_env ? "kbuf: KBUF_SIZES=" + path : "kbuf: sizes file '" + path + "'";
}

/// A load's report from the file's text (status ok) or from why there is none, with the
/// starting sizes it gives in `table`.
inline SizesFileReport sizes_report_of(const std::string& path, const FileText& file, bool from_env,
                                       SizesTable& table) {
  SizesFileReport r;
  r.path = path;
  table.clear();
  const std::string subject = sizes_subject(path, from_env);
  const char* learning = "allocators and workspaces learn their sizes as usual";
  if (file.status != SizesFileStatus::ok) {
    r.status = file.status;
    r.message = one_line(concat(subject, ": ", file.why, "; ", learning,
                                from_env ? " and save them there at Kokkos::finalize" : ""));
    return r;
  }
  ParsedSizes parsed = parse_sizes(file.text, sizes_program_name());
  switch (parsed.defect) {
    case SizesDefect::none:
      r.status = SizesFileStatus::ok;
      table = std::move(parsed.table);
      r.sizes = saved_sizes_of(table);
      return r;
    case SizesDefect::malformed:
      r.status = SizesFileStatus::malformed;
      break;
    case SizesDefect::truncated:
      r.status = SizesFileStatus::truncated;
      break;
    case SizesDefect::format:
      r.status = SizesFileStatus::format;
      break;
    case SizesDefect::foreign:
      r.status = SizesFileStatus::foreign;
      break;
  }
  r.message = one_line(concat(subject, ": ", parsed.message, "; its sizes are not used, ", learning,
                              from_env ? " and replace it at Kokkos::finalize" : ""));
  return r;
}

/// Makes `file`'s sizes the starting sizes (under the state's lock).
inline SizesFileReport install_loaded(SizesState& st, const std::string& path, const FileText& file,
                                      bool from_env) {
  SizesTable table;
  SizesFileReport r = sizes_report_of(path, file, from_env, table);
  st.loaded = std::move(table);
  st.last_load = r;
  return r;
}

/// What the process learned: the destroyed allocators' entries and the live ones' (under the
/// state's lock).
inline SizesTable learned_locked(SizesState& st) {
  SizesTable t = st.retired;
  for (const SizesNode* n = st.live.next; n != &st.live; n = n->next) n->read(*n, t);
  return t;
}

/// What a save writes: what was learned, and the loaded entries no one used (under the lock).
inline SizesTable to_save_locked(SizesState& st) {
  SizesTable t = learned_locked(st);
  for (const auto& kv : st.loaded) t.emplace(kv.first, kv.second);  // learned entries win
  return t;
}

/// Writes `table` to `path`; the report (status ok or unwritable, message as `from_env` says).
inline SizesFileReport write_sizes_table(const std::string& path, const SizesTable& table,
                                         bool from_env) {
  SizesFileReport r;
  r.path = path;
  const std::string why = write_sizes_text(path, format_sizes(table, sizes_program_name()));
  if (why.empty()) {
    r.status = SizesFileStatus::ok;
    r.sizes = saved_sizes_of(table);
  } else {
    r.status = SizesFileStatus::unwritable;
    r.message = one_line(concat(sizes_subject(path, from_env), ": could not save the sizes (", why,
                                "); the run is not affected"));
  }
  return r;
}

/// The Kokkos::finalize hook of `KBUF_SIZES`: saves what the process learned there (or lets
/// kbuf::mpi::share_sizes combine the ranks' sizes first).
inline void save_sizes_at_finalize() noexcept {
  SizesState& st = sizes_state();
  try {
    std::function<void()> saver;
    std::string path;
    SizesTable table;
    {
      std::lock_guard<std::mutex> lock(st.mutex);
      st.hook_pushed = false;
      saver = st.saver;
      path = st.env_path;
      if (!saver) table = to_save_locked(st);
    }
    if (saver) {
      saver();
    } else if (!path.empty()) {
      const SizesFileReport r = write_sizes_table(path, table, true);
      if (!r.ok()) say_line(r.message);
    }
  } catch (...) {  // a save that fails must not fail Kokkos::finalize
  }
}

/// Pushes the finalize hook once `KBUF_SIZES` names a file and Kokkos runs (under the lock).
inline void push_sizes_hook_locked(SizesState& st) {
  if (!st.hook_pushed && !st.env_path.empty() && Kokkos::is_initialized()) {
    Kokkos::push_finalize_hook(&save_sizes_at_finalize);
    st.hook_pushed = true;
  }
}

/// Reads `KBUF_SIZES` the first time it is called (a file that cannot be used: one line on
/// stderr), and pushes the finalize hook when due (under the lock).
inline void read_environment_locked(SizesState& st) {
  if (!st.env_read) {
    st.env_read = true;
    const char* value = std::getenv("KBUF_SIZES");
    if (value != nullptr && value[0] != '\0') {
      st.env_path = value;
      const SizesFileReport r = install_loaded(st, st.env_path, read_sizes_text(st.env_path), true);
      if (!r.ok()) say_line(r.message);
    }
  }
  push_sizes_hook_locked(st);
}

/// Adds `node` to the live list (under the lock).
inline void link_node_locked(SizesState& st, SizesNode& node) noexcept {
  node.prev = &st.live;
  node.next = st.live.next;
  st.live.next->prev = &node;
  st.live.next = &node;
}

/// Takes `node` out of the live list, keeping what it learned (under the lock).
inline void retire_node_locked(SizesState& st, SizesNode& node) {
  node.prev->next = node.next;
  node.next->prev = node.prev;
  node.prev = node.next = nullptr;
  SizesTable learned;
  node.read(node, learned);
  combine_tables(st.retired, learned);
}

/// The starting entry under `key`, copied out (under the lock); false if there is none.
inline bool find_loaded_locked(const SizesState& st, const SizeKey& key, SizeEntry& out) {
  const auto it = st.loaded.find(key);
  if (it == st.loaded.end()) return false;
  out = it->second;
  return true;
}

/// Says once (per `flag`) that saved sizes could not be had (under the lock).
inline void say_once_locked(SizesState& st, bool& flag, const std::string& what) {
  if (flag) return;
  flag = true;
  say_line(one_line(concat(
      st.env_path.empty() ? std::string("kbuf: saved sizes") : "kbuf: KBUF_SIZES=" + st.env_path,
      ": ", what)));
}

/// `kbuf::logic_error` naming `call` unless `path` names a file.
inline void expect_sizes_path(const char* call, const std::string& path) {
  KBUF_EXPECTS(!path.empty() && path.find('\0') == std::string::npos, call, "(\"", path,
               "\"): ", path.empty() ? "the path is empty" : "the path holds a zero byte",
               "; name a file");
}

}  // namespace Impl

inline SizesFileReport load_sizes(const std::string& path) {
  Impl::expect_sizes_path("kbuf::load_sizes", path);
  Impl::SizesState& st = Impl::sizes_state();
  {
    std::lock_guard<std::mutex> lock(st.mutex);
    Impl::read_environment_locked(st);
  }
  const Impl::FileText file = Impl::read_sizes_text(path);  // outside the lock: file I/O
  std::lock_guard<std::mutex> lock(st.mutex);
  return Impl::install_loaded(st, path, file, false);
}

inline SizesFileReport save_sizes(const std::string& path) {
  Impl::expect_sizes_path("kbuf::save_sizes", path);
  Impl::SizesState& st = Impl::sizes_state();
  Impl::SizesTable table;
  {
    std::lock_guard<std::mutex> lock(st.mutex);
    table = Impl::to_save_locked(st);
  }
  return Impl::write_sizes_table(path, table, false);
}

inline SizesFileReport loaded_sizes() {
  Impl::SizesState& st = Impl::sizes_state();
  std::lock_guard<std::mutex> lock(st.mutex);
  Impl::read_environment_locked(st);
  return st.last_load;
}

inline std::vector<SavedSize> learned_sizes() {
  Impl::SizesState& st = Impl::sizes_state();
  std::lock_guard<std::mutex> lock(st.mutex);
  return Impl::saved_sizes_of(Impl::learned_locked(st));
}

}  // namespace kbuf

#endif  // KBUF_IMPL_SIZES_FILE_IMPL_HPP
