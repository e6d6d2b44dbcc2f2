#ifndef KBUF_IMPL_SIZES_FILE_IMPL_HPP
#define KBUF_IMPL_SIZES_FILE_IMPL_HPP

/// @file
/// The saved sizes behind kbuf/sizes_file.hpp, in one place: the table of entries and how two
/// entries under one label combine; the file's text (format 2, docs/api.md), written and read
/// with the standard library's streams (`std::quoted` names, `std::from_chars` numbers); the
/// process's state (`sizes_state()`: the starting sizes, what destroyed allocators learned, the
/// live labelled allocators, `KBUF_SIZES` and its `Kokkos::finalize` hook); and where a
/// `BufferAllocator` meets them (`SizesLink`, `SizesHooks`). Not part of the API.

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iomanip>
#include <limits>
#include <locale>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <Kokkos_Core.hpp>

#include <kbuf/errors.hpp>
#include <kbuf/impl/budget.hpp>
#include <kbuf/impl/errors.hpp>
#include <kbuf/impl/macros.hpp>
#include <kbuf/impl/workspace_sizing.hpp>
#include <kbuf/sizes.hpp>
#include <kbuf/sizes_file.hpp>

#if defined(__unix__) || defined(__APPLE__)
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

namespace kbuf {

template <class MemorySpace>
class BufferAllocator;

namespace Impl {

// ---- The table --------------------------------------------------------------------------------

/// The format this kbuf writes and reads.
inline constexpr int sizes_format_version = 2;
/// What a file holds at most; beyond, it is not one kbuf wrote. Numbers (bytes, counts) are at
/// most 2^48, 256 TiB, more than any machine's memory: sizes computed from them cannot overflow.
inline constexpr std::size_t sizes_max_file_bytes = std::size_t{16} << 20;
inline constexpr std::size_t sizes_max_entries = 65536;
inline constexpr std::size_t sizes_max_label_bytes = 4096;
inline constexpr std::size_t sizes_max_levels = 256;
inline constexpr unsigned long long sizes_max_number = 1ull << 48;

/// The kind of an entry.
enum class SizeKind { allocator, workspace };
/// An entry's key: its kind, the memory space's name (`MemorySpace::name()`), and the label.
using SizeKey = std::tuple<SizeKind, std::string, std::string>;
/// One label's sizes: an allocator's high-water mark (`bytes`), or a workspace's needs.
struct SizeEntry {
  std::size_t bytes = 0;
  WorkspaceNeeds needs;
};
/// Saved sizes, sorted by key.
using SizesTable = std::map<SizeKey, SizeEntry>;

inline const char* kind_word(SizeKind k) noexcept {
  return k == SizeKind::allocator ? "allocator" : "workspace";
}

/// `a + b`, at most `sizes_max_number` (counts summed over many allocators or ranks).
inline std::size_t saturating_add(std::size_t a, std::size_t b) noexcept {
  const std::size_t m = static_cast<std::size_t>(sizes_max_number);
  return a >= m || b >= m - a ? m : a + b;
}

/// Joins two levels lists (each increasing in bytes) into one: equal sizes add their arenas.
/// Beyond `sizes_max_levels` levels, the two neighbours closest in size merge into the larger
/// (a need is never recorded smaller than it was), until the list fits.
inline std::vector<NeedLevel> merge_levels(const std::vector<NeedLevel>& a,
                                           const std::vector<NeedLevel>& b) {
  std::vector<NeedLevel> out;
  std::size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    if (j == b.size() || (i < a.size() && a[i].bytes < b[j].bytes)) {
      out.push_back(a[i++]);
    } else if (i == a.size() || b[j].bytes < a[i].bytes) {
      out.push_back(b[j++]);
    } else {
      out.push_back(NeedLevel{a[i].bytes, saturating_add(a[i++].arenas, b[j++].arenas)});
    }
  }
  while (out.size() > sizes_max_levels) {
    std::size_t best = 0;  // the pair (best, best + 1) with the smallest ratio of sizes
    long double best_ratio = 0;
    for (std::size_t k = 0; k + 1 < out.size(); ++k) {
      const long double r = static_cast<long double>(out[k + 1].bytes) /
                            static_cast<long double>(out[k].bytes == 0 ? 1 : out[k].bytes);
      if (k == 0 || r < best_ratio) best = k, best_ratio = r;
    }
    out[best + 1].arenas = saturating_add(out[best + 1].arenas, out[best].arenas);
    out.erase(out.begin() + static_cast<std::ptrdiff_t>(best));
  }
  return out;
}

/// Combines what two allocators (or ranks) saved under one key into `into`: an allocator's
/// high-water mark is the larger one; a workspace's needs are the histogram of both rounds'
/// arenas together (its largest need is the larger one). What was measured at a round's own
/// slot size is kept where both rounds had the same slot size; otherwise the sizing goes by the
/// levels alone (the largest need above a slot sizes its lanes, which is never less).
inline void combine_entry(SizeKind kind, SizeEntry& into, const SizeEntry& from) {
  if (kind == SizeKind::allocator) {
    into.bytes = std::max(into.bytes, from.bytes);
    return;
  }
  WorkspaceNeeds& a = into.needs;
  const WorkspaceNeeds& b = from.needs;
  a.levels = merge_levels(a.levels, b.levels);
  a.arenas = saturating_add(a.arenas, b.arenas);
  if (a.measured_slot == b.measured_slot) {
    a.measured_above = saturating_add(a.measured_above, b.measured_above);
    a.measured_lane = std::max(a.measured_lane, b.measured_lane);
  } else {
    a.measured_slot = a.measured_above = a.measured_lane = 0;
  }
}

/// Adds every entry of `from` to `into`, combining entries under the same key.
inline void combine_tables(SizesTable& into, const SizesTable& from) {
  for (const auto& kv : from) {
    const auto made = into.emplace(kv.first, kv.second);
    if (!made.second) combine_entry(std::get<0>(kv.first), made.first->second, kv.second);
  }
}

// ---- The text ---------------------------------------------------------------------------------

/// The text of a sizes file holding `table`, written by `program` (docs/api.md, format 2).
inline std::string format_sizes(const SizesTable& table, const std::string& program) {
  std::ostringstream out;
  out.imbue(std::locale::classic());  // digits only, whatever the program's global locale
  out << "# kbuf sizes: what labelled allocators and workspaces learned (docs/api.md)\n"
      << "kbuf-sizes " << sizes_format_version << ' ' << std::quoted(program) << '\n';
  for (const auto& kv : table) {
    const WorkspaceNeeds& n = kv.second.needs;
    out << kind_word(std::get<0>(kv.first)) << ' ' << std::quoted(std::get<1>(kv.first)) << ' '
        << std::quoted(std::get<2>(kv.first));
    if (std::get<0>(kv.first) == SizeKind::allocator) {
      out << ' ' << kv.second.bytes;
    } else {
      out << ' ' << n.arenas << ' ' << n.measured_slot << ' ' << n.measured_above << ' '
          << n.measured_lane << ' ' << n.levels.size();
      for (const NeedLevel& l : n.levels) out << "  " << l.bytes << ' ' << l.arenas;
    }
    out << '\n';
  }
  out << "end " << table.size() << '\n';
  return out.str();
}

/// A parse's outcome: the table (status ok), or the status and one line saying what is wrong.
struct ParsedSizes {
  SizesFileStatus status = SizesFileStatus::ok;
  std::string message;
  SizesTable table;
};

/// Reads a sizes file's text, all of it or nothing: anything kbuf would not have written is
/// refused with the line where reading stopped (Impl::parse_sizes).
class SizesReader {
 public:
  /// `self`: this program's name; a file written by another (both names known) is foreign.
  SizesReader(const std::string& text, const std::string& self) : text_(text), self_(self) {
    in_.imbue(std::locale::classic());
  }

