// Sizes that outlive the process (kbuf/sizes_file.hpp): the file's text and its parser, every
// kind of file that cannot be used (each loads nothing and says why in one line), allocators,
// pools and workspaces that start from saved sizes (no fallback, no regrowth where the last
// run had them; never past a limit; learning goes on), and saving (through a temporary file; a
// read-only folder is said, not raised). KBUF_SIZES itself, read once per process and saved at
// Kokkos::finalize, is checked by running a program (tests/unit/check_sizes_env.cmake).
#include <doctest/doctest.h>

#include <kbuf/impl/sizes_file_impl.hpp>  // the format itself: parse_sizes, format_sizes
#include <kbuf/sizes_file.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file_permissions.hpp"
#include "sizes_workload.hpp"
#include "test_support.hpp"

namespace {

using host_alloc = kbuf::BufferAllocator<kbuf::default_memory_space>;
using space = kbuf::default_memory_space;
using exec = space::execution_space;
using kbuf::Impl::SizeEntry;
using kbuf::Impl::SizeKey;
using kbuf::Impl::SizeKind;
using kbuf::Impl::SizesTable;

// A fresh folder for one test's files.
std::string fresh_folder() {
  char name[] = "/tmp/kbuf-sizes-XXXXXX";
  const char* made = ::mkdtemp(name);
  REQUIRE(made != nullptr);
  return made;
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
}

std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

bool exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

// The entries of the folder (names).
std::vector<std::string> listing(const std::string& folder) {
  std::vector<std::string> names;
  const std::string cmd = "ls -A '" + folder + "'";
  if (std::FILE* p = ::popen(cmd.c_str(), "r")) {
    char line[4096];
    while (std::fgets(line, sizeof line, p) != nullptr) {
      std::string s(line);
      if (!s.empty() && s.back() == '\n') s.pop_back();
      names.push_back(s);
    }
    ::pclose(p);
  }
  return names;
}

std::string self() {
  return kbuf::Impl::sizes_program_name();
}

// `s` in double quotes, as a sizes file writes a name.
std::string quoted(const std::string& s) {
  std::ostringstream out;
  out << std::quoted(s);
  return out.str();
}

// An entry under `label` in `sp`, its numbers as given (a hostile file's among them).
std::string allocator_entry(const std::string& label, const std::string& bytes,
                            const std::string& sp = space::name()) {
  return "allocator " + quoted(sp) + " " + quoted(label) + " " + bytes;
}
std::string workspace_entry(const std::string& label, const std::string& numbers,
                            const std::string& sp = space::name()) {
  return "workspace " + quoted(sp) + " " + quoted(label) + " " + numbers;
}

// A file holding `entries` (lines), written by `program`, whole.
std::string file_of(const std::vector<std::string>& entries, const std::string& program = self()) {
  std::string t = "kbuf-sizes 2 " + quoted(program) + "\n";
  for (const std::string& e : entries) t += e + "\n";
  return t + "end " + std::to_string(entries.size()) + "\n";
}

host_alloc::execution_space instance() {
  return host_alloc::execution_space();
}

// Loads a good file holding 4096 bytes under the label "warm": an allocator so labelled starts
// from them (shown, so that check_refused's allocator that does not shows the good file gone).
void load_good(const std::string& folder) {
  const std::string good = folder + "/good";
  write_text(good, file_of({allocator_entry("warm", "4096")}));
  REQUIRE(kbuf::load_sizes(good).ok());
  REQUIRE(kbuf::loaded_sizes().sizes.size() == 1);
  host_alloc warm(instance(), 0, host_alloc::default_alignment, "warm");
  REQUIRE(warm.capacity() == 4096);
}

// The one-line message a file that cannot be used leaves, and nothing loaded: not even the
// sizes of the file loaded before it (load_good).
void check_refused(const kbuf::SizesFileReport& r, kbuf::SizesFileStatus status,
                   const std::string& says) {
  CAPTURE(r.message);
  CHECK(r.status == status);
  CHECK(r.sizes.empty());
  CHECK(r.message.find('\n') == std::string::npos);
  CHECK(r.message.find("kbuf: sizes file '" + r.path + "'") == 0);
  CHECK(r.message.find(says) != std::string::npos);
  CHECK(r.message.find("learn their sizes as usual") != std::string::npos);
  CHECK(kbuf::loaded_sizes().sizes.empty());
  CHECK(kbuf::loaded_sizes().status == status);
  host_alloc warm(instance(), 0, host_alloc::default_alignment, "warm");
  CHECK(warm.capacity() == 0);
}

// An entry for the label "warm" of another size than load_good's: a bad file holds it before
// its defect, so that a file loaded in part would show in check_refused's allocator.
std::string warm_entry() {
  return allocator_entry("warm", "8192");
}

// Loads a good file first (so that a refused one visibly leaves nothing), then `text`.
kbuf::SizesFileReport load_after_good(const std::string& folder, const std::string& text) {
  load_good(folder);
  const std::string path = folder + "/sizes";
  write_text(path, text);
  return kbuf::load_sizes(path);
}

// A workload of a labelled allocator: `steps` scopes, each with temporaries of 1, 2, ... `n`
// KiB live at once (the need grows within a scope, so a first run falls back and regrows).
kbuf::Statistics workload(host_alloc& a, int steps, int n) {
  a.reset_peaks();
  for (int s = 0; s < steps; ++s) {
    auto scope = a.scope();
    for (int k = 1; k <= n; ++k) (void)a.allocate<double*>(128 * k);
  }
  return a.statistics();
}

// One round of the workspace labelled `label` on `a` (guess 0 bytes); its report.
kbuf::WorkspaceReport round(host_alloc& a, const std::string& label, long long& wrong) {
  Kokkos::View<long long*, space> w("wrong", 1);
  const Kokkos::TeamPolicy<exec> p(a.execution_space_instance(), 256, 1);
  auto scope = a.scope();
  auto ws = a.workspace(p, kbuf::per_team{0}, label);
  Kokkos::parallel_for("kbuf test: sizes file workspace", p,
                       kbuf_test::SizesTakes{ws, 100, 2000, w});
  const kbuf::WorkspaceReport r = ws.finish();
  Kokkos::deep_copy(wrong, Kokkos::subview(w, 0));
  return r;
}

const kbuf::SavedSize* find(const std::vector<kbuf::SavedSize>& v, const std::string& kind,
                            const std::string& label) {
  for (const kbuf::SavedSize& s : v) {
    if (s.kind == kind && s.label == label) return &s;
  }
  return nullptr;
}
// The pointer points into the vector: a temporary vector would leave it dangling.
const kbuf::SavedSize* find(std::vector<kbuf::SavedSize>&& v, const std::string& kind,
                            const std::string& label) = delete;

}  // namespace

