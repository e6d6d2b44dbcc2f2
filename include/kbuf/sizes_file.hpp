#ifndef KBUF_SIZES_FILE_HPP
#define KBUF_SIZES_FILE_HPP

/// @file
/// Sizes that outlive the process. A labelled `BufferAllocator` (the allocators of a labelled
/// `AllocatorPool` and the process allocator among them) and a labelled workspace can start
/// from the sizes an earlier run learned under the same label, instead of learning them again
/// through fallbacks and regrowths: set `KBUF_SIZES=FILE` in the environment, or load and save
/// a file with the calls below. The file's format and rules are in docs/api.md ("Sizes that
/// outlive the process"). Saved sizes are a starting point, never a ceiling: learning goes on
/// from them, and a buffer never starts past its allocator's limit.
///
/// With `KBUF_SIZES=FILE` the file is read when the first labelled allocator or workspace is
/// made, and what the process learned is written back at `Kokkos::finalize` (to a temporary
/// file in the same folder, then renamed over FILE, so that no reader sees a partial file and no
/// two writers write the same file). A file that cannot be used (missing, unreadable, damaged,
/// truncated, another format's, another program's) is reported in one line on stderr and the
/// run learns as usual; a file that cannot be written, likewise. MPI programs combine the
/// ranks' sizes with `kbuf::mpi::share_sizes` (kbuf/mpi.hpp).

#include <cstddef>
#include <string>
#include <vector>

namespace kbuf {

/// One label's entry in a sizes file.
struct SavedSize {
  std::string kind;        ///< "allocator" or "workspace"
  std::string space;       ///< the memory space, as `MemorySpace::name()` names it ("Host")
  std::string label;       ///< the allocator's label (a pool's, for its allocators), or the
                           ///< workspace's
  std::size_t bytes = 0;   ///< allocator: its high-water mark; workspace: the largest need of
                           ///< one arena
  std::size_t arenas = 0;  ///< workspace: the arenas its needs were counted over; allocator: 0
};

/// How reading or writing a sizes file went.
enum class SizesFileStatus {
  none,        ///< no file was loaded (`KBUF_SIZES` unset, and no `load_sizes` call)
  ok,          ///< read or written whole
  missing,     ///< the file does not exist (yet): the first run
  unreadable,  ///< the file exists but could not be read (permissions, an I/O error), or is
               ///< not a regular file (a folder, a pipe, a device: refused without reading)
  malformed,   ///< not what kbuf writes: garbage, numbers past 2^48, labels or files longer
               ///< than kbuf writes, duplicate or unknown entries
  truncated,   ///< cut short (no end line, or fewer entries than it counts)
  format,      ///< another version of the file format (older or newer kbuf)
  foreign,     ///< written by another program (its labels are not this program's)
  unwritable   ///< the file could not be written (a read-only folder, a full disk)
};

/// What `load_sizes`, `save_sizes` or `KBUF_SIZES` did with a file.
struct SizesFileReport {
  std::string path;                                ///< the file
  SizesFileStatus status = SizesFileStatus::none;  ///< how it went
  std::string message;           ///< one line saying what went wrong (the line `KBUF_SIZES`
                                 ///< prints on stderr); empty when `status` is ok or none
  std::vector<SavedSize> sizes;  ///< loaded: the starting sizes it gave; saved: what it holds
  /// True when the file was read or written whole.
  [[nodiscard]] bool ok() const noexcept { return status == SizesFileStatus::ok; }
};

/// Reads the sizes file `path` and makes its sizes the starting sizes of the labelled
/// allocators and workspaces made from now on (those made before keep theirs). A file that
/// cannot be used leaves no starting sizes at all: the report says why in `message`, and
/// allocators learn as usual. Prints nothing. Thread-safe. Also reads `KBUF_SIZES` first if
/// nothing read it yet, so that the last load decides.
/// @throws kbuf::logic_error if `path` is empty or holds a zero byte; nothing changes then.
SizesFileReport load_sizes(const std::string& path);

/// Writes what the labelled allocators and workspaces of this process learned to `path`: each
/// live labelled allocator's high-water mark and its labelled workspaces' needs (read now: call
/// it where no other thread uses them), those of the allocators already destroyed, and the
/// loaded entries that no allocator or workspace of this run used. Entries under one label are
/// combined: the largest high-water mark, the needs of all arenas together. Written to a
/// temporary file beside `path`, then renamed over it. A file that cannot be written is said
/// in the report (`unwritable`), not raised. Prints nothing.
/// @throws kbuf::logic_error if `path` is empty or holds a zero byte; nothing is written then.
SizesFileReport save_sizes(const std::string& path);

/// What the last load (`load_sizes`, or `KBUF_SIZES`, which this reads if nothing did yet)
/// gave: status `none` if no file was loaded. Thread-safe.
SizesFileReport loaded_sizes();

/// What `save_sizes` would write now, less the loaded entries it carries over: the sizes this
/// process learned under labels. Reads the live allocators, like `save_sizes`.
std::vector<SavedSize> learned_sizes();

}  // namespace kbuf

#endif  // KBUF_SIZES_FILE_HPP