  ParsedSizes run() {
    if (text_.size() > sizes_max_file_bytes) {
      return fail(SizesFileStatus::malformed,
                  concat("it holds more than ", sizes_max_file_bytes,
                         " bytes, more than any sizes file kbuf writes"));
    }
    in_.str(text_);
    while (in_ >> std::ws && in_.peek() == '#') {  // comment lines first
      in_.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
    }
    std::string w, program;
    std::size_t version = 0, count = 0;
    if (!(in_ >> w) || w != "kbuf-sizes") {
      return fail(SizesFileStatus::malformed,
                  text_.empty() ? std::string("empty: no 'kbuf-sizes' line")
                                : concat("not a kbuf sizes file: it begins with '", excerpt(w),
                                         "', not 'kbuf-sizes ", sizes_format_version, "'"));
    }
    if (!number(version, "the format version")) return out_;
    if (version != static_cast<std::size_t>(sizes_format_version)) {
      return fail(
          SizesFileStatus::format,
          concat("sizes file format ", version, ", written by ",
                 version < static_cast<std::size_t>(sizes_format_version) ? "an older" : "a newer",
                 " kbuf; this one reads format ", sizes_format_version));
    }
    if (!name(program, "the program's name")) return out_;
    if (!self_.empty() && !program.empty() && program != self_) {
      return fail(SizesFileStatus::foreign,
                  concat("written by '", excerpt(program), "', not by this program ('", self_,
                         "'): its labels are another program's"));
    }
    while (in_ >> w && w != "end") {
      if (!entry(w)) return out_;
    }
    if (w != "end") return fail(SizesFileStatus::truncated, "no end line: the file was cut short");
    if (!number(count, "the count of entries")) return out_;
    if (count != out_.table.size()) {
      return fail(
          SizesFileStatus::truncated,
          concat("the end line counts ", count, " entries, the file holds ", out_.table.size()));
    }
    if (in_ >> w)
      return fail(SizesFileStatus::malformed, "text after the end line: '" + excerpt(w) + "'");
    return out_;
  }