// ---- The text --------------------------------------------------------------------------------

TEST_CASE("sizes file: the text written is read back as the same table, labels of any bytes") {
  SizesTable t;
  t[SizeKey{SizeKind::allocator, "Host", "plain"}].bytes = 1048576;
  t[SizeKey{SizeKind::allocator, "Cuda", "with space % and\nnewline \xc3\xa9"}].bytes = 4096;
  kbuf::Impl::WorkspaceNeeds& n = t[SizeKey{SizeKind::workspace, "Host", "fits"}].needs;
  n.arenas = 4000;
  n.measured_slot = 1024;
  n.measured_above = 8;
  n.measured_lane = 16384;
  n.levels = {{800, 3992}, {16000, 8}};
  const std::string text = kbuf::Impl::format_sizes(t, "prog name");
  CAPTURE(text);
  CHECK(text.find("kbuf-sizes 2 \"prog name\"\n") != std::string::npos);
  CHECK(text.find("workspace \"Host\" \"fits\" 4000 1024 8 16384 2  800 3992  16000 8\n") !=
        std::string::npos);
  CHECK(text.find("\"with space % and\nnewline \xc3\xa9\"") != std::string::npos);
  const kbuf::Impl::ParsedSizes p = kbuf::Impl::parse_sizes(text, "prog name");
  CAPTURE(p.message);
  REQUIRE(p.status == kbuf::SizesFileStatus::ok);
  REQUIRE(p.table.size() == 3);
  CHECK(p.table.at(SizeKey{SizeKind::allocator, "Host", "plain"}).bytes == 1048576);
  CHECK(p.table.at(SizeKey{SizeKind::allocator, "Cuda", "with space % and\nnewline \xc3\xa9"})
            .bytes == 4096);
  const kbuf::Impl::WorkspaceNeeds& m =
      p.table.at(SizeKey{SizeKind::workspace, "Host", "fits"}).needs;
  CHECK(m.arenas == 4000);
  CHECK(m.measured_slot == 1024);
  CHECK(m.measured_above == 8);
  CHECK(m.measured_lane == 16384);
  REQUIRE(m.levels.size() == 2);
  CHECK(m.levels[1].bytes == 16000);
  CHECK(m.levels[1].arenas == 8);
}

