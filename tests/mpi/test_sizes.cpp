// One sizes file for all ranks (kbuf/mpi.hpp): load_sizes reads it once, on rank 0, for every
// rank; save_sizes combines the ranks' sizes (each label's largest) and writes one file, once.
// KBUF_SIZES with share_sizes, saved at Kokkos::finalize, runs as a program
// (sizes_env_mpi.cpp, mpi.sizes_env_np2).
#include <doctest/doctest.h>

#include <kbuf/mpi.hpp>

#include "mpi_test_support.hpp"

#include <cstdlib>
#include <fstream>
#include <string>

#include <dirent.h>

namespace {

using kbuf_mpi_test::world_rank;
using space = kbuf::default_memory_space;
using alloc_type = kbuf::BufferAllocator<space>;

// A fresh folder made by rank 0, its name on every rank.
std::string shared_folder() {
  std::string name;
  if (world_rank() == 0) {
    char t[] = "/tmp/kbuf-mpi-sizes-XXXXXX";
    REQUIRE(::mkdtemp(t) != nullptr);
    name = t;
  }
  unsigned long long n = name.size();
  MPI_Bcast(&n, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
  name.resize(n);
  MPI_Bcast(&name[0], static_cast<int>(n), MPI_CHAR, 0, MPI_COMM_WORLD);
  return name;
}

int files_in(const std::string& folder) {
  int n = 0;
  if (DIR* d = ::opendir(folder.c_str())) {
    while (const dirent* e = ::readdir(d)) {
      if (e->d_name[0] != '.') ++n;
    }
    ::closedir(d);
  }
  return n;
}

const kbuf::SavedSize* find(const std::vector<kbuf::SavedSize>& v, const std::string& label) {
  for (const kbuf::SavedSize& s : v) {
    if (s.label == label) return &s;
  }
  return nullptr;
}

}  // namespace

TEST_CASE(
    "save_sizes over ranks writes one file holding each label's largest size and every "
    "rank's own labels") {
  const std::string folder = shared_folder();
  const std::string path = folder + "/sizes";
  const int r = world_rank();
  std::size_t mine = 0;
  {
    alloc_type shared(alloc_type::execution_space(), 0, alloc_type::default_alignment,
                      "mpi-shared");
    alloc_type own(alloc_type::execution_space(), 0, alloc_type::default_alignment,
                   "mpi-rank-" + std::to_string(r));
    auto s1 = shared.scope();
    auto s2 = own.scope();
    (void)shared.allocate<unsigned char*>(65536 * (r + 1));
    (void)own.allocate<unsigned char*>(4096);
    mine = shared.high_water_mark();
  }
  std::size_t largest = 0;
  MPI_Allreduce(&mine, &largest, 1, MPI_UNSIGNED_LONG, MPI_MAX, MPI_COMM_WORLD);
  const kbuf::SizesFileReport report = kbuf::mpi::save_sizes(path, MPI_COMM_WORLD);
  CAPTURE(report.message);
  REQUIRE(report.ok());
  const kbuf::SavedSize* s = find(report.sizes, "mpi-shared");
  REQUIRE(s != nullptr);
  CHECK(s->bytes == largest);
  for (int k = 0; k < kbuf_mpi_test::world_size(); ++k) {
    CHECK(find(report.sizes, "mpi-rank-" + std::to_string(k)) != nullptr);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  CHECK(files_in(folder) == 1);  // the file alone: no rank's temporary file is left
  const kbuf::SizesFileReport back = kbuf::load_sizes(path);
  REQUIRE(back.ok());
  CHECK(find(back.sizes, "mpi-shared")->bytes == largest);
}

TEST_CASE("load_sizes over ranks: every rank starts from rank 0's reading of the file") {
  const std::string folder = shared_folder();
  const std::string path = folder + "/sizes";
  if (world_rank() == 0) {
    std::ofstream(path) << "kbuf-sizes 2 \"" << kbuf::Impl::sizes_program_name()
                        << "\"\nallocator \"" << space::name()
                        << "\" \"mpi-loaded\" 65536\nend 1\n";
  }
  const kbuf::SizesFileReport r = kbuf::mpi::load_sizes(path, MPI_COMM_WORLD);
  CAPTURE(r.message);
  REQUIRE(r.ok());
  alloc_type a(alloc_type::execution_space(), 0, alloc_type::default_alignment, "mpi-loaded");
  CHECK(a.capacity() == 65536);
  // A file only rank 0 could read is every rank's: the others never open it.
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) std::remove(path.c_str());
  const kbuf::SizesFileReport gone = kbuf::mpi::load_sizes(path, MPI_COMM_WORLD);
  CHECK(gone.status == kbuf::SizesFileStatus::missing);
  CHECK(kbuf::loaded_sizes().sizes.empty());
}

TEST_CASE("share_sizes without KBUF_SIZES does nothing, on every rank") {
  REQUIRE(std::getenv("KBUF_SIZES") == nullptr);  // the tests' main unsets it
  const kbuf::SizesFileReport r = kbuf::mpi::share_sizes(MPI_COMM_WORLD);
  CHECK(r.status == kbuf::SizesFileStatus::none);
  CHECK(r.message.empty());
}