 private:
  // The start of a word for a message, every byte that is not printable ASCII as \xNN.
  static std::string excerpt(const std::string& s) {
    std::string out;
    for (std::size_t i = 0; i < s.size() && i < 40; ++i) {
      const unsigned char c = static_cast<unsigned char>(s[i]);
      out += c >= 0x20 && c < 0x7f
                 ? std::string(1, s[i])
                 : concat("\\x", "0123456789abcdef"[c >> 4], "0123456789abcdef"[c & 15]);
    }
    return s.size() <= 40 ? out : out + "...";
  }

  // The outcome `s`, saying `why` at the line where reading stopped; no table.
  ParsedSizes fail(SizesFileStatus s, const std::string& why) {
    in_.clear();
    const auto at = in_.tellg();
    const std::size_t pos = at < 0 ? 0 : std::min(static_cast<std::size_t>(at), text_.size());
    const auto line =
        std::count(text_.begin(), text_.begin() + static_cast<std::ptrdiff_t>(pos), '\n') + 1;
    out_ = ParsedSizes{s, concat("line ", line, ": ", why), {}};
    return out_;
  }

  // A file that ends where `what` should come was cut short; anything else there is malformed.
  bool missing(const char* what) {
    fail(in_.eof() ? SizesFileStatus::truncated : SizesFileStatus::malformed,
         in_.eof() ? concat("it ends before ", what, " (the file was cut short)")
                   : concat(what, " is missing"));
    return false;
  }

  // Decimal digits only, at most sizes_max_number.
  bool number(std::size_t& v, const char* what) {
    std::string w;
    if (!(in_ >> w)) return missing(what);
    unsigned long long x = 0;
    const auto r = std::from_chars(w.data(), w.data() + w.size(), x);
    if (r.ec != std::errc() || r.ptr != w.data() + w.size() || x > sizes_max_number) {
      fail(SizesFileStatus::malformed,
           concat(what, " '", excerpt(w), "' is not a number from 0 to 2^48 (", sizes_max_number,
                  ")"));
      return false;
    }
    v = static_cast<std::size_t>(x);
    return true;
  }

  // A name in double quotes (`std::quoted`: `\"` and `\\` inside), at most sizes_max_label_bytes.
  bool name(std::string& s, const char* what) {
    if (!(in_ >> std::ws) || in_.peek() != '"') {
      if (in_.eof()) return missing(what);
      std::string w;
      in_ >> w;
      fail(SizesFileStatus::malformed, concat(what, " '", excerpt(w), "' is not in quotes"));
      return false;
    }
    in_ >> std::quoted(s);
    if (in_.eof()) return missing(concat(what, "'s closing quote").c_str());
    if (s.size() <= sizes_max_label_bytes) return true;
    fail(SizesFileStatus::malformed,
         concat(what, " '", excerpt(s), "' is longer than ", sizes_max_label_bytes, " bytes"));
    return false;
  }