TEST_CASE("sizes file: entries under one label combine to the largest need, arenas together") {
  SizeEntry a, b;
  a.bytes = 4096;
  b.bytes = 65536;
  kbuf::Impl::combine_entry(SizeKind::allocator, a, b);
  CHECK(a.bytes == 65536);
  kbuf::Impl::combine_entry(SizeKind::allocator, a, SizeEntry{});
  CHECK(a.bytes == 65536);

  SizeEntry x, y;
  x.needs.arenas = 100;
  x.needs.levels = {{800, 99}, {16000, 1}};
  x.needs.measured_slot = 1024;
  x.needs.measured_above = 1;
  x.needs.measured_lane = 16000;
  y.needs.arenas = 50;
  y.needs.levels = {{800, 45}, {4000, 4}, {32000, 1}};
  y.needs.measured_slot = 2048;
  kbuf::Impl::combine_entry(SizeKind::workspace, x, y);
  CHECK(x.needs.arenas == 150);
  REQUIRE(x.needs.levels.size() == 4);
  CHECK(x.needs.levels[0].arenas == 144);
  CHECK(x.needs.levels[3].bytes == 32000);
  CHECK(x.needs.measured_slot == 0);  // measured at other slot sizes: the levels decide

  // Beyond the levels a file holds, neighbours merge into the larger size (never smaller).
  SizeEntry many, more;
  for (std::size_t i = 0; i < 200; ++i) many.needs.levels.push_back({100 + 2 * i, 1});
  for (std::size_t i = 0; i < 200; ++i) more.needs.levels.push_back({101 + 2 * i, 1});
  kbuf::Impl::combine_entry(SizeKind::workspace, many, more);
  CHECK(many.needs.levels.size() == kbuf::Impl::sizes_max_levels);
  CHECK(many.needs.levels.back().bytes == 499);
  std::size_t total = 0;
  for (const auto& l : many.needs.levels) total += l.arenas;
  CHECK(total == 400);
}

// ---- Files that cannot be used: each loads nothing and says why in one line ------------------

TEST_CASE("sizes file: a missing file loads nothing and says so in one line") {
  const std::string folder = fresh_folder();
  load_good(folder);
  const kbuf::SizesFileReport missing = kbuf::load_sizes(folder + "/never-written");
  check_refused(missing, kbuf::SizesFileStatus::missing, "no such file");
}

TEST_CASE(
    "sizes file: an unreadable file (a folder, a file without read permission) loads "
    "nothing and says so in one line") {
  const std::string folder = fresh_folder();
  load_good(folder);
  check_refused(kbuf::load_sizes(folder), kbuf::SizesFileStatus::unreadable,
                "cannot read it: it is a folder");
  load_good(folder);
  check_refused(kbuf::load_sizes("/dev/null"), kbuf::SizesFileStatus::unreadable,
                "cannot read it: not a regular file");

  load_good(folder);
  const std::string locked = folder + "/locked";
  write_text(locked, file_of({allocator_entry("warm", "8192")}));
  REQUIRE(::chmod(locked.c_str(), 0) == 0);
  REQUIRE(kbuf_test::obey_file_permissions());
  check_refused(kbuf::load_sizes(locked), kbuf::SizesFileStatus::unreadable,
                "cannot open it: Permission denied");
}

