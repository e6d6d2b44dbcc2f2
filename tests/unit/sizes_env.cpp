// KBUF_SIZES in a whole process, for check_sizes_env.cmake: a labelled allocator runs a workload
// whose need grows inside each step (a first run falls back and regrows), with a labelled
// workspace on it (a first round from a guess of 0 bytes falls back); a labelled pool's
// allocator and the process allocator run the workload's temporaries too. It prints what they
// needed: "fallbacks F regrows R workspace_fallbacks W" (the allocator and its workspace), then
// "pool and process allocator: fallbacks F regrows R". KBUF_SIZES is read when the first
// labelled allocator is made and written at Kokkos::finalize.
//   kbuf-test-sizes-env                       the run
//   kbuf-test-sizes-env --write-bad KIND FILE writes a sizes file that cannot be used, and exits
//   kbuf-test-sizes-env --unreadable FILE     the run, FILE of mode 0 (and permissions obeyed)
//   kbuf-test-sizes-env --read-only DIR       the run, DIR of mode 0555 (and permissions obeyed)
#include <kbuf/impl/sizes_file_impl.hpp>  // the program name the file records
#include <kbuf/kbuf.hpp>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include <sys/stat.h>

#include "file_permissions.hpp"
#include "sizes_workload.hpp"

namespace {

using space = kbuf::default_memory_space;
using exec = space::execution_space;
using alloc_type = kbuf::BufferAllocator<space>;

// Three steps, each with temporaries of 1 to 24 KiB live at once; `a`'s fallbacks and
// regrowths added to the counts.
void temporaries(alloc_type& a, std::size_t& fallbacks, std::size_t& regrows) {
  for (int step = 0; step < 3; ++step) {
    auto scope = a.scope();
    for (int k = 1; k <= 24; ++k) (void)a.allocate<double*>(128 * k);
  }
  fallbacks += a.statistics().fallbacks;
  regrows += a.statistics().regrows;
}

// A sizes file of this program, with one good entry, as `kind` spoils it.
bool write_bad(const std::string& kind, const std::string& path) {
  const std::string head = "kbuf-sizes 2 \"" + kbuf::Impl::sizes_program_name() + "\"\n";
  const std::string good = head + "allocator \"Host\" \"sizes-env\" 1048576\nend 1\n";
  std::string text;
  if (kind == "truncated") {
    text = good.substr(0, good.find("end"));
  } else if (kind == "foreign") {
    text = "kbuf-sizes 2 \"another-program\"\nallocator \"Host\" \"sizes-env\" 1048576\nend 1\n";
  } else if (kind == "older_format") {
    text = "kbuf-sizes 1\nprogram " + kbuf::Impl::sizes_program_name() +
           "\nallocator Host sizes-env 1048576\nend 1\n";
  } else if (kind == "huge_numbers") {
    text = head + "allocator \"Host\" \"sizes-env\" 1152921504606846976\nend 1\n";
  } else if (kind == "garbage") {
    text = "The quick brown fox\njumps over the lazy dog 12 34\n";
  } else if (kind == "binary") {
    for (int i = 0; i < 4096; ++i) text.push_back(static_cast<char>((i * 7919) & 0xff));
  } else if (kind == "enormous_label") {
    text =
        head + "allocator \"Host\" \"" + std::string(std::size_t{1} << 20, 'x') + "\" 1\nend 1\n";
  } else {
    return false;
  }
  std::ofstream(path, std::ios::binary) << text;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::strcmp(argv[1], "--write-bad") == 0) {
    if (write_bad(argv[2], argv[3])) return 0;
    std::fprintf(stderr, "kbuf-test-sizes-env: unknown kind '%s'\n", argv[2]);
    return 2;
  }
  if (argc == 3 &&
      (std::strcmp(argv[1], "--unreadable") == 0 || std::strcmp(argv[1], "--read-only") == 0)) {
    const bool folder = argv[1][2] == 'r' && argv[1][3] == 'e';
    if (::chmod(argv[2], folder ? 0555 : 0) != 0 || !kbuf_test::obey_file_permissions()) {
      std::fprintf(stderr, "kbuf-test-sizes-env: cannot take permissions away from '%s'\n",
                   argv[2]);
      return 2;
    }
  }
  int kokkos_argc = 1;  // Kokkos sees no options of this program
  Kokkos::ScopeGuard guard(kokkos_argc, argv);
  std::size_t fallbacks = 0, regrows = 0, workspace_fallbacks = 0;
  std::size_t other_fallbacks = 0, other_regrows = 0;
  long long wrong_entries = 0;
  {
    alloc_type a(exec(), 0, alloc_type::default_alignment, "sizes-env");
    const Kokkos::TeamPolicy<exec> policy(a.execution_space_instance(), 256, 1);
    const Kokkos::View<long long*, space> wrong("wrong", 1);
    for (int step = 0; step < 3; ++step) {
      auto scope = a.scope();
      for (int k = 1; k <= 24; ++k) (void)a.allocate<double*>(128 * k);
      auto ws = a.workspace(policy, kbuf::per_team{0}, "sizes-env ws");
      Kokkos::parallel_for("kbuf test: sizes env", policy,
                           kbuf_test::SizesTakes{ws, 100, 2000, wrong});
      const kbuf::WorkspaceReport r = ws.finish();
      if (step == 0) workspace_fallbacks = r.fallbacks;
    }
    fallbacks = a.statistics().fallbacks;
    regrows = a.statistics().regrows;
    Kokkos::deep_copy(wrong_entries, Kokkos::subview(wrong, 0));
  }
  {  // a pool saves under its own label, and the process allocator under its own
    kbuf::AllocatorPool<space> pool(0, alloc_type::default_alignment, "sizes-env pool");
    temporaries(pool.local(), other_fallbacks, other_regrows);
    temporaries(kbuf::process_allocator<space>(), other_fallbacks, other_regrows);
  }
  if (wrong_entries != 0) {
    std::fprintf(stderr, "kbuf-test-sizes-env: %lld workspace entries read back wrong\n",
                 wrong_entries);
    return 1;
  }
  std::printf("fallbacks %zu regrows %zu workspace_fallbacks %zu\n", fallbacks, regrows,
              workspace_fallbacks);
  std::printf("pool and process allocator: fallbacks %zu regrows %zu\n", other_fallbacks,
              other_regrows);
  return 0;
}