  // One entry, after its first word `w`; false once the parse failed (out_ holds why).
  bool entry(const std::string& w) {
    if (w != "allocator" && w != "workspace") {
      fail(SizesFileStatus::malformed,
           "'" + excerpt(w) + "' is not an entry ('allocator', 'workspace' or 'end')");
      return false;
    }
    const SizeKind kind = w == "allocator" ? SizeKind::allocator : SizeKind::workspace;
    std::string space, label;
    SizeEntry e;
    WorkspaceNeeds& n = e.needs;
    std::size_t levels = 0, sum = 0;
    if (out_.table.size() == sizes_max_entries) {
      fail(SizesFileStatus::malformed,
           concat("more than ", sizes_max_entries, " entries, more than kbuf writes"));
      return false;
    }
    if (!name(space, "the memory space") || !name(label, "the label")) return false;
    if (kind == SizeKind::allocator) {
      if (!number(e.bytes, "the size")) return false;
    } else if (!number(n.arenas, "the arenas") || !number(n.measured_slot, "the slot") ||
               !number(n.measured_above, "the arenas above it") ||
               !number(n.measured_lane, "the lane") || !number(levels, "the count of levels")) {
      return false;
    }
    if (kind == SizeKind::workspace && (levels == 0 || levels > sizes_max_levels)) {
      fail(SizesFileStatus::malformed,
           concat("a workspace of ", levels, " levels (1 to ", sizes_max_levels, ")"));
      return false;
    }
    for (std::size_t i = 0; i < levels; ++i) {
      NeedLevel l;
      if (!number(l.bytes, "a level's bytes") || !number(l.arenas, "a level's arenas")) {
        return false;
      }
      if (l.arenas == 0 || (!n.levels.empty() && l.bytes <= n.levels.back().bytes)) {
        fail(SizesFileStatus::malformed,
             l.arenas == 0 ? "a level of no arenas" : "the levels are not in increasing order");
        return false;
      }
      n.levels.push_back(l);
      sum = saturating_add(sum, l.arenas);
    }
    // A round's arenas are at least those its levels count, and those above its slot at most
    // all of them: the sizing divides by them.
    n.arenas = std::max(n.arenas, sum);
    n.measured_above = n.measured_slot == 0 ? 0 : std::min(n.measured_above, n.arenas);
    if (n.measured_slot == 0) n.measured_lane = 0;
    if (out_.table.emplace(SizeKey{kind, space, label}, e).second) return true;
    fail(SizesFileStatus::malformed,
         concat("a second '", w, "' entry for '", excerpt(label), "' in ", excerpt(space)));
    return false;
  }

  const std::string& text_;
  std::string self_;
  std::istringstream in_;
  ParsedSizes out_;
};

/// Parses the text of a sizes file written, if `program` is not empty, by `program`.
inline ParsedSizes parse_sizes(const std::string& text, const std::string& program) {
  return SizesReader(text, program).run();
}

// ---- The process's state, files and messages ------------------------------------------------

/// A live labelled allocator, in the process's list: `read` adds what it learned to a table.
struct SizesNode {
  void (*read)(const SizesNode&, SizesTable&) = nullptr;
};

/// Everything the process keeps about saved sizes. One per process: `sizes_state()`.
struct SizesState {
  std::mutex mutex;                     // guards everything below
  SizesTable loaded;                    // the starting sizes (the last load's)
  SizesFileReport last_load;            // what the last load gave
  SizesTable retired;                   // what destroyed allocators learned
  std::vector<SizesNode*> live;         // the live labelled allocators
  bool env_read = false;                // KBUF_SIZES was looked at
  std::string env_path;                 // its value (empty: unset)
  bool hook_pushed = false;             // the Kokkos::finalize hook is waiting
  std::function<void()> saver;          // replaces the hook's save (kbuf::mpi::share_sizes)
  bool said_buffer = false;             // a saved buffer could not be had (said once)
  bool said_workspace = false;          // saved workspace sizes could not be had (said once)
  std::atomic<unsigned> temp_count{0};  // names temporary files
};

/// The process's saved sizes. Made on first use and never destroyed, so that an allocator
/// destroyed late (in another static's destructor) still finds it. Of default visibility
/// (KBUF_IMPL_EXPORT, impl/process_registry.hpp): one per process, also where shared libraries
/// built with -fvisibility=hidden compile kbuf's headers.
KBUF_IMPL_EXPORT SizesState& sizes_state();

/// This program's name as its sizes files record it (the name it was started under, without
/// the folder), or empty where the C library does not say.
inline std::string sizes_program_name() {
#if defined(__GLIBC__) && defined(_GNU_SOURCE)
  return program_invocation_short_name != nullptr ? program_invocation_short_name : "";
#else
  return {};
#endif
}

/// `s` as one line: every run of white space (the newlines of a Kokkos error among them) one
/// space, none at either end.
inline std::string one_line(const std::string& s) {
  std::string out;
  bool space = false;
  for (const char c : s) {
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') {
      space = !out.empty();
      continue;
    }
    if (space) out.push_back(' ');
    space = false;
    out.push_back(c);
  }
  return out;
}

