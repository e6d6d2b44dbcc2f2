// The saved sizes are one per process also where a shared library built with hidden visibility
// compiles kbuf's headers (sizes_library/): the library's labelled allocator starts from the
// sizes the program loaded, and what it learned is in what the program saves.
#include <doctest/doctest.h>

#include <kbuf/impl/sizes_file_impl.hpp>  // the program name the file records
#include <kbuf/kbuf.hpp>

#include "sizes_library.hpp"

#include <cstdio>
#include <fstream>
#include <string>

TEST_CASE(
    "a hidden-visibility library's labelled allocator starts from the program's saved "
    "sizes, and the program saves what it learned") {
  char folder[] = "/tmp/kbuf-sizes-shared-XXXXXX";
  REQUIRE(::mkdtemp(folder) != nullptr);
  const std::string path = std::string(folder) + "/sizes";
  std::ofstream(path) << "kbuf-sizes 2 \"" << kbuf::Impl::sizes_program_name() << "\"\nallocator \""
                      << kbuf::default_memory_space::name()
                      << "\" \"sizes-library\" 65536\nend 1\n";
  REQUIRE(kbuf::load_sizes(path).ok());
  CHECK(sizes_library::loaded_here() == 1);
  CHECK(sizes_library::run(200000) == 65536);  // the saved size, loaded by the executable
  const kbuf::SizesFileReport saved = kbuf::save_sizes(path);
  REQUIRE(saved.ok());
  REQUIRE(saved.sizes.size() == 1);
  CHECK(saved.sizes[0].label == "sizes-library");
  CHECK(saved.sizes[0].bytes >= 200000);  // learned inside the library
  std::remove(path.c_str());
}