TEST_CASE(
    "sizes file: a pipe that no one writes is refused at once, without waiting for a "
    "writer") {
  const std::string folder = fresh_folder();
  const std::string pipe = folder + "/pipe";
  REQUIRE(::mkfifo(pipe.c_str(), 0644) == 0);
  // A reader that opened the pipe would wait for a writer for good: this thread stands in for
  // one (it opens and closes the write end as soon as a reader waits), so that a load that
  // waits ends, with an empty file, and fails the check instead of hanging the test.
  std::atomic<bool> done{false};
  std::thread writer([&] {
    while (!done.load()) {
      const int fd = ::open(pipe.c_str(), O_WRONLY | O_NONBLOCK);  // ENXIO: no reader yet
      if (fd >= 0) {
        ::close(fd);
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  });
  load_good(folder);
  const kbuf::SizesFileReport r = kbuf::load_sizes(pipe);
  done = true;
  writer.join();
  check_refused(r, kbuf::SizesFileStatus::unreadable, "cannot read it: not a regular file");
}

TEST_CASE("sizes file: a truncated file loads nothing and says so in one line") {
  const std::string folder = fresh_folder();
  const std::string whole = file_of({warm_entry(), allocator_entry("b", "8192", "Host")});
  // Cut in the middle of an entry (after its label, inside its label), before the end line, and
  // an end line counting more entries.
  check_refused(load_after_good(folder, whole.substr(0, whole.find("8192\nend"))),
                kbuf::SizesFileStatus::truncated,
                "it ends before the size (the file was cut short)");
  check_refused(load_after_good(folder, whole.substr(0, whole.find("b\" 8192"))),
                kbuf::SizesFileStatus::truncated, "it ends before the label's closing quote");
  check_refused(load_after_good(folder, whole.substr(0, whole.find("end"))),
                kbuf::SizesFileStatus::truncated, "no end line");
  std::string more = whole;
  more.replace(more.find("end 2"), 5, "end 3");
  check_refused(load_after_good(folder, more), kbuf::SizesFileStatus::truncated,
                "line 4: the end line counts 3 entries, the file holds 2");
}

TEST_CASE("sizes file: another program's file (its labels) loads nothing and says so") {
  const std::string folder = fresh_folder();
  REQUIRE(!self().empty());
  check_refused(load_after_good(folder, file_of({allocator_entry("kbuf-tebd", "1048576", "Host")},
                                                "kbuf-batched-fits")),
                kbuf::SizesFileStatus::foreign,
                "written by 'kbuf-batched-fits', not by this program ('" + self() + "')");
}

TEST_CASE("sizes file: an older or newer format loads nothing and says which") {
  const std::string folder = fresh_folder();
  std::string old = file_of({allocator_entry("a", "4096", "Host")});
  old.replace(old.find("kbuf-sizes 2"), 12, "kbuf-sizes 0");
  check_refused(load_after_good(folder, old), kbuf::SizesFileStatus::format,
                "sizes file format 0, written by an older kbuf; this one reads format 2");
  // Format 1, the line-per-entry text of kbuf 0.6: refused as older, replaced when saved.
  check_refused(load_after_good(
                    folder, "kbuf-sizes 1\nprogram " + self() + "\nallocator Host a 4096\nend 1\n"),
                kbuf::SizesFileStatus::format, "line 1: sizes file format 1, written by an older");
  std::string newer = file_of({allocator_entry("a", "4096", "Host")});
  newer.replace(newer.find("kbuf-sizes 2"), 12, "kbuf-sizes 3");
  check_refused(load_after_good(folder, newer), kbuf::SizesFileStatus::format,
                "written by a newer kbuf");
}

TEST_CASE(
    "sizes file: a hostile file (huge numbers, garbage, binary, enormous labels) loads "
    "nothing and says so in one line") {
  const std::string folder = fresh_folder();
  using S = kbuf::SizesFileStatus;
  // Each defect after a good entry (warm_entry): a file is used whole or not at all.
  const auto after_warm = [](const std::vector<std::string>& entries) {
    std::vector<std::string> all{warm_entry()};
    all.insert(all.end(), entries.begin(), entries.end());
    return file_of(all);
  };
  check_refused(
      load_after_good(folder, after_warm({allocator_entry("a", "281474976710657", "Host")})),
      S::malformed, "is not a number from 0 to 2^48");
  check_refused(load_after_good(
                    folder, after_warm({allocator_entry("a", "99999999999999999999999", "Host")})),
                S::malformed, "is not a number from 0 to 2^48");
  check_refused(load_after_good(folder, after_warm({allocator_entry("a", "-5", "Host")})),
                S::malformed, "is not a number");
  check_refused(
      load_after_good(folder, after_warm({workspace_entry("w", "10 0 0 0 2 64 5 32 5", "Host")})),
      S::malformed, "not in increasing order");
  check_refused(
      load_after_good(folder, after_warm({workspace_entry("w", "10 0 0 0 1 64 0", "Host")})),
      S::malformed, "a level of no arenas");
  check_refused(load_after_good(folder, after_warm({allocator_entry("a", "1", "Host"),
                                                    allocator_entry("a", "2", "Host")})),
                S::malformed, "a second 'allocator' entry for 'a'");
  check_refused(load_after_good(folder, after_warm({"buffer Host a 4096"})), S::malformed,
                "is not an entry");
  check_refused(load_after_good(folder, "<html><body>not this</body></html>\n"), S::malformed,
                "not a kbuf sizes file");
  check_refused(load_after_good(folder, ""), S::malformed, "empty");
  std::string binary;
  for (int i = 0; i < 4096; ++i) binary.push_back(static_cast<char>((i * 7919) & 0xff));
  check_refused(load_after_good(folder, binary), S::malformed, "not a kbuf sizes file");
  check_refused(load_after_good(folder, std::string("kbuf-sizes 2 \"\0\xff\xfe", 17)), S::truncated,
                "closing quote");
  check_refused(load_after_good(folder, after_warm({allocator_entry(std::string(5000, 'x'), "1")})),
                S::malformed, "line 3: the label 'xxxx");
  check_refused(load_after_good(folder, after_warm({allocator_entry(std::string(5000, 'x'), "1")})),
                S::malformed, "is longer than 4096 bytes");
  check_refused(load_after_good(folder, std::string(17 << 20, '#')), S::malformed,
                "more than any sizes file kbuf writes");
  check_refused(load_after_good(folder, after_warm({"allocator Host \"a\" 4096"})), S::malformed,
                "the memory space 'Host' is not in quotes");
  check_refused(load_after_good(folder, after_warm({workspace_entry("w", "10 0 0 0 0")})),
                S::malformed, "a workspace of 0 levels (1 to 256)");
  check_refused(load_after_good(folder, after_warm({allocator_entry("a", "4096")}) + "more\n"),
                S::malformed, "text after the end line: 'more'");
}

TEST_CASE("load_sizes and save_sizes refuse an empty path, naming the call, and change nothing") {
  const std::string folder = fresh_folder();
  (void)load_after_good(folder, file_of({allocator_entry("kept", "8192", "Host")}));
  CHECK_THROWS_WITH_AS(kbuf::load_sizes(""),
                       "kbuf::load_sizes(\"\"): the path is empty; name a file", kbuf::logic_error);
  CHECK_THROWS_WITH_AS(kbuf::save_sizes(std::string("a\0b", 3)),
                       doctest::Contains("kbuf::save_sizes(\"a"), kbuf::logic_error);
  const kbuf::SizesFileReport r = kbuf::loaded_sizes();
  CHECK(r.ok());
  REQUIRE(r.sizes.size() == 1);
  CHECK(r.sizes[0].label == "kept");
  CHECK(!exists("a"));
}

// ---- Allocators and workspaces that start from saved sizes ----------------------------------

TEST_CASE(
    "sizes file: a labelled allocator starts from its saved size: the rerun of a "
    "workload makes no fallback and no regrowth") {
  const std::string folder = fresh_folder();
  const std::string path = folder + "/sizes";
  std::size_t first_capacity = 0;
  {
    REQUIRE(kbuf::load_sizes(path).status == kbuf::SizesFileStatus::missing);
    host_alloc a(instance(), 0, host_alloc::default_alignment, "sizes-rerun");
    const kbuf::Statistics s = workload(a, 3, 24);
    CHECK(s.fallbacks > 0);
    CHECK(s.regrows == 1);
    first_capacity = a.capacity();
    const std::vector<kbuf::SavedSize> learned = kbuf::learned_sizes();
    const kbuf::SavedSize* mine = find(learned, "allocator", "sizes-rerun");
    REQUIRE(mine != nullptr);
    CHECK(mine->bytes == a.high_water_mark());
    CHECK(mine->space == space::name());
  }
  // Destroyed: what it learned stays for the save.
  REQUIRE(kbuf::save_sizes(path).ok());
  CHECK(read_text(path).find(allocator_entry("sizes-rerun", "")) != std::string::npos);
  const kbuf::SizesFileReport loaded = kbuf::load_sizes(path);
  REQUIRE(loaded.ok());
  host_alloc b(instance(), 0, host_alloc::default_alignment, "sizes-rerun");
  CHECK(b.capacity() == first_capacity);
  const kbuf::Statistics s = workload(b, 3, 24);
  CHECK(s.fallbacks == 0);
  CHECK(s.regrows == 0);
  // Learning goes on from it: a larger need falls back, then grows the buffer.
  const kbuf::Statistics more = workload(b, 2, 40);
  CHECK(more.fallbacks > 0);
  CHECK(more.regrows == 1);
  CHECK(b.capacity() > first_capacity);
  const std::vector<kbuf::SavedSize> learned = kbuf::learned_sizes();
  const kbuf::SavedSize* now = find(learned, "allocator", "sizes-rerun");
  REQUIRE(now != nullptr);
  CHECK(now->bytes == b.high_water_mark());
}

TEST_CASE(
    "sizes file: an allocator's sizehint above its saved size wins, the saved size is a "
    "starting point only") {
  const std::string folder = fresh_folder();
  const std::string path = folder + "/sizes";
  write_text(path, file_of({allocator_entry("hinted", "8192")}));
  REQUIRE(kbuf::load_sizes(path).ok());
  host_alloc big(instance(), 1 << 20, host_alloc::default_alignment, "hinted");
  CHECK(big.capacity() == kbuf::buffer_size(1 << 20));
  host_alloc small(instance(), 100, host_alloc::default_alignment, "hinted");
  CHECK(small.capacity() == kbuf::buffer_size(8192));
}

TEST_CASE("sizes file: default labels are neither started from saved sizes nor saved") {
  const std::string folder = fresh_folder();
  const std::string path = folder + "/sizes";
  const std::string sp = space::name();
  write_text(path, file_of({allocator_entry("kbuf", "1048576"),
                            allocator_entry("kbuf::AllocatorPool", "1048576"),
                            workspace_entry("workspace", "10 0 0 0 1 100000 10")}));
  REQUIRE(kbuf::load_sizes(path).ok());
  host_alloc a(instance(), 0);
  CHECK(a.capacity() == 0);
  kbuf::AllocatorPool<space> pool;
  CHECK(pool.local().capacity() == 0);
  long long wrong = -1;
  const kbuf::WorkspaceReport r = round(a, "workspace", wrong);
  CHECK(wrong == 0);
  CHECK(r.slot_bytes == 0);  // the guess: nothing saved applies
  (void)workload(a, 1, 4);
  for (const kbuf::SavedSize& s : kbuf::learned_sizes()) {
    CHECK(s.label != "kbuf");
    CHECK(s.label != "kbuf::AllocatorPool");
    CHECK(s.label != "workspace");
  }
}

TEST_CASE(
    "sizes file: a pool's allocators start from and save under the pool's label, and so does "
    "the process allocator") {
  const std::string folder = fresh_folder();
  const std::string path = folder + "/sizes";
  const std::string sp = space::name();
  write_text(path, file_of({allocator_entry("sizes-pool", "65536"),
                            allocator_entry("kbuf::process_allocator", "131072")}));
  REQUIRE(kbuf::load_sizes(path).ok());
  {
    kbuf::AllocatorPool<space> pool(0, host_alloc::default_alignment, "sizes-pool");
    host_alloc& a = pool.local();
    CHECK(a.label() == "sizes-pool[0]");
    CHECK(a.capacity() == 65536);
    CHECK(kbuf::process_allocator<space>().capacity() == 131072);
    auto scope = a.scope();
    (void)a.allocate<unsigned char*>(200000);
  }
  const std::vector<kbuf::SavedSize> learned = kbuf::learned_sizes();
  const kbuf::SavedSize* pooled = find(learned, "allocator", "sizes-pool");
  REQUIRE(pooled != nullptr);
  CHECK(pooled->bytes >= 200000);
  CHECK(find(learned, "allocator", "sizes-pool[0]") == nullptr);
}

TEST_CASE(
    "sizes file: a saved size never passes a limit: a pool's limit caps the first buffer, "
    "a limit set later shrinks it") {
  const std::string folder = fresh_folder();
  const std::string path = folder + "/sizes";
  const std::string sp = space::name();
  write_text(path, file_of({allocator_entry("limited", "1048576"),
                            allocator_entry("limited-pool", "1048576")}));
  REQUIRE(kbuf::load_sizes(path).ok());
  kbuf::AllocatorPool<space> pool(0, host_alloc::default_alignment, "limited-pool");
  pool.limit(100000);
  host_alloc& p = pool.local();
  CHECK(p.capacity() == kbuf::Impl::buffer_size_floor(100000));
  CHECK(pool.held() <= 100000);

  host_alloc a(instance(), 0, host_alloc::default_alignment, "limited");
  CHECK(a.capacity() == 1048576);
  a.limit(70000);
  CHECK(a.limit() == 70000);
  CHECK(a.capacity() == kbuf::Impl::buffer_size_floor(70000));
  CHECK(a.held() <= 70000);
  // A buffer that is not the saved one is not given up: the limit refuses as always.
  host_alloc c(instance(), 1 << 20, host_alloc::default_alignment, "limited");
  CHECK_THROWS_AS(c.limit(70000), kbuf::logic_error);
  CHECK(c.capacity() == 1 << 20);
}

TEST_CASE(
    "sizes file: a saved size no memory holds: the allocator starts from its sizehint and "
    "learns as usual") {
  const std::string folder = fresh_folder();
  const std::string path = folder + "/sizes";
  // 2^47 bytes, 128 TiB: within what a file may say, beyond any host's address space.
  write_text(path, file_of({allocator_entry("vast", "140737488355328")}));
  REQUIRE(kbuf::load_sizes(path).ok());
  host_alloc a(instance(), 4096, host_alloc::default_alignment, "vast");
  CHECK(a.capacity() == 4096);
  const kbuf::Statistics s = workload(a, 2, 8);
  CHECK(s.regrows == 1);
}

TEST_CASE(
    "sizes file: a workspace starts from its saved needs: its first round makes no "
    "fallback") {
  const std::string folder = fresh_folder();
  const std::string path = folder + "/sizes";
  REQUIRE(kbuf::load_sizes(path).status == kbuf::SizesFileStatus::missing);
  std::size_t learned_slot = 0;
  {
    host_alloc a(instance(), 0, host_alloc::default_alignment, "ws-owner");
    long long wrong = -1;
    const kbuf::WorkspaceReport first = round(a, "sizes ws", wrong);
    CHECK(wrong == 0);
    CHECK(first.fallbacks > 0);  // a guess of 0 bytes: every take falls back
    const kbuf::WorkspaceReport second = round(a, "sizes ws", wrong);
    CHECK(second.fallbacks == 0);
    learned_slot = second.next_slot_bytes;
  }
  REQUIRE(kbuf::save_sizes(path).ok());
  CHECK(read_text(path).find(" \"sizes ws\" ") != std::string::npos);
  REQUIRE(kbuf::load_sizes(path).ok());
  // A new allocator, labelled: its saved buffer holds the workspace, which starts learned.
  host_alloc b(instance(), 0, host_alloc::default_alignment, "ws-owner");
  long long wrong = -1;
  const kbuf::WorkspaceReport again = round(b, "sizes ws", wrong);
  CHECK(wrong == 0);
  CHECK(again.fallbacks == 0);
  CHECK(again.complete());
  CHECK(again.slot_bytes == learned_slot);
  CHECK(b.statistics().fallbacks == 0);
  CHECK(b.statistics().regrows == 0);
  // An unlabelled allocator: its empty buffer grows to hold the saved sizes (one regrowth).
  host_alloc c(instance(), 0);
  const kbuf::WorkspaceReport other = round(c, "sizes ws", wrong);
  CHECK(other.fallbacks == 0);
  CHECK(c.statistics().fallbacks == 0);
  CHECK(c.statistics().regrows == 1);
}

TEST_CASE(
    "sizes file: saved workspace sizes no memory holds (2^48 bytes an arena) or past the "
    "allocator's limit are not used: the workspace learns from the guess") {
  const std::string folder = fresh_folder();
  const std::string path = folder + "/sizes";
  const std::string sp = space::name();
  write_text(path, file_of({workspace_entry("huge", "10 0 0 0 1 281474976710656 10"),
                            workspace_entry("capped", "10 0 0 0 1 2000000 10")}));
  REQUIRE(kbuf::load_sizes(path).ok());
  host_alloc a(instance(), 0);
  long long wrong = -1;
  const kbuf::WorkspaceReport huge = round(a, "huge", wrong);
  CHECK(wrong == 0);
  CHECK(huge.slot_bytes == 0);
  a.limit(1 << 20);
  const kbuf::WorkspaceReport capped = round(a, "capped", wrong);
  CHECK(wrong == 0);
  CHECK(capped.slot_bytes == 0);
  CHECK(a.held() <= std::size_t{1} << 20);
}

// ---- Saving -------------------------------------------------------------------------------------

TEST_CASE(
    "sizes file: a save writes through a temporary file, leaves none behind, and carries "
    "loaded entries this run did not use") {
  const std::string folder = fresh_folder();
  const std::string path = folder + "/sizes";
  const std::string sp = space::name();
  write_text(path, file_of({allocator_entry("unused-here", "12288")}));
  REQUIRE(kbuf::load_sizes(path).ok());
  host_alloc a(instance(), 0, host_alloc::default_alignment, "saved-here");
  (void)workload(a, 1, 4);
  const kbuf::SizesFileReport r = kbuf::save_sizes(path);
  REQUIRE(r.ok());
  CHECK(r.message.empty());
  CHECK(find(r.sizes, "allocator", "unused-here") != nullptr);
  CHECK(find(r.sizes, "allocator", "saved-here") != nullptr);
  CHECK(listing(folder) == std::vector<std::string>{"sizes"});
  const kbuf::SizesFileReport back = kbuf::load_sizes(path);
  REQUIRE(back.ok());
  CHECK(find(back.sizes, "allocator", "unused-here")->bytes == 12288);
}

TEST_CASE("sizes file: a save into a read-only folder says so in one line and writes nothing") {
  const std::string folder = fresh_folder();
  const std::string ro = folder + "/read-only";
  REQUIRE_MESSAGE(kbuf_test::make_read_only_folder(ro),
                  "this process can still create files in a folder of mode 0555");
  host_alloc a(instance(), 0, host_alloc::default_alignment, "unsaved");
  (void)workload(a, 1, 4);
  const kbuf::SizesFileReport r = kbuf::save_sizes(ro + "/sizes");
  CAPTURE(r.message);
  CHECK(r.status == kbuf::SizesFileStatus::unwritable);
  CHECK(r.message.find('\n') == std::string::npos);
  CHECK(r.message.find("kbuf: sizes file '" + ro +
                       "/sizes': could not save the sizes (cannot "
                       "create '" +
                       ro + "/sizes.tmp.") == 0);
  CHECK(r.message.find("Permission denied); the run is not affected") != std::string::npos);
  CHECK(listing(ro).empty());
  ::chmod(ro.c_str(), 0755);
}