/// Prints one line on stderr, on rank 0 of an MPI launcher (Open MPI, MPICH, PMIx, Slurm) or
/// outside one, so that a run says each thing once.
inline void say_line(const std::string& line) {
  for (const char* name :
       {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "MV2_COMM_WORLD_RANK", "SLURM_PROCID"}) {
    if (const char* v = std::getenv(name)) {
      if (std::atoi(v) != 0) return;
      break;
    }
  }
  std::fprintf(stderr, "%s\n", line.c_str());
}

/// The public form of a table.
inline std::vector<SavedSize> saved_sizes_of(const SizesTable& table) {
  std::vector<SavedSize> out;
  for (const auto& kv : table) {
    const WorkspaceNeeds& n = kv.second.needs;
    const bool workspace = std::get<0>(kv.first) == SizeKind::workspace;
    out.push_back(SavedSize{kind_word(std::get<0>(kv.first)), std::get<1>(kv.first),
                            std::get<2>(kv.first),
                            !workspace         ? kv.second.bytes
                            : n.levels.empty() ? 0
                                               : n.levels.back().bytes,
                            workspace ? n.arenas : 0});
  }
  return out;
}

/// How a file's reading went: its text (status ok), or why there is none.
struct FileText {
  SizesFileStatus status = SizesFileStatus::ok;
  std::string text;
  std::string why;
};

/// Reads at most `sizes_max_file_bytes` + 1 bytes of `path` (a longer file is refused by the
/// parser unread). Only a regular file is read: a pipe or a device is refused without waiting
/// (opening a pipe that no one writes would block the program for good).
inline FileText read_sizes_text(const std::string& path) {
  FileText r;
  errno = 0;
#if defined(__unix__) || defined(__APPLE__)
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  struct stat st;
  if (fd >= 0 && ::fstat(fd, &st) == 0 && !S_ISREG(st.st_mode)) {
    ::close(fd);
    return FileText{SizesFileStatus::unreadable,
                    {},
                    S_ISDIR(st.st_mode)
                        ? "cannot read it: it is a folder"
                        : "cannot read it: not a regular file (a pipe, a socket or a device)"};
  }
  if (fd >= 0) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);  // blocking reads
  std::FILE* f = fd >= 0 ? ::fdopen(fd, "rb") : nullptr;
  if (fd >= 0 && f == nullptr) ::close(fd);
#else
  std::FILE* f = std::fopen(path.c_str(), "rb");
#endif
  if (f == nullptr) {
    const int e = errno;
    return FileText{e == ENOENT ? SizesFileStatus::missing : SizesFileStatus::unreadable,
                    {},
                    e == ENOENT ? "no such file" : concat("cannot open it: ", std::strerror(e))};
  }
  char chunk[65536];
  for (std::size_t n = sizeof chunk; n == sizeof chunk && r.text.size() <= sizes_max_file_bytes;) {
    n = std::fread(chunk, 1, sizeof chunk, f);
    r.text.append(chunk, n);
  }
  if (std::ferror(f) != 0) {
    const int e = errno;
    r = FileText{SizesFileStatus::unreadable,
                 {},
                 concat("cannot read it: ", e != 0 ? std::strerror(e) : "an I/O error")};
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
  if (f == nullptr) return concat("cannot create '", temp, "': ", std::strerror(errno));
  const bool written = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  const int write_error = errno;
  const bool closed = std::fclose(f) == 0;
  const int close_error = errno;
  const auto error = [](int e) { return e != 0 ? std::strerror(e) : "an I/O error"; };
  std::string why;
  if (!written || !closed) {
    why = concat("cannot write '", temp, "': ", error(!written ? write_error : close_error));
  } else if (std::rename(temp.c_str(), path.c_str()) != 0) {
    const int rename_error = errno;
    why = concat("cannot rename '", temp, "' to it: ", error(rename_error));
  }
  if (!why.empty()) std::remove(temp.c_str());
  return why;
}

/// How a message names the file: "KBUF_SIZES=<path>" when the environment named it.
inline std::string sizes_subject(const std::string& path, bool from_env) {
  return from_env ? "kbuf: KBUF_SIZES=" + path : "kbuf: sizes file '" + path + "'";
}

/// Makes `file`'s sizes the starting sizes (none if it cannot be used); its report (under the
/// state's lock).
inline SizesFileReport install_loaded(SizesState& st, const std::string& path, const FileText& file,
                                      bool from_env) {
  ParsedSizes p{file.status, file.why, {}};
  if (file.status == SizesFileStatus::ok) p = parse_sizes(file.text, sizes_program_name());
  SizesFileReport r{path, p.status, {}, saved_sizes_of(p.table)};
  if (p.status != SizesFileStatus::ok) {
    const bool read = file.status == SizesFileStatus::ok;
    r.message = one_line(concat(sizes_subject(path, from_env), ": ", p.message,
                                read ? "; its sizes are not used, " : "; ",
                                "allocators and workspaces learn their sizes as usual",
                                !from_env ? ""
                                : read    ? " and replace it at Kokkos::finalize"
                                          : " and save them there at Kokkos::finalize"));
  }
  st.loaded = std::move(p.table);
  st.last_load = r;
  return r;
}

/// What the process learned: the destroyed allocators' entries and the live ones' (under the
/// state's lock).
inline SizesTable learned_locked(SizesState& st) {
  SizesTable t = st.retired;
  for (const SizesNode* n : st.live) n->read(*n, t);
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
  const std::string why = write_sizes_text(path, format_sizes(table, sizes_program_name()));
  if (why.empty()) return SizesFileReport{path, SizesFileStatus::ok, {}, saved_sizes_of(table)};
  return SizesFileReport{
      path,
      SizesFileStatus::unwritable,
      one_line(concat(sizes_subject(path, from_env), ": could not save the sizes (", why,
                      "); the run is not affected")),
      {}};
}

/// The Kokkos::finalize hook of `KBUF_SIZES`: saves what the process learned there (or lets
/// kbuf::mpi::share_sizes combine the ranks' sizes first). Never fails Kokkos::finalize.
inline void save_sizes_at_finalize() noexcept {
  SizesState& st = sizes_state();
  try {
    std::unique_lock<std::mutex> lock(st.mutex);
    st.hook_pushed = false;
    const std::function<void()> saver = st.saver;
    const std::string path = st.env_path;
    const SizesTable table = saver ? SizesTable{} : to_save_locked(st);
    lock.unlock();
    if (saver) {
      saver();
    } else if (!path.empty()) {
      const SizesFileReport r = write_sizes_table(path, table, true);
      if (!r.ok()) say_line(r.message);
    }
  } catch (...) {
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

/// `kbuf::logic_error` naming `call` unless `path` names a file.
inline void expect_sizes_path(const char* call, const std::string& path) {
  KBUF_EXPECTS(!path.empty() && path.find('\0') == std::string::npos, call, "(\"", path,
               "\"): ", path.empty() ? "the path is empty" : "the path holds a zero byte",
               "; name a file");
}

// ---- Where a BufferAllocator meets the saved sizes --------------------------------------------

template <class MemorySpace>
struct SizesHooks;

/// A `BufferAllocator`'s member: its place in the list of live labelled allocators, and what it
/// took from the saved sizes. Joins the list when the allocator is made (if it is labelled, or
/// later, at its first labelled workspace) and leaves it when the allocator is destroyed,
/// keeping what the allocator learned. Never throws: saved sizes must not stop a program.
template <class MemorySpace>
class SizesLink : public SizesNode {
 public:
  explicit SizesLink(BufferAllocator<MemorySpace>& owner) noexcept : owner_(&owner) {
    try {
      if (SizesHooks<MemorySpace>::saved_label(owner).empty()) return;
      std::lock_guard<std::mutex> lock(sizes_state().mutex);
      SizesHooks<MemorySpace>::join_locked(*this);
    } catch (...) {  // no saved sizes then
    }
  }
  ~SizesLink() {
    if (!linked_) return;
    SizesState& st = sizes_state();
    std::lock_guard<std::mutex> lock(st.mutex);
    const auto me = std::find(st.live.begin(), st.live.end(), this);
    if (me != st.live.end()) st.live.erase(me);
    try {
      SizesTable learned;
      read(*this, learned);
      combine_tables(st.retired, learned);
    } catch (...) {  // what it learned is lost; the list is whole (left first)
    }
  }
  SizesLink(const SizesLink&) = delete;
  SizesLink& operator=(const SizesLink&) = delete;

 private:
  friend struct SizesHooks<MemorySpace>;
  BufferAllocator<MemorySpace>* owner_;
  bool linked_ = false;
  std::size_t saved_capacity_ = 0;  // the buffer taken at a saved size (0: none)
};

/// The allocator's hooks (it befriends this class).
template <class MemorySpace>
struct SizesHooks {
  using allocator = BufferAllocator<MemorySpace>;

  /// The label an allocator saves under: its own, or its pool's (without the `[i]` that names
  /// the pool's i-th allocator: which thread gets which allocator changes from run to run).
  /// Empty for the default labels ("kbuf", "kbuf::AllocatorPool"), which name no one.
  static std::string saved_label(const allocator& a) {
    std::string label = a.label_;
    const std::size_t open = label.rfind('[');
    if (a.budget_ != nullptr && open != std::string::npos && open + 2 < label.size() &&
        label.back() == ']' &&
        label.find_first_not_of("0123456789", open + 1) == label.size() - 1) {
      label.erase(open);
    }
    return label == "kbuf" || label == "kbuf::AllocatorPool" ? std::string() : label;
  }

  /// Whether a workspace label is saved (the default "workspace" names no one).
  static bool saved_workspace_label(const std::string& label) {
    return !label.empty() && label != "workspace";
  }

  /// Adds what `node`'s allocator learned to `table`: its high-water mark if it is labelled,
  /// and the needs of its labelled workspaces.
  static void read(const SizesNode& node, SizesTable& table) {
    const allocator& a = *static_cast<const SizesLink<MemorySpace>&>(node).owner_;
    SizesTable mine;
    const std::string label = saved_label(a);
    if (!label.empty() && a.high_water_mark() != 0) {
      mine[SizeKey{SizeKind::allocator, MemorySpace::name(), label}].bytes = a.high_water_mark();
    }
    if (a.learned_ != nullptr) {
      for (const auto& kv : *a.learned_) {
        if (!kv.second.learned || !saved_workspace_label(kv.first)) continue;
        mine[SizeKey{SizeKind::workspace, MemorySpace::name(), kv.first}].needs = kv.second.needs;
      }
    }
    combine_tables(table, mine);
  }

  /// Joins the live list (reads KBUF_SIZES the first time; under the lock).
  static void join_locked(SizesLink<MemorySpace>& link) {
    SizesState& st = sizes_state();
    read_environment_locked(st);
    link.read = &SizesHooks::read;
    st.live.push_back(&link);
    link.linked_ = true;
  }

  /// The entry saved under `key`, copied out; false if there is none (joins the live list
  /// first when `join`, so that what the allocator learns from now on is saved).
  static bool find_saved(allocator& a, const SizeKey& key, SizeEntry& out, bool join) {
    std::lock_guard<std::mutex> lock(sizes_state().mutex);
    if (join && !a.sizes_->linked_) join_locked(*a.sizes_);
    const auto it = sizes_state().loaded.find(key);
    if (it == sizes_state().loaded.end()) return false;
    out = it->second;
    return true;
  }

  /// Says once (per `flag`) that saved sizes could not be had.
  static void say_once(bool SizesState::*flag, const std::string& what) {
    SizesState& st = sizes_state();
    std::lock_guard<std::mutex> lock(st.mutex);
    if (st.*flag) return;
    st.*flag = true;
    say_line(one_line(concat(
        st.env_path.empty() ? std::string("kbuf: saved sizes") : "kbuf: KBUF_SIZES=" + st.env_path,
        ": ", what)));
  }

  /// The allocator's first buffer at its saved high-water mark, when it has one larger than
  /// `asked` (its sizehint's buffer): at most what its limits leave room for, and only if the
  /// memory can be had (else one line on stderr, once per process). True when taken; the
  /// caller takes its usual first buffer otherwise.
  static bool take_saved_buffer(allocator& a, std::size_t asked) noexcept {
    SizeEntry saved;
    try {
      if (!a.sizes_->linked_ || a.passthrough_ ||
          !find_saved(a, SizeKey{SizeKind::allocator, MemorySpace::name(), saved_label(a)}, saved,
                      false)) {
        return false;
      }
      const std::size_t capacity = std::min(buffer_size(saved.bytes), a.largest_buffer());
      if (capacity <= asked || !a.try_charge(capacity)) return false;
      try {
        a.take_buffer(capacity, "kbuf::BufferAllocator");
      } catch (const out_of_memory& e) {
        a.uncharge(capacity);
        say_once(&SizesState::said_buffer,
                 concat("allocator '", a.label_, "' could not take its saved buffer of ", capacity,
                        " bytes (", e.what(), "); it starts from ", asked,
                        " bytes and learns as usual"));
        return false;
      }
      a.sizes_->saved_capacity_ = a.capacity_;  // in place: rounded up to the granule
      return true;
    } catch (...) {
      return false;
    }
  }

  /// `limit(nbytes)` below what the allocator holds: a buffer taken at a saved size, and still
  /// empty, shrinks to the largest buffer the limit allows (saved sizes never pass a limit).
  static void yield_saved_buffer(allocator& a, std::size_t nbytes) {
    SizesLink<MemorySpace>& link = *a.sizes_;
    if (link.saved_capacity_ == 0 || link.saved_capacity_ != a.capacity_ || !a.empty() ||
        a.fallback_held_ != 0 || nbytes >= a.held()) {
      return;
    }
    link.saved_capacity_ = 0;
    try {
      a.resize(buffer_size_floor(nbytes));
    } catch (const out_of_memory&) {  // the limit refuses as it would have
    }
  }

  /// A workspace labelled `label` whose needs this allocator has not learned yet: the needs an
  /// earlier run saved under that label, written to `needs`, when there are some and the slots
  /// and lanes they give for `slots` slots (rounded to `unit`) are sizes a workspace can have.
  /// The allocator joins the live list, so that what it learns is saved. False otherwise: the
  /// workspace starts from the size asked, as without saved sizes.
  static bool saved_needs(allocator& a, const std::string& label, std::size_t slots,
                          std::size_t unit, WorkspaceNeeds& needs) noexcept {
    if (!saved_workspace_label(label) || slots == 0 || a.passthrough_) return false;
    try {
      SizeEntry saved;
      if (!find_saved(a, SizeKey{SizeKind::workspace, MemorySpace::name(), label}, saved, true)) {
        return false;
      }
      const WorkspaceSizes sizes = workspace_sizes(saved.needs, slots, unit);
      // Slots and lanes past what a saved number can be: not the sizes of a real workspace.
      const long double bytes =
          static_cast<long double>(slots) * static_cast<long double>(sizes.slot_bytes) +
          static_cast<long double>(sizes.lanes) * static_cast<long double>(sizes.lane_bytes);
      if (!(bytes < static_cast<long double>(sizes_max_number))) return false;
      needs = saved.needs;
      return true;
    } catch (...) {  // sized from the guess then
      return false;
    }
  }

  /// Whether a workspace of `need` bytes (its layout and the padding that aligns it) sized from
  /// saved needs fits the allocator's buffer now, or once the buffer of an empty allocator is
  /// grown to hold it within its limits (grown here; said once if it cannot be).
  static bool room_for(allocator& a, std::size_t need) noexcept {
    try {
      const std::size_t start = align_up(a.used(), a.alignment_);
      if (start <= a.capacity_ && need <= a.capacity_ - start) return true;
      if (!a.empty()) return false;
      try {
        a.resize(need);
        return true;
      } catch (const out_of_memory& e) {
        say_once(&SizesState::said_workspace,
                 concat("a workspace's saved sizes need ", need, " bytes, which allocator '",
                        a.label_, "' could not take (", e.what(),
                        "); its workspaces start from the sizes asked and learn as usual"));
        return false;
      }
    } catch (...) {
      return false;
    }
  }
};

}  // namespace Impl

}  // namespace kbuf

#endif  // KBUF_IMPL_SIZES_FILE_IMPL_HPP
